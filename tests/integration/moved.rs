//! Moved and gone feeds: a `410` is final, a permanent redirect seen again and again is
//! remembered; every test talks only to its own loopback origin.

use rss::model::FeedStatus;

use crate::helpers::*;

#[tokio::test]
async fn issue_40_a_410_is_feed_gone_and_is_asked_once() {
    let srv = TestServer::with_routes(vec![("/gone.xml", Reply::status(410))]).await;
    let f = fetch_one(&srv.url("/gone.xml")).await;
    assert_eq!(f.status, FeedStatus::Error);
    let e = f.error.expect("an error");
    assert_eq!(e.code, "FEED_GONE");
    assert_eq!(e.details["http_status"], 410);
    assert_eq!(srv.hits_for("/gone.xml").len(), 1, "a 410 is never retried");
}

#[tokio::test]
async fn issue_40_a_410_is_not_covered_by_a_stale_copy() {
    let dir = tempfile::tempdir().unwrap();
    let gone = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = gone.clone();
    let srv = TestServer::start(move |_| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::status(410)
        } else {
            Reply::xml(fixture("rss20.xml"))
        }
    })
    .await;
    let ctx = context(config(Some(dir.path())));
    let opts = rss::ops::FetchOptions {
        cache: rss::ops::CacheMode::Refresh,
        stale_if_error: true,
        ..rss::ops::FetchOptions::default()
    };
    let out = fetch(&ctx, &[srv.url("/f.xml")], &opts).await;
    assert_eq!(out.feeds[0].status, FeedStatus::Ok);
    gone.store(true, std::sync::atomic::Ordering::SeqCst);
    let out = fetch(&ctx, &[srv.url("/f.xml")], &opts).await;
    assert_eq!(out.feeds[0].status, FeedStatus::Error);
    assert_eq!(out.feeds[0].error.as_ref().unwrap().code, "FEED_GONE");
    assert_eq!(srv.count(), 2);
}
