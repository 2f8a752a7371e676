//! Issue 19: the gate keeps its word across processes, and the guards have no side doors.
//! Every claim is proven at a loopback origin: what arrived, when, and what overlapped.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::*;
use crate::hosts::fetch_in;
use crate::mcp::{call, payload as structured, spawn_in};

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

fn codes(doc: &Value) -> Vec<String> {
    doc["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .map(|w| w["code"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A `fetch_feed` call on `server`, running on its own.
fn spawn_call(
    server: &Arc<crate::mcp::Server>,
    args: Value,
) -> tokio::task::JoinHandle<rmcp::model::CallToolResult> {
    let server = server.clone();
    tokio::spawn(async move { call(&server, "fetch_feed", args).await })
}

/// Files in `dir` other than the store's probe file.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != ".probe.lock")
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_a_call_waiting_for_its_global_slot_holds_no_hosts_shared_slot() {
    let x = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_secs(4))).await;
    let y = TestServer::start(|_| Reply::xml(FEED)).await;
    let cache = tempfile::tempdir().unwrap();
    // A: an MCP server with one send in flight at a time, busy with a slow feed on X.
    let a = Arc::new(spawn_in(cache.path(), &["--concurrency", "1"], &[]).await);
    let slow = spawn_call(
        &a,
        json!({"url": x.url("/slow"), "cache_policy": "no-cache"}),
    );
    wait_until("the slow send reached X", || x.count() == 1).await;
    // ...and a call to Y queued behind it for the one global slot.
    let queued = spawn_call(&a, json!({"url": y.url("/a"), "cache_policy": "no-cache"}));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // B, another process on the same cache dir, fetches Y: Y has nothing in flight.
    let started = Instant::now();
    let args = ["--no-cache", "--max-gate-wait", "2", &y.url("/b")].map(String::from);
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["feeds"][0]["status"], "ok");
    assert!(
        doc["feeds"][0]["gate_wait_ms"].as_u64().unwrap() < 1000,
        "{doc}"
    );
    // B was not held by A's wait: its request arrived while X's was still on the wire.
    let b_hit = y.hits_for("/b");
    assert_eq!(b_hit.len(), 1);
    assert!(x.hits()[0].finished.is_none() || b_hit[0].arrived < x.hits()[0].finished.unwrap());
    assert!(started.elapsed() < Duration::from_secs(3));
    let slow = slow.await.unwrap();
    assert_eq!(structured(&slow)["feeds"][0]["status"], "ok");
    let queued = queued.await.unwrap();
    assert_eq!(structured(&queued)["feeds"][0]["status"], "ok");
    assert_eq!(y.max_in_flight(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_a_send_slot_busy_in_another_process_is_waited_for_and_counted() {
    let y = TestServer::start(|req| {
        let d = if req.path == "/slow" { 4000 } else { 0 };
        Reply::xml(FEED).delay(Duration::from_millis(d))
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let dir = cache.path().to_owned();
    let slow_url = y.url("/slow");
    let a = tokio::spawn(async move { fetch_in(&dir, &["--no-cache".into(), slow_url]).await });
    wait_until("the slow send reached Y", || y.count() == 1).await;
    // A host that never refused is never RATE_LIMITED, however short the budget.
    let args = ["--no-cache", "--max-gate-wait", "1", &y.url("/b")].map(String::from);
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    let feed = &doc["feeds"][0];
    assert_eq!(feed["status"], "ok", "{doc}");
    let waited = feed["gate_wait_ms"].as_u64().unwrap();
    assert!(
        waited >= 2000,
        "the wait for the other process shows: {waited} ms"
    );
    let (code, _) = a.await.unwrap();
    assert_eq!(code, Some(0));
    assert_eq!(y.max_in_flight(), 1, "the two processes never sent at once");
    let hits = y.hits();
    assert!(hits[1].arrived >= hits[0].finished.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_hosts_clear_reaches_a_running_server() {
    let refuse = Arc::new(AtomicUsize::new(1));
    let r = refuse.clone();
    let srv = TestServer::start(move |_| {
        if r.load(Ordering::SeqCst) == 1 {
            Reply::status(429).header("Retry-After", "30")
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let server = spawn_in(cache.path(), &[], &[("RSS_MAX_GATE_WAIT_SECS", "5")]).await;
    let fetch = |path: &str| json!({"urls": [srv.url(path)], "cache_policy": "no-cache"});
    let first = structured(&call(&server, "fetch_feed", fetch("/a")).await);
    assert_eq!(first["feeds"][0]["error"]["code"], "RATE_LIMITED");
    assert_eq!(srv.count(), 1);
    let second = structured(&call(&server, "fetch_feed", fetch("/b")).await);
    assert_eq!(second["feeds"][0]["error"]["code"], "RATE_LIMITED");
    assert_eq!(srv.count(), 1, "the server knows the host's window");
    refuse.store(0, Ordering::SeqCst);
    let out = rss_std(cache.path())
        .args(["hosts", "clear"])
        .output()
        .unwrap();
    assert_eq!(json(&out.stdout)["removed"], 1);
    let third = structured(&call(&server, "fetch_feed", fetch("/c")).await);
    assert_eq!(third["feeds"][0]["status"], "ok", "{third}");
    assert_eq!(srv.count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_no_lock_file_outlives_its_use() {
    // Twenty hosts that refuse the connection.
    let mut urls = Vec::new();
    for i in 0..20 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        urls.push(format!("http://{}/{i}", l.local_addr().unwrap()));
    }
    let cache = tempfile::tempdir().unwrap();
    let mut args = vec!["--no-cache".to_owned()];
    args.extend(urls);
    let (code, _) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(4));
    let hosts = cache.path().join("hosts");
    // What stays is send-slot files of a fixed set (4,096 buckets), nothing per host.
    let left = files_in(&hosts);
    assert!(left.len() <= 20, "{left:?}");
    assert!(left.iter().all(|f| f.starts_with("send-")), "{left:?}");
    // Nobody holds them: `rss hosts clear` removes them, and one left by a killed process...
    let out = rss_std(cache.path())
        .args(["hosts", "clear"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(files_in(&hosts), Vec::<String>::new());
    std::fs::write(hosts.join("dead.test_80-00000000.send.0.lock"), b"").unwrap();
    let out = rss_std(cache.path())
        .args(["hosts", "clear"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(files_in(&hosts), Vec::<String>::new());
    // ...and with `rss cache clear`.
    std::fs::write(hosts.join("dead.test_80-00000000.state.lock"), b"").unwrap();
    let out = rss_std(cache.path())
        .args(["cache", "clear"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(files_in(&hosts), Vec::<String>::new());
    assert_eq!(files_in(&cache.path().join("locks")), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_rss_hosts_shows_what_is_enforced_and_when_it_lapses() {
    // The first request is admitted, the second (sent at once after it) refused without
    // Retry-After: the host teaches a floor, and the retry a spacing that works.
    let srv = TestServer::start(|req| {
        if req.nth_overall == 2 {
            Reply::status(429)
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let args = ["--no-cache", &srv.url("/a"), &srv.url("/b")].map(String::from);
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    let out = rss_std(cache.path()).arg("hosts").output().unwrap();
    let hosts = json(&out.stdout);
    let h = &hosts["hosts"][0];
    assert_eq!(h["host"], format!("127.0.0.1:{}", srv.addr.port()));
    assert!(h["floor_ms"].as_u64().is_some(), "{h}");
    // The retry went at the ladder's first rung after the admitted send, and was admitted.
    assert!(h["spacing_ms"].as_u64().unwrap() >= 2_000, "{h}");
    assert_eq!(h["probe_after"], 11, "{h}");
    let floor_until = h["floor_until"].as_str().unwrap();
    let spacing_until = h["spacing_until"].as_str().unwrap();
    let warm_until = h["warm_until"].as_str().unwrap();
    // The spacing lives a day after the last refusal, the floor an hour, the warm window
    // two minutes.
    assert!(
        spacing_until > floor_until && floor_until > warm_until,
        "{h}"
    );
    assert_eq!(h["lapses_at"].as_str().unwrap(), spacing_until);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_the_guard_trusts_a_proxy_named_by_host_name() {
    // A loopback "egress proxy" reached by the name `localhost`: it gets the absolute URL.
    let proxy = TestServer::start(|req| {
        if req.path.starts_with("http://feed.invalid/") {
            Reply::xml(FEED)
        } else {
            Reply::status(400)
        }
    })
    .await;
    let proxy_url = format!("http://localhost:{}", proxy.addr.port());
    let out = rss_cmd()
        .env("HTTP_PROXY", &proxy_url)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .args([
            "fetch",
            "--no-cache",
            "--deny-private-networks",
            "http://feed.invalid/feed.xml",
        ])
        .output()
        .unwrap();
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(proxy.hits()[0].path, "http://feed.invalid/feed.xml");
    // The feed URL's own IP literal is still checked, before anything is sent.
    let out = rss_cmd()
        .env("HTTP_PROXY", &proxy_url)
        .args([
            "fetch",
            "--no-cache",
            "--deny-private-networks",
            "http://10.1.2.3/feed.xml",
        ])
        .output()
        .unwrap();
    assert_eq!(
        json(&out.stdout)["feeds"][0]["error"]["code"],
        "INVALID_URL"
    );
    assert_eq!(proxy.count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_addresses_that_carry_or_are_private_ones_are_refused_before_any_connection() {
    let srv = TestServer::start(|_| Reply::xml(FEED)).await;
    let p = srv.addr.port();
    let urls: Vec<String> = [
        "[64:ff9b::7f00:1]",
        "[::127.0.0.1]",
        "[2002:7f00:1::1]",
        "[64:ff9b:1::1]",
        "192.0.0.8",
        "198.18.0.1",
        "240.0.0.1",
        "[fec0::1]",
        "[::ffff:127.0.0.1]",
        "2130706433",
        "0177.0.0.1",
        "0x7f.1",
        "127.1",
        "0",
        "[::]",
    ]
    .iter()
    .enumerate()
    .map(|(i, h)| format!("http://{h}:{p}/feed{i}.xml"))
    .collect();
    let out = rss_cmd()
        .args(["fetch", "--no-cache", "--deny-private-networks"])
        .args(&urls)
        .output()
        .unwrap();
    let doc = json(&out.stdout);
    for (i, url) in urls.iter().enumerate() {
        assert_eq!(
            doc["feeds"][i]["error"]["code"], "INVALID_URL",
            "{url}: {}",
            doc["feeds"][i]
        );
    }
    assert_eq!(srv.count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_two_processes_racing_new_bodies_and_304s_never_corrupt_or_rewind_the_cache() {
    // The origin moves to a new version every other request; a client holding the current
    // version's ETag gets a 304. It records the version each response carried.
    let served: Arc<std::sync::Mutex<Vec<u64>>> = Default::default();
    let n = Arc::new(AtomicUsize::new(0));
    let (s2, n2) = (served.clone(), n.clone());
    let srv = TestServer::start(move |req| {
        let version = (n2.fetch_add(1, Ordering::SeqCst) / 2) as u64;
        s2.lock().unwrap().push(version);
        let etag = format!("\"v{version}\"");
        if req.header("if-none-match") == Some(etag.as_str()) {
            Reply::status(304).header("ETag", &etag)
        } else {
            let body = format!(
                "<rss><channel><title>v{version}</title><item><title>v{version}</title><link>https://x.example/{version}</link></item></channel></rss>"
            );
            Reply::xml(body).header("ETag", &etag)
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let url = srv.url("/feed");
    for round in 0..50 {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (dir, url) = (cache.path().to_owned(), url.clone());
                tokio::spawn(async move { fetch_in(&dir, &[url]).await })
            })
            .collect();
        for run in runs {
            let (code, doc) = run.await.unwrap();
            assert_eq!(code, Some(0), "round {round}: {doc}");
            assert!(
                !codes(&doc).iter().any(|c| c.starts_with("CACHE_")),
                "round {round}: {doc}"
            );
        }
        // What the cache now serves as fresh is what the origin said last.
        let last = *served.lock().unwrap().last().unwrap();
        let (code, doc) = fetch_in(
            cache.path(),
            &["--max-age".into(), "1h".into(), url.clone()],
        )
        .await;
        assert_eq!(code, Some(0), "round {round}: {doc}");
        assert_eq!(
            doc["feeds"][0]["title"],
            format!("v{last}"),
            "round {round}: {doc}"
        );
    }
    assert_eq!(srv.count(), 100, "the --max-age runs sent nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_19_a_store_warning_is_reported_to_the_call_that_met_it() {
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(1500))).await;
    let cache = tempfile::tempdir().unwrap();
    // A Redis store nobody listens on: every store operation falls back, with a warning.
    let server = Arc::new(
        spawn_in(
            cache.path(),
            &["--gate-store", "redis://127.0.0.1:1/0"],
            &[],
        )
        .await,
    );
    let slow = spawn_call(
        &server,
        json!({"urls": [srv.url("/slow")], "cache_policy": "no-cache"}),
    );
    wait_until("the slow send reached the origin", || srv.count() == 1).await;
    // A call that sends nothing meets no store.
    let quiet = structured(
        &call(
            &server,
            "fetch_feed",
            json!({"urls": ["ftp://x.example/feed"]}),
        )
        .await,
    );
    assert!(
        !codes(&quiet).contains(&"GATE_STORE_UNAVAILABLE".to_owned()),
        "{quiet}"
    );
    let slow = structured(&slow.await.unwrap());
    assert!(
        codes(&slow).contains(&"GATE_STORE_UNAVAILABLE".to_owned()),
        "{slow}"
    );
}
