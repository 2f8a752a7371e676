//! The gate against loopback origins: request counts and arrival order at the server.

use std::time::{Duration, Instant, SystemTime};

use crate::helpers::*;
use rss::model::FeedStatus;

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

fn gap(earlier_finished: Instant, later_arrived: Instant) -> Duration {
    later_arrived.saturating_duration_since(earlier_finished)
}

fn urls(srv: &TestServer, n: usize) -> Vec<String> {
    (0..n).map(|i| srv.url(&format!("/f{i}"))).collect()
}

#[tokio::test]
async fn eight_feeds_on_one_host_never_overlap_at_the_server() {
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(40))).await;
    let ctx = context(config(None));
    let out = fetch(&ctx, &urls(&srv, 8), &no_cache()).await;
    assert!(out.feeds.iter().all(|f| f.status == FeedStatus::Ok));
    assert_eq!(srv.count(), 8);
    assert_eq!(srv.max_in_flight(), 1);
    let hits = srv.hits();
    for pair in hits.windows(2) {
        assert!(pair[1].arrived >= pair[0].finished.unwrap());
    }
}

#[tokio::test]
async fn two_hosts_are_fetched_at_the_same_time() {
    let a = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300))).await;
    let b = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300))).await;
    let ctx = context(config(None));
    let mut list = urls(&a, 2);
    list.extend(urls(&b, 2));
    let out = fetch(&ctx, &list, &no_cache()).await;
    assert!(out.feeds.iter().all(|f| f.status == FeedStatus::Ok));
    let (ha, hb) = (a.hits(), b.hits());
    // b's first request arrives while a's first is still being answered.
    assert!(hb[0].arrived < ha[0].finished.unwrap());
    assert_eq!((a.max_in_flight(), b.max_in_flight()), (1, 1));
}

