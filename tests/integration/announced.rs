//! Issue 21: pacing by what servers say ahead of time — announced quotas, freshness, and one
//! site across many hosts — proven by request counts and arrival times at loopback origins.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::*;
use crate::hosts::fetch_in;

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

/// How a quota host announces itself.
#[derive(Clone, Copy)]
enum Announce {
    /// `RateLimit: "w";r=R;t=T`.
    Draft,
    /// `X-RateLimit-Remaining` with `X-RateLimit-Reset` as Unix seconds.
    VendorEpoch,
    /// `X-Rate-Limit-Remaining` with `X-Rate-Limit-Reset` as seconds from now.
    VendorDelta,
}

/// A host allowing `quota` requests per fixed `window`, announcing what is left on every
/// response (refusals too) and refusing with `429` past it.
async fn quota_host(quota: u64, window: Duration, how: Announce) -> TestServer {
    let state: Arc<Mutex<(Instant, u64)>> = Arc::new(Mutex::new((Instant::now(), 0)));
    TestServer::start(move |_| {
        let now = Instant::now();
        let mut s = state.lock().unwrap();
        if now >= s.0 + window {
            let windows = (now - s.0).as_nanos() / window.as_nanos();
            s.0 += window * windows as u32;
            s.1 = 0;
        }
        let over = s.1 >= quota;
        if !over {
            s.1 += 1;
        }
        let left = quota - s.1;
        let reset = (s.0 + window - now).as_secs_f64().ceil() as u64;
        let mut reply = if over {
            Reply::status(429)
        } else {
            Reply::xml(FEED)
        };
        reply = match how {
            Announce::Draft => reply.header("RateLimit", &format!("\"w\";r={left};t={reset}")),
            Announce::VendorEpoch => {
                let epoch = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs_f64();
                reply
                    .header("X-RateLimit-Remaining", &left.to_string())
                    .header(
                        "X-RateLimit-Reset",
                        &((epoch + reset as f64).ceil() as u64).to_string(),
                    )
            }
            Announce::VendorDelta => reply
                .header("X-Rate-Limit-Remaining", &left.to_string())
                .header("X-Rate-Limit-Reset", &reset.to_string()),
        };
        reply
    })
    .await
}

fn refusals(srv: &TestServer) -> usize {
    srv.hits().iter().filter(|h| h.status == 429).count()
}

fn ok(doc: &Value) -> usize {
    doc["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["status"] == "ok")
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_announcing_its_quota_is_never_refused_by_one_run() {
    for how in [
        Announce::Draft,
        Announce::VendorEpoch,
        Announce::VendorDelta,
    ] {
        let srv = quota_host(5, Duration::from_secs(2), how).await;
        let cache = tempfile::tempdir().unwrap();
        let mut args = vec!["--no-cache".to_owned(), "--concurrency".into(), "8".into()];
        args.extend((0..20).map(|i| srv.url(&format!("/f{i}"))));
        let (code, doc) = fetch_in(cache.path(), &args).await;
        assert_eq!(code, Some(0), "{doc}");
        assert_eq!(ok(&doc), 20);
        assert_eq!(
            refusals(&srv),
            0,
            "the host said what was left before refusing"
        );
        assert_eq!(srv.count(), 20);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_an_announced_quota_and_a_later_run_remembers_it() {
    let srv = quota_host(4, Duration::from_secs(2), Announce::Draft).await;
    let cache = tempfile::tempdir().unwrap();
    let runs: Vec<_> = (0..2)
        .map(|p| {
            let mut args = vec!["--no-cache".to_owned()];
            args.extend((0..6).map(|i| srv.url(&format!("/p{p}-{i}"))));
            let dir = cache.path().to_owned();
            tokio::spawn(async move { fetch_in(&dir, &args).await })
        })
        .collect();
    for r in runs {
        let (code, doc) = r.await.unwrap();
        assert_eq!(code, Some(0), "{doc}");
    }
    // The first response announced the quota: at most the request before it is refused.
    assert!(refusals(&srv) <= 1, "{} refusals", refusals(&srv));
    let before = refusals(&srv);
    // The next process's run knows what is left: no refusal.
    let mut args = vec!["--no-cache".to_owned()];
    args.extend((0..5).map(|i| srv.url(&format!("/later{i}"))));
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(refusals(&srv), before);
    // `rss hosts` shows the allowance and when it refills.
    let hosts = json(&rss_std(cache.path()).arg("hosts").output().unwrap().stdout);
    let h = &hosts["hosts"][0];
    assert!(h["quota_remaining"].is_u64(), "{h}");
    assert!(h["quota_resets_at"].is_string(), "{h}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_quota_past_the_budget_is_rate_limited_at_once_with_the_wait() {
    // One request per 30 s window: the second must wait ~30 s, past a 5 s budget.
    let srv = quota_host(1, Duration::from_secs(30), Announce::Draft).await;
    let cache = tempfile::tempdir().unwrap();
    let args = [
        "--no-cache",
        "--max-gate-wait",
        "5",
        &srv.url("/a"),
        &srv.url("/b"),
    ]
    .map(String::from);
    let started = Instant::now();
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(3), "{doc}");
    let err = &doc["feeds"][1]["error"];
    assert_eq!(err["code"], "RATE_LIMITED", "{doc}");
    let wait = err["details"]["retry_after_seconds"].as_u64().unwrap();
    assert!((25..=31).contains(&wait), "{wait}");
    assert_eq!(doc["feeds"][1]["attempts"], 0, "nothing was sent");
    assert_eq!(srv.count(), 1);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_quota_field_is_ignored() {
    let srv = TestServer::start(|_| {
        Reply::xml(FEED)
            .header("RateLimit", "r=;;t=\"soon")
            .header("X-RateLimit-Remaining", "plenty")
            .header("X-RateLimit-Reset", "whenever")
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let args: Vec<String> = std::iter::once("--no-cache".to_owned())
        .chain((0..4).map(|i| srv.url(&format!("/m{i}"))))
        .collect();
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(ok(&doc), 4);
}
