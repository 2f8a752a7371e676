//! One gate per machine: several `rss` processes sharing one cache directory pace each host
//! together, and a later run remembers what an earlier one learned. Proven by what the
//! loopback origin saw: request counts, arrival order, overlap.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::*;

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

/// Runs `rss fetch` with `args` in the cache directory `cache`; the parsed output.
pub async fn fetch_in(cache: &Path, args: &[String]) -> (Option<i32>, Value) {
    let mut cmd = tokio::process::Command::from(rss_std(cache));
    cmd.arg("fetch").args(args).stderr(Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("rss fetch finished")
        .unwrap();
    (out.status.code(), json(&out.stdout))
}

pub fn urls(srv: &TestServer, prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| srv.url(&format!("/{prefix}{i}"))).collect()
}

/// `procs` `rss fetch` processes at once on one cache dir, each fetching `each` feeds of
/// its own on `srv` with `flags` (`--no-cache` always): each one's exit code and output, in
/// the order started.
pub async fn in_processes(
    srv: &TestServer,
    cache: &Path,
    procs: usize,
    each: usize,
    flags: &[&str],
) -> Vec<(Option<i32>, Value)> {
    let runs: Vec<_> = (0..procs)
        .map(|p| {
            let mut args = vec!["--no-cache".to_owned()];
            args.extend(flags.iter().map(|f| (*f).to_owned()));
            args.extend(urls(srv, &format!("p{p}-"), each));
            let cache = cache.to_owned();
            tokio::spawn(async move { fetch_in(&cache, &args).await })
        })
        .collect();
    let mut out = Vec::new();
    for run in runs {
        out.push(run.await.unwrap());
    }
    out
}

