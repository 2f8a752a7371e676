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
async fn issue_27_sends_in_flight_count_against_an_announced_quota() {
    // Six requests a minute, each answered after 150 ms with what is left as the server
    // counted it on arrival; three permits for the host, so sends overlap.
    for concurrency in ["3", "1"] {
        let count = Arc::new(Mutex::new(0u64));
        let seen = count.clone();
        let srv = TestServer::start(move |_| {
            let mut n = seen.lock().unwrap();
            if *n >= 6 {
                return Reply::status(429).header("RateLimit", "\"w\";r=0;t=60");
            }
            *n += 1;
            Reply::xml(FEED)
                .header("RateLimit", &format!("\"w\";r={};t=60", 6 - *n))
                .delay(Duration::from_millis(150))
        })
        .await;
        let cache = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = [
            "--no-cache",
            "--host-concurrency",
            concurrency,
            "--max-gate-wait",
            "5",
        ]
        .map(String::from)
        .to_vec();
        args.extend((0..10).map(|i| srv.url(&format!("/f{i}"))));
        let (_, doc) = fetch_in(cache.path(), &args).await;
        assert_eq!(refusals(&srv), 0, "--host-concurrency {concurrency}: {doc}");
        assert_eq!(srv.count(), 6, "--host-concurrency {concurrency}");
        assert_eq!(ok(&doc), 6);
        let limited = doc["feeds"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["error"]["code"] == "RATE_LIMITED")
            .count();
        assert_eq!(limited, 4);
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

/// Fetches `url` with `extra` flags in `cache`; the one feed's result.
async fn one(cache: &std::path::Path, extra: &[&str], url: &str) -> Value {
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    args.push(url.to_owned());
    let (code, doc) = fetch_in(cache, &args).await;
    assert_eq!(code, Some(0), "{doc}");
    doc["feeds"][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_the_server_says_is_fresh_is_served_with_no_request() {
    // One reading of the clock for both headers: two readings can straddle a second's
    // boundary and make `Expires - Date` 61 s (a copy fresh for a second).
    let now = std::time::SystemTime::now();
    let date = httpdate::fmt_http_date(now);
    let later = httpdate::fmt_http_date(now + Duration::from_secs(60));
    let (d1, l1, d2, l2) = (date.clone(), later.clone(), date.clone(), later.clone());
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/max-age" => Reply::xml(FEED)
            .header("Cache-Control", "public, max-age=30")
            .header("ETag", "\"v\""),
        "/no-store" => Reply::xml(FEED).header("Cache-Control", "no-store, max-age=30"),
        "/no-cache" => Reply::xml(FEED).header("Cache-Control", "no-cache, max-age=30"),
        // Expires 60 s after Date, 50 s of it spent in a cache on the way: 10 s left.
        "/expires" => Reply::xml(FEED)
            .header("Date", &d1)
            .header("Expires", &l1)
            .header("Age", "50"),
        // Expires 60 s after Date, and 60 s old already: stale on arrival.
        "/expired" => Reply::xml(FEED)
            .header("Date", &d2)
            .header("Expires", &l2)
            .header("Age", "60"),
        _ => Reply::status(404),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let c = cache.path();
    let count = |p: &str| srv.hits_for(p).len();

    let first = one(c, &[], &srv.url("/max-age")).await;
    assert!(first["fresh_until"].is_string(), "{first}");
    let again = one(c, &[], &srv.url("/max-age")).await;
    assert_eq!(again["from_cache"], true);
    assert_eq!(again["status"], "ok");
    assert!(again["cache_age_seconds"].is_u64());
    assert_eq!(again["fresh_until"], first["fresh_until"]);
    assert_eq!(count("/max-age"), 1, "a fresh copy sends nothing");
    // Asked for now, or always asked, or past the --max-freshness cap: the origin is asked.
    one(c, &["--refresh"], &srv.url("/max-age")).await;
    assert_eq!(count("/max-age"), 2);
    let revalidated = one(c, &["--cache-policy", "revalidate"], &srv.url("/max-age")).await;
    assert_eq!(revalidated["status"], "ok");
    assert_eq!(count("/max-age"), 3);
    one(c, &["--max-freshness", "0"], &srv.url("/max-age")).await;
    assert_eq!(count("/max-age"), 4);

    for (path, requests) in [
        ("/no-store", 2),
        ("/no-cache", 2),
        ("/expires", 1),
        ("/expired", 2),
    ] {
        one(c, &[], &srv.url(path)).await;
        one(c, &[], &srv.url(path)).await;
        assert_eq!(count(path), requests, "{path}");
    }
    // A no-store response is not kept.
    let listed = json(&rss_std(c).args(["cache", "list"]).output().unwrap().stdout);
    let urls: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["feed_url"].as_str().unwrap())
        .collect();
    assert!(!urls.contains(&srv.url("/no-store").as_str()), "{urls:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeds_declared_ttl_is_reported() {
    let srv = TestServer::with_routes(vec![
        ("/ttl", Reply::xml("<rss><channel><title>T</title><ttl>60</ttl></channel></rss>")),
        (
            "/sy",
            Reply::xml("<rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" xmlns=\"http://purl.org/rss/1.0/\" xmlns:sy=\"http://purl.org/rss/1.0/modules/syndication/\"><channel><title>T</title><sy:updatePeriod>hourly</sy:updatePeriod><sy:updateFrequency>2</sy:updateFrequency></channel></rdf:RDF>"),
        ),
        ("/none", Reply::xml(FEED)),
    ])
    .await;
    let cache = tempfile::tempdir().unwrap();
    assert_eq!(
        one(cache.path(), &[], &srv.url("/ttl")).await["declared_ttl_seconds"],
        3600
    );
    assert_eq!(
        one(cache.path(), &[], &srv.url("/sy")).await["declared_ttl_seconds"],
        1800
    );
    assert_eq!(
        one(cache.path(), &[], &srv.url("/none")).await["declared_ttl_seconds"],
        Value::Null
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyed_by_site_the_subdomains_of_one_site_are_paced_as_one() {
    for mode in ["site", "host"] {
        // A proxy answering for every host; the first request it sees is refused.
        let proxy = TestServer::start(|req| {
            if req.nth_overall == 1 {
                Reply::status(429).header("Retry-After", "2")
            } else {
                Reply::xml(FEED).delay(Duration::from_millis(50))
            }
        })
        .await;
        let cache = tempfile::tempdir().unwrap();
        let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
        cmd.args(["--host-key", mode, "fetch", "--no-cache"])
            .args(["http://a.blogs.example/feed", "http://b.blogs.example/feed"])
            .env("HTTP_PROXY", format!("http://{}", proxy.addr))
            .env_remove("NO_PROXY")
            .env_remove("no_proxy")
            .stderr(std::process::Stdio::null());
        let out = cmd.output().await.unwrap();
        let doc = json(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{mode}: {doc}");
        let mut hits = proxy.hits();
        hits.sort_by_key(|h| h.arrived);
        let refused = hits[0].finished.unwrap();
        let soonest_after = hits[1..].iter().map(|h| h.arrived - refused).min().unwrap();
        if mode == "site" {
            // The refusal taught the site: the other subdomain waited for it too.
            assert!(
                soonest_after >= Duration::from_millis(1990),
                "{soonest_after:?}"
            );
            assert_eq!(proxy.max_in_flight(), 1);
            let hosts = json(
                &rss_std(cache.path())
                    .args(["--host-key", "site", "hosts"])
                    .output()
                    .unwrap()
                    .stdout,
            );
            assert_eq!(hosts["host_key"], "site");
            assert_eq!(hosts["hosts"][0]["host"], "blogs.example", "{hosts}");
        } else {
            // Keyed by host, the other subdomain did not wait.
            assert!(
                soonest_after < Duration::from_millis(1500),
                "{soonest_after:?}"
            );
        }
    }
}
