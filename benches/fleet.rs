//! A fleet behind one address: three `rss fetch` processes with separate cache directories
//! (as on three machines), 8 feeds each, on a host allowing 1 request/s (429 without
//! `Retry-After` beyond that), with host state in one Redis and without it (each its own
//! file store), side by side; and what Redis costs on the happy path (100 hosts, no
//! throttling) against the file store. Starts its own `redis-server` (from PATH) on a free
//! loopback port. Prints figures; asserts nothing.
//!
//! Run: `cargo bench --bench fleet`

mod origin;

use std::process::Stdio;
use std::time::{Duration, Instant};

use origin::redis::{OwnRedis, free_port};
use origin::rss_bin::rss_tokio;
use origin::{Policy, RetryAfter, TestServer, host, self_inflicted};
use serde_json::Value;

/// Runs `rss fetch` in a fresh cache dir, with `store` as the gate store if any; feeds ok.
async fn fetch(store: Option<&str>, urls: Vec<String>) -> usize {
    let cache = tempfile::tempdir().expect("temp dir");
    let mut cmd = rss_tokio();
    if let Some(s) = store {
        cmd.env("RSS_GATE_STORE", s);
    }
    cmd.env("RSS_CACHE_DIR", cache.path())
        .args(["fetch", "--no-cache", "--content", "none", "-q"])
        .args(urls)
        .stderr(Stdio::null());
    let out = cmd.output().await.expect("run rss");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("rss printed JSON");
    doc["feeds"]
        .as_array()
        .map_or(0, |f| f.iter().filter(|x| x["status"] == "ok").count())
}

async fn three_machines(store: Option<&str>, mode: &str) {
    let srv: TestServer = host(Policy::strict(Duration::from_secs(1), RetryAfter::None)).await;
    let started = Instant::now();
    let runs: Vec<_> = (0..3)
        .map(|p| {
            let urls: Vec<String> = (0..8).map(|i| srv.url(&format!("/p{p}-{i}"))).collect();
            let store = store.map(str::to_owned);
            tokio::spawn(async move { fetch(store.as_deref(), urls).await })
        })
        .collect();
    let mut ok = 0;
    for r in runs {
        ok += r.await.unwrap();
    }
    let wall = started.elapsed();
    let hits = srv.hits();
    let refusals = hits.iter().filter(|h| h.status == 429).count();
    println!(
        "3 machines x 8 feeds, 1 req/s   {mode:<12} ok {ok:>2}/24 refusals {refusals:>2} self-inflicted {:>2} requests {:>3} wall {:>6.2}s allowance 23.0s ratio {:.2}x",
        self_inflicted(&srv, None),
        hits.len(),
        wall.as_secs_f64(),
        wall.as_secs_f64() / 23.0
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let server = OwnRedis::start("redis-server", free_port());
    let url = server.url();
    three_machines(Some(&url), "redis").await;
    three_machines(None, "file stores").await;
    println!("  target (redis): 24/24, <= 1 refusal, 0 self-inflicted, ratio <= 1.3");

    let hosts: Vec<TestServer> =
        futures::future::join_all((0..100).map(|_| host(Policy::lenient(50)))).await;
    let urls: Vec<String> = hosts.iter().map(|h| h.url("/h")).collect();
    let mut best = [Duration::MAX; 2];
    for _ in 0..3 {
        for (k, store) in [Some(url.as_str()), None].into_iter().enumerate() {
            let started = Instant::now();
            let ok = fetch(store, urls.clone()).await;
            assert_eq!(ok, 100);
            best[k] = best[k].min(started.elapsed());
        }
    }
    println!(
        "happy path: 100 hosts, 50 ms    redis {:.3}s, file store {:.3}s: {:+.1} ms per fetch",
        best[0].as_secs_f64(),
        best[1].as_secs_f64(),
        (best[0].as_secs_f64() - best[1].as_secs_f64()) * 1e3 / 100.0
    );
    drop(server);
}
