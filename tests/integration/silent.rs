//! Issue 36: hosts that allow one request per N seconds and refuse without `Retry-After`,
//! counted at the origin. The gate learns the window once and keeps it: the first contact is
//! refused, the ladder finds the window, and every later request goes at a gap known to work.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::helpers::*;
use crate::hosts::{fetch_in, in_processes, statuses, urls};

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

/// A host admitting one request per `window(admitted so far)`, counted from the last
/// admitted request's arrival, and answering `429` with no `Retry-After` otherwise.
pub async fn silent_host(window: impl Fn(usize) -> Duration + Send + Sync + 'static) -> TestServer {
    let last: Arc<Mutex<(Option<Instant>, usize)>> = Arc::new(Mutex::new((None, 0)));
    TestServer::start(move |req| {
        let mut last = last.lock().unwrap();
        let (at, admitted) = *last;
        if at.is_none_or(|t| req.arrived.duration_since(t) >= window(admitted)) {
            *last = (Some(req.arrived), admitted + 1);
            Reply::xml(FEED)
        } else {
            Reply::status(429)
        }
    })
    .await
}

pub fn refusals(srv: &TestServer) -> usize {
    srv.hits().iter().filter(|h| h.status == 429).count()
}

/// From the first admitted request's arrival to the last one's.
pub fn span(srv: &TestServer) -> Duration {
    let ok: Vec<Instant> = srv
        .hits()
        .iter()
        .filter(|h| h.status == 200)
        .map(|h| h.arrived)
        .collect();
    ok[ok.len() - 1] - ok[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_twelve_feeds_on_a_two_second_host_are_refused_once() {
    let srv = silent_host(|_| Duration::from_secs(2)).await;
    let cache = tempfile::tempdir().unwrap();
    let mut args = vec!["--no-cache".to_owned()];
    args.extend(urls(&srv, "f", 12));
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    assert!(statuses(&doc).iter().all(|s| s == "ok"), "{doc}");
    // The first contact only.
    assert_eq!(refusals(&srv), 1);
    assert_eq!(srv.count(), 13);
    // An oracle that knows the window admits the 12th request 22 s after the first.
    let took = span(&srv);
    assert!(took <= Duration::from_secs(22).mul_f64(1.25), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_eight_feeds_on_an_eight_second_host_are_all_returned_after_the_ladder() {
    let srv = silent_host(|_| Duration::from_secs(8)).await;
    let cache = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--no-cache".to_owned(),
        "--max-gate-wait".into(),
        "150".into(),
    ];
    args.extend(urls(&srv, "f", 8));
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    assert!(statuses(&doc).iter().all(|s| s == "ok"), "{doc}");
    // The first contact, then the ladder's 2 s and 4 s gaps; 8 s is admitted.
    assert!(refusals(&srv) <= 3, "{} refusals", refusals(&srv));
    let took = span(&srv);
    assert!(took <= Duration::from_secs(56).mul_f64(1.3), "{took:?}");
    // The feed that met the ladder was sent until it was admitted, within its budget.
    let attempts: u64 = doc["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["attempts"].as_u64().unwrap())
        .sum();
    assert_eq!(attempts as usize, srv.count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_three_processes_on_a_two_second_host_learn_the_window_once() {
    let srv = silent_host(|_| Duration::from_secs(2)).await;
    let cache = tempfile::tempdir().unwrap();
    for (code, doc) in in_processes(&srv, cache.path(), 3, 4, &[]).await {
        assert_eq!(code, Some(0), "{doc}");
        assert!(statuses(&doc).iter().all(|s| s == "ok"), "{doc}");
    }
    // What one process learned is the others' the moment it is learned.
    assert_eq!(refusals(&srv), 1);
    assert_eq!(srv.max_in_flight(), 1);
    let took = span(&srv);
    assert!(took <= Duration::from_secs(22).mul_f64(1.25), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_36_a_window_that_widens_mid_run_is_refused_at_most_twice_more() {
    // Two seconds for the first four admitted requests, six after.
    let srv = silent_host(|admitted| Duration::from_secs(if admitted < 4 { 2 } else { 6 })).await;
    let cache = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--no-cache".to_owned(),
        "--max-gate-wait".into(),
        "120".into(),
    ];
    args.extend(urls(&srv, "f", 7));
    let (code, doc) = fetch_in(cache.path(), &args).await;
    assert_eq!(code, Some(0), "{doc}");
    assert!(statuses(&doc).iter().all(|s| s == "ok"), "{doc}");
    // The first contact, then at most two while the wider window is found.
    assert!(refusals(&srv) <= 3, "{} refusals", refusals(&srv));
}
