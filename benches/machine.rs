//! One gate per machine: several `rss` processes against one simulated throttling host, run
//! as users run them, with shared host state (the default) and with `--no-host-state`, side
//! by side. Prints, per scenario and mode: feeds ok, refusals, self-inflicted refusals,
//! requests, and wall time against the host's allowance. Asserts nothing.
//!
//! Run: `cargo bench --bench machine` (optionally a scenario name: `three`, `mcp`,
//! `sequential`, `happy`).

mod origin;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use origin::rss_bin::rss_tokio;
use origin::{Policy, RetryAfter, TestServer, host, self_inflicted};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const MODES: [(&str, bool); 2] = [("shared state", true), ("--no-host-state", false)];

fn rss_command(cache: &Path, shared: bool) -> tokio::process::Command {
    let mut cmd = rss_tokio();
    cmd.env("RSS_CACHE_DIR", cache)
        .env("RSS_HOST_STATE", if shared { "on" } else { "off" })
        .stderr(Stdio::null());
    cmd
}

/// Runs `rss fetch --no-cache --content none URLS…`; how many feeds came back ok.
async fn fetch(cache: &Path, shared: bool, urls: Vec<String>) -> usize {
    let mut cmd = rss_command(cache, shared);
    cmd.args(["fetch", "--no-cache", "--content", "none", "-q"])
        .args(urls);
    let out = cmd.output().await.expect("run rss");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("rss printed JSON");
    doc["feeds"]
        .as_array()
        .map_or(0, |f| f.iter().filter(|x| x["status"] == "ok").count())
}

/// One scenario's run: what it is, how it went, what the host allows.
struct Run<'a> {
    name: &'a str,
    mode: &'a str,
    ok: usize,
    total: usize,
    retry_after: Option<Duration>,
    wall: Duration,
    allowance: Duration,
}

fn line(host: &TestServer, r: Run<'_>) {
    let hits = host.hits();
    let refusals = hits
        .iter()
        .filter(|h| matches!(h.status, 429 | 403))
        .count();
    println!(
        "{:<34} {:<16} ok {:>2}/{:<2} refusals {refusals:>2} self-inflicted {:>2} requests {:>3} wall {:>6.2}s allowance {:>5.1}s ratio {:.2}x",
        r.name,
        r.mode,
        r.ok,
        r.total,
        self_inflicted(host, r.retry_after),
        hits.len(),
        r.wall.as_secs_f64(),
        r.allowance.as_secs_f64(),
        r.wall.as_secs_f64() / r.allowance.as_secs_f64()
    );
}

/// Three `rss fetch` processes started together, one cache dir, 8 feeds each, on a host
/// allowing 1 request/s (429 without `Retry-After` beyond that).
async fn three_processes() {
    for (mode, shared) in MODES {
        let srv = host(Policy::strict(Duration::from_secs(1), RetryAfter::None)).await;
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let runs: Vec<_> = (0..3)
            .map(|p| {
                let urls: Vec<String> = (0..8).map(|i| srv.url(&format!("/p{p}-{i}"))).collect();
                let cache = dir.path().to_owned();
                tokio::spawn(async move { fetch(&cache, shared, urls).await })
            })
            .collect();
        let mut ok = 0;
        for r in runs {
            ok += r.await.unwrap();
        }
        line(
            &srv,
            Run {
                name: "3 processes x 8 feeds, 1 req/s",
                mode,
                ok,
                total: 24,
                retry_after: None,
                wall: started.elapsed(),
                allowance: Duration::from_secs(23),
            },
        );
    }
    println!("  target (shared): 24/24, <= 1 refusal, 0 self-inflicted, ratio <= 1.3");
}

async fn mcp_session(
    cache: &Path,
    shared: bool,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut cmd = rss_command(cache, shared);
    cmd.arg("mcp");
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rss mcp");
    ().serve(transport).await.expect("initialize")
}