pub fn statuses(doc: &Value) -> Vec<String> {
    doc["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["status"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_never_send_to_one_host_at_once() {
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(60))).await;
    let cache = tempfile::tempdir().unwrap();
    for (code, doc) in in_processes(&srv, cache.path(), 3, 4, &[]).await {
        assert_eq!(code, Some(0), "{doc}");
    }
    assert_eq!(srv.count(), 12);
    assert_eq!(
        srv.max_in_flight(),
        1,
        "two processes sent to the host at once"
    );
    let mut hits = srv.hits();
    hits.sort_by_key(|h| h.arrived);
    for pair in hits.windows(2) {
        assert!(pair[1].arrived >= pair[0].finished.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_host_with_host_state_off_and_overlap() {
    // The control: without shared state, separate processes do send at once.
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300))).await;
    let cache = tempfile::tempdir().unwrap();
    in_processes(&srv, cache.path(), 2, 3, &["--no-host-state"]).await;
    assert_eq!(srv.count(), 6);
    assert_eq!(srv.max_in_flight(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cooldown_learned_in_one_run_stops_the_next_run_from_sending() {
    let srv = TestServer::start(|_| Reply::status(429).header("Retry-After", "40")).await;
    let cache = tempfile::tempdir().unwrap();
    let args = |path: &str| {
        vec![
            "--no-cache".to_owned(),
            "--max-gate-wait".to_owned(),
            "10".to_owned(),
            srv.url(path),
        ]
    };
    let (code, doc) = fetch_in(cache.path(), &args("/a")).await;
    assert_eq!(code, Some(4));
    assert_eq!(doc["feeds"][0]["error"]["code"], "RATE_LIMITED");
    assert_eq!(srv.count(), 1);

    let (code, doc) = fetch_in(cache.path(), &args("/b")).await;
    assert_eq!(code, Some(4));
    let err = &doc["feeds"][0]["error"];
    assert_eq!(err["code"], "RATE_LIMITED");
    let wait = err["details"]["retry_after_seconds"].as_u64().unwrap();
    assert!((20..=40).contains(&wait), "{wait}");
    assert_eq!(doc["feeds"][0]["attempts"], 0);
    // The second run sent nothing: it knew the host's window.
    assert_eq!(srv.count(), 1);

    // `rss hosts` shows the learned state; clearing it lets the next run try again.
    let out = rss_std(cache.path()).arg("hosts").output().unwrap();
    let hosts = json(&out.stdout);
    let host = &hosts["hosts"][0];
    assert_eq!(host["host"], format!("127.0.0.1:{}", srv.addr.port()));
    assert_eq!(host["last_status"], 429);
    assert_eq!(host["depth"], 1);
    assert!(host["cooling_down_until"].is_string());
    let cleared = rss_std(cache.path())
        .args(["cache", "clear"])
        .output()
        .unwrap();
    assert!(cleared.status.success());
    let out = rss_std(cache.path()).arg("hosts").output().unwrap();
    assert_eq!(json(&out.stdout)["hosts"].as_array().unwrap().len(), 1);
    let out = rss_std(cache.path())
        .args(["hosts", "clear", &format!("127.0.0.1:{}", srv.addr.port())])
        .output()
        .unwrap();
    assert_eq!(json(&out.stdout)["removed"], 1);
    let (_, doc) = fetch_in(cache.path(), &args("/c")).await;
    assert_eq!(doc["feeds"][0]["attempts"], 1);
    assert_eq!(srv.count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_run_waits_out_a_short_retry_after_and_then_succeeds() {
    let srv = TestServer::start(|req| {
        if req.nth_overall == 1 {
            Reply::status(429).header("Retry-After", "2")
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    // One attempt only: the first run fails fast (budget 1 s), the second waits.
    let (_, doc) = fetch_in(
        cache.path(),
        &[
            "--no-cache".into(),
            "--max-gate-wait".into(),
            "1".into(),
            srv.url("/a"),
        ],
    )
    .await;
    assert_eq!(doc["feeds"][0]["error"]["code"], "RATE_LIMITED");
    let (code, doc) = fetch_in(cache.path(), &["--no-cache".into(), srv.url("/b")]).await;
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["feeds"][0]["attempts"], 1);
    let hits = srv.hits();
    assert_eq!(hits.len(), 2);
    let gap = hits[1].arrived.duration_since(hits[0].finished.unwrap());
    assert!(gap >= Duration::from_secs(2), "{gap:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_host_state_off_the_next_run_sends_again() {
    let srv = TestServer::start(|_| Reply::status(429).header("Retry-After", "40")).await;
    let cache = tempfile::tempdir().unwrap();
    for path in ["/a", "/b"] {
        let args = vec![
            "--no-cache".to_owned(),
            "--no-host-state".to_owned(),
            "--max-gate-wait".to_owned(),
            "5".to_owned(),
            srv.url(path),
        ];
        fetch_in(cache.path(), &args).await;
    }
    assert_eq!(srv.count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_while_sending_frees_the_host_at_once() {
    killed_sender_frees_the_host(None).await;
}

/// A process killed with SIGKILL mid-send frees the host for the next one within seconds:
/// through the kernel's release of its lock (one cache dir, `store` `None`), or through
/// the lapse of its Redis lease (separate cache dirs, `store` the Redis URL).
pub async fn killed_sender_frees_the_host(store: Option<&str>) {
    let srv = slow_and_fast_host().await;
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let second = if store.is_some() { &second } else { &first };
    let mut holder = rss_std(first.path());
    if let Some(url) = store {
        holder.env("RSS_GATE_STORE", url);
    }
    let mut holder = holder
        .args(["fetch", "--no-cache", &srv.url("/slow")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the first process sends", || srv.count() == 1).await;
    // SIGKILL: no cleanup runs; only the kernel (or the lease's expiry) can free the host.
    holder.kill().unwrap();
    holder.wait().unwrap();
    let started = Instant::now();
    let mut cmd = tokio::process::Command::from(rss_std(second.path()));
    if let Some(url) = store {
        cmd.env("RSS_GATE_STORE", url);
    }
    cmd.args([
        "fetch",
        "--no-cache",
        "--max-gate-wait",
        "60",
        &srv.url("/fast"),
    ])
    .stderr(Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the second process finished")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", json(&out.stdout));
    // Held, the host would stay taken for the whole 60 s budget.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(srv.hits_for("/fast").len(), 1);
}

fn state_files(cache: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(cache.join("hosts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_state_entries_are_ignored_with_a_warning_or_capped() {
    let srv = TestServer::start(|req| {
        if req.nth_overall == 1 {
            Reply::status(429).header("Retry-After", "1")
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let (code, _) = fetch_in(cache.path(), &["--no-cache".into(), srv.url("/a")]).await;
    assert_eq!(code, Some(0));
    let files = state_files(cache.path());
    assert_eq!(files.len(), 1);
    let good = std::fs::read_to_string(&files[0]).unwrap();

    for damaged in [
        "not json at all".to_owned(),
        good[..good.len() / 2].to_owned(),
        String::new(),
    ] {
        std::fs::write(&files[0], &damaged).unwrap();
        let (code, doc) = fetch_in(cache.path(), &["--no-cache".into(), srv.url("/b")]).await;
        assert_eq!(code, Some(0), "{damaged:?}: {doc}");
        let warned = doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "HOST_STATE_CORRUPT");
        assert!(warned, "{damaged:?}: {doc}");
    }

    // A cooldown written far in the future (clock skew, damage) is capped at
    // RSS_MAX_COOLDOWN_SECS when read.
    let mut state: Value = serde_json::from_str(&good).unwrap();
    state["next_allowed_ms"] = Value::from(32_503_680_000_000u64);
    state["warm_until_ms"] = Value::from(32_503_680_000_000u64);
    state["updated_ms"] = Value::from(32_503_680_000_000u64);
    std::fs::write(&files[0], state.to_string()).unwrap();
    let started = Instant::now();
    let out = rss_std(cache.path())
        .env("RSS_MAX_COOLDOWN_SECS", "2")
        .args(["fetch", "--no-cache", &srv.url("/c")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unwritable_host_store_leaves_pacing_to_the_process_with_a_warning() {
    let srv = TestServer::start(|_| Reply::xml(FEED)).await;
    let cache = tempfile::tempdir().unwrap();
    // A file where the store's directory should be: it cannot be created or written.
    std::fs::write(cache.path().join("hosts"), b"in the way").unwrap();
    let (code, doc) = fetch_in(cache.path(), &["--no-cache".into(), srv.url("/a")]).await;
    assert_eq!(code, Some(0));
    assert_eq!(doc["feeds"][0]["status"], "ok");
    let w = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "GATE_STORE_UNAVAILABLE")
        .unwrap_or_else(|| panic!("{doc}"));
    assert!(w["message"].as_str().unwrap().contains("not shared"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_a_one_per_second_host_provoke_one_refusal() {
    // The host allows one request a second and answers 429 without Retry-After beyond it.
    let last = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let l = last.clone();
    let srv = TestServer::start(move |req| {
        let mut last = l.lock().unwrap();
        let ok = last.is_none_or(|t| req.arrived.duration_since(t) >= Duration::from_secs(1));
        if ok {
            *last = Some(req.arrived);
            Reply::xml(FEED)
        } else {
            Reply::status(429)
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let docs: Vec<Value> = in_processes(&srv, cache.path(), 3, 3, &[])
        .await
        .into_iter()
        .map(|(_, doc)| doc)
        .collect();
    for doc in &docs {
        assert!(statuses(doc).iter().all(|s| s == "ok"), "{doc}");
    }
    let refusals = srv.hits().iter().filter(|h| h.status == 429).count();
    assert!(refusals <= 1, "{refusals} refusals");
    assert_eq!(srv.count(), 9 + refusals);
    assert_eq!(srv.max_in_flight(), 1);
}