#[tokio::test]
async fn a_429_without_retry_after_is_retried_once_after_the_base_cooldown() {
    let srv = TestServer::start(|req| {
        if req.nth == 1 {
            Reply::status(429)
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let f = fetch_one(&srv.url("/f")).await;
    assert_eq!(f.status, FeedStatus::Ok);
    assert_eq!(f.attempts, 2);
    // The wait is proven at the server: the retry arrives at least the base cooldown after
    // the refusal went out (the gate counts from when it read the refusal, later still).
    assert!(f.gate_wait_ms > 0, "{}", f.gate_wait_ms);
    let hits = srv.hits();
    assert_eq!(hits.len(), 2);
    assert!(gap(hits[0].finished.unwrap(), hits[1].arrived) >= Duration::from_secs(2));
}

#[tokio::test]
async fn a_retry_whose_cooldown_passes_the_budget_sends_nothing() {
    let srv = TestServer::start(|_| Reply::status(429).header("Retry-After", "120")).await;
    let mut c = config(None);
    c.gate.max_gate_wait = Duration::from_secs(30);
    let ctx = context(c);
    let started = Instant::now();
    let out = fetch(&ctx, &[srv.url("/f")], &no_cache()).await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it must fail at once, not sleep"
    );
    assert_eq!(srv.count(), 1);
    let err = out.feeds[0].error.as_ref().unwrap();
    assert_eq!(err.code, "RATE_LIMITED");
    assert_eq!(
        err.details["retry_after_seconds"], 60,
        "capped at HOST_MAX_COOLDOWN"
    );
    let ms = err.details["retry_after_ms"].as_u64().unwrap();
    assert!((59_000..=60_000).contains(&ms), "{ms}");
    assert_eq!(err.details["http_status"], 429);
    assert_eq!(err.details["retry_after"], "120");
    assert_eq!(out.feeds[0].attempts, 1);
}

#[tokio::test]
async fn a_retry_after_date_is_honoured_by_the_retry_and_by_siblings() {
    let target = std::sync::Arc::new(std::sync::Mutex::new(None::<Instant>));
    let t = target.clone();
    let srv = TestServer::start(move |req| {
        if req.nth_overall == 1 {
            let when = SystemTime::now() + Duration::from_secs(3);
            let header = httpdate::fmt_http_date(when);
            // The date has whole seconds: the earliest honest retry is that second.
            let at = httpdate::parse_http_date(&header).unwrap();
            let wait = at.duration_since(SystemTime::now()).unwrap_or_default();
            *t.lock().unwrap() = Some(Instant::now() + wait);
            Reply::status(429).header("Retry-After", &header)
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let ctx = context(config(None));
    let out = fetch(&ctx, &urls(&srv, 3), &no_cache()).await;
    assert!(
        out.feeds.iter().all(|f| f.status == FeedStatus::Ok),
        "{:?}",
        out.errors
    );
    let hits = srv.hits();
    assert_eq!(hits.len(), 4);
    let target = target.lock().unwrap().unwrap();
    assert!(
        hits[1].arrived >= target,
        "the retry came {:?} early",
        target - hits[1].arrived
    );
    // Siblings keep at least max(1 s, the Retry-After) after each response.
    for pair in hits[1..].windows(2) {
        assert!(gap(pair[0].finished.unwrap(), pair[1].arrived) >= Duration::from_secs(1));
    }
}

#[tokio::test]
async fn a_403_whose_retry_cannot_fit_the_budget_is_rate_limited_after_one_request() {
    let srv = TestServer::start(|_| Reply::status(403).header("Retry-After", "50")).await;
    let mut c = config(None);
    c.gate.max_gate_wait = Duration::from_secs(10);
    let ctx = context(c);
    let out = fetch(&ctx, &[srv.url("/f")], &no_cache()).await;
    let err = out.feeds[0].error.as_ref().unwrap();
    assert_eq!(err.code, "RATE_LIMITED");
    assert_eq!(err.details["http_status"], 403);
    assert!(err.details["retry_after_seconds"].as_u64().unwrap() >= 49);
    assert_eq!(srv.count(), 1);
}

#[tokio::test]
async fn the_wait_for_a_global_send_slot_is_counted_as_gate_wait() {
    let slow = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(700))).await;
    let quick = TestServer::start(|_| Reply::xml(FEED)).await;
    let mut c = config(None);
    c.concurrency = 1;
    let ctx = context(c);
    let out = fetch(&ctx, &[slow.url("/a"), quick.url("/b")], &no_cache()).await;
    assert!(out.feeds.iter().all(|f| f.status == FeedStatus::Ok));
    // With one send slot, whichever went second waited for the other's whole send.
    let waited = out.feeds.iter().map(|f| f.gate_wait_ms).max().unwrap();
    let (s, q) = (slow.hits()[0].clone(), quick.hits()[0].clone());
    if q.arrived > s.arrived {
        assert!(q.arrived >= s.finished.unwrap());
        assert!(waited >= 600, "{waited}");
    } else {
        assert!(s.arrived >= q.finished.unwrap());
    }
}

#[tokio::test]
async fn a_403_twice_is_feed_fetch_failed_after_exactly_two_requests() {
    let srv = TestServer::start(|_| Reply::status(403)).await;
    let f = fetch_one(&srv.url("/f")).await;
    let err = f.error.unwrap();
    assert_eq!(err.code, "FEED_FETCH_FAILED");
    assert_eq!(err.details["http_status"], 403);
    let hits = srv.hits();
    assert_eq!(hits.len(), 2);
    assert!(gap(hits[0].finished.unwrap(), hits[1].arrived) >= Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_feed_in_a_batch_is_rate_limited_while_other_hosts_succeed() {
    let strict = TestServer::start(|_| Reply::status(429)).await;
    let lenient = fixture_server().await;
    let out = rss_cmd()
        .env("RSS_MAX_GATE_WAIT_SECS", "1")
        .args([
            "fetch",
            "--no-cache",
            &strict.url("/f"),
            &lenient.url("/rss20.xml"),
            &lenient.url("/atom10.xml"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&out.stdout);
    let err = &doc["feeds"][0]["error"];
    assert_eq!(err["code"], "RATE_LIMITED");
    assert!(err["details"]["retry_after_seconds"].as_u64().unwrap() >= 1);
    assert!(err["details"]["retry_after_ms"].is_u64());
    assert_eq!(doc["feeds"][1]["status"], "ok");
    assert_eq!(doc["feeds"][2]["status"], "ok");
    assert_eq!(
        strict.count(),
        1,
        "a cooldown past the budget sends no retry"
    );
}

#[tokio::test]
async fn a_strict_hosts_backlog_never_delays_lenient_hosts() {
    // Odd requests succeed slowly, even ones are refused with `Retry-After: 1`.
    let strict = TestServer::start(|req| {
        if req.nth_overall % 2 == 0 {
            Reply::status(429).header("Retry-After", "1")
        } else {
            Reply::xml(FEED).delay(Duration::from_millis(200))
        }
    })
    .await;
    let lenient = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(20))).await;
    let mut list = urls(&strict, 4);
    list.extend(urls(&lenient, 4));
    // One send in flight across all hosts: if waiting out the strict host's cooldown held
    // that slot, the lenient host would be shut out for every second of it.
    let mut c = config(None);
    c.concurrency = 1;
    let ctx = context(c);
    let out = fetch(&ctx, &list, &no_cache()).await;
    assert!(
        out.feeds.iter().all(|f| f.status == FeedStatus::Ok),
        "{:?}",
        out.errors
    );
    let strict_hits = strict.hits();
    assert_eq!(strict_hits[1].status, 429);
    let strict_retry = strict_hits[2].arrived;
    for h in lenient.hits() {
        assert!(
            h.arrived < strict_retry,
            "a lenient request waited out the strict host's cooldown"
        );
    }
    // Output stays in request order.
    let order: Vec<String> = out.feeds.iter().map(|f| f.feed_url.clone()).collect();
    assert_eq!(order, list);
}

#[tokio::test]
async fn a_host_that_never_throttles_is_never_paced() {
    let srv = TestServer::start(|_| Reply::xml(FEED)).await;
    let ctx = context(config(None));
    let out = fetch(&ctx, &urls(&srv, 5), &no_cache()).await;
    assert!(
        out.feeds
            .iter()
            .all(|f| f.gate_wait_ms < 500 && f.attempts == 1)
    );
}

#[tokio::test]
async fn a_slow_willing_host_is_never_cut_off_by_the_wait_budget() {
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300))).await;
    let mut c = config(None);
    c.gate.max_gate_wait = Duration::from_secs(1);
    let ctx = context(c);
    let out = fetch(&ctx, &urls(&srv, 6), &no_cache()).await;
    assert!(
        out.feeds.iter().all(|f| f.status == FeedStatus::Ok),
        "{:?}",
        out.errors
    );
    assert_eq!(srv.count(), 6);
    assert_eq!(srv.max_in_flight(), 1);
}