/// Two `rss mcp` servers (two agent clients, one cache dir), each with 5 concurrent
/// `fetch_feed` calls to a host allowing 1 request/s.
async fn two_mcp_servers() {
    for (mode, shared) in MODES {
        let srv = host(Policy::strict(Duration::from_secs(1), RetryAfter::None)).await;
        let dir = tempfile::tempdir().unwrap();
        let a = mcp_session(dir.path(), shared).await;
        let b = mcp_session(dir.path(), shared).await;
        let started = Instant::now();
        let calls = [&a, &b].into_iter().enumerate().flat_map(|(s, client)| {
            let srv = &srv;
            (0..5).map(move |i| {
                let args = json!({"url": srv.url(&format!("/s{s}-{i}")), "content_format": "none", "cache_policy": "no-cache"});
                client.call_tool(
                    CallToolRequestParams::new("fetch_feed")
                        .with_arguments(args.as_object().unwrap().clone()),
                )
            })
        });
        let results = futures::future::join_all(calls).await;
        let wall = started.elapsed();
        let ok = results
            .iter()
            .filter(|r| {
                r.as_ref().is_ok_and(|r| {
                    r.is_error != Some(true)
                        && r.structured_content
                            .as_ref()
                            .is_some_and(|v| v["feeds"][0]["status"] == "ok")
                })
            })
            .count();
        line(
            &srv,
            Run {
                name: "2 mcp servers x 5 calls, 1 req/s",
                mode,
                ok,
                total: 10,
                retry_after: None,
                wall,
                allowance: Duration::from_secs(9),
            },
        );
        let _ = a.cancel().await;
        let _ = b.cancel().await;
    }
    println!("  target (shared): 10/10, <= 1 refusal, 0 self-inflicted, ratio <= 1.3");
}

/// Three `rss fetch` runs one after another (3, 2, 2 feeds) on a host allowing 1 request
/// per 5 s that answers 429 with `Retry-After: 5`.
async fn sequential_runs() {
    for (mode, shared) in MODES {
        let srv = host(Policy::strict(
            Duration::from_secs(5),
            RetryAfter::Seconds(5),
        ))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let mut ok = 0;
        for (run, n) in [3, 2, 2].into_iter().enumerate() {
            let urls: Vec<String> = (0..n).map(|i| srv.url(&format!("/r{run}-{i}"))).collect();
            ok += fetch(dir.path(), shared, urls).await;
        }
        line(
            &srv,
            Run {
                name: "3 runs in a row (3,2,2), 1 per 5 s",
                mode,
                ok,
                total: 7,
                retry_after: Some(Duration::from_secs(5)),
                wall: started.elapsed(),
                allowance: Duration::from_secs(30),
            },
        );
    }
    println!("  target (shared): 7/7, only the very first refusal, 0 self-inflicted");
}

/// 100 hosts that never throttle, one feed each: what shared state costs on the happy
/// path (best of 3 runs each, interleaved).
async fn happy_path() {
    let hosts: Vec<TestServer> =
        futures::future::join_all((0..100).map(|_| host(Policy::lenient(50)))).await;
    let urls: Vec<String> = hosts.iter().map(|h| h.url("/h")).collect();
    let mut best = [Duration::MAX; 2];
    for _ in 0..3 {
        for (k, (_, shared)) in MODES.into_iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let started = Instant::now();
            let ok = fetch(dir.path(), shared, urls.clone()).await;
            assert_eq!(ok, 100);
            best[k] = best[k].min(started.elapsed());
        }
    }
    println!(
        "happy path: 100 hosts, 50 ms each      shared state {:.3}s, --no-host-state {:.3}s: shared state adds {:+.1}% (target <= 5%)",
        best[0].as_secs_f64(),
        best[1].as_secs_f64(),
        (best[0].as_secs_f64() / best[1].as_secs_f64() - 1.0) * 100.0
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let run = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    if run("three") {
        three_processes().await;
    }
    if run("mcp") {
        two_mcp_servers().await;
    }
    if run("sequential") {
        sequential_runs().await;
    }
    if run("happy") {
        happy_path().await;
    }
}
