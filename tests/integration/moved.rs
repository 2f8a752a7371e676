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

/// An origin where `/old.xml` answers `status` (a redirect to `/new.xml`, while `redirect`
/// says so; a feed otherwise) and `/new.xml` the feed.
async fn moving_origin(
    status: u16,
    redirect: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> TestServer {
    TestServer::start(move |req| {
        let feed = Reply::xml(fixture("rss20.xml"));
        match req.path.as_str() {
            "/old.xml" if redirect.load(std::sync::atomic::Ordering::SeqCst) => {
                Reply::status(status).header("Location", "/new.xml")
            }
            _ => feed,
        }
    })
    .await
}

fn moved_warnings(out: &rss::model::FetchOutput) -> Vec<String> {
    out.warnings
        .iter()
        .filter(|w| w.code == "FEED_MOVED")
        .map(|w| w.message.clone())
        .collect()
}

fn always() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true))
}

#[tokio::test]
async fn issue_40_a_permanent_redirect_three_times_in_a_row_is_remembered() {
    for status in [301, 308] {
        let dir = tempfile::tempdir().unwrap();
        let srv = moving_origin(status, always()).await;
        let ctx = context(config(Some(dir.path())));
        let old = srv.url("/old.xml");
        let new = srv.url("/new.xml");
        let mut ids = Vec::new();
        for run in 1..=3 {
            let out = fetch(&ctx, std::slice::from_ref(&old), &no_cache()).await;
            assert_eq!(out.feeds[0].status, FeedStatus::Ok);
            assert_eq!(out.feeds[0].final_url.as_deref(), Some(new.as_str()));
            let w = moved_warnings(&out);
            if run < 3 {
                assert!(w.is_empty(), "run {run}: {w:?}");
            } else {
                assert_eq!(w.len(), 1, "{w:?}");
                assert!(w[0].contains(&new), "{w:?}");
            }
            ids.push(
                out.feeds[0]
                    .items
                    .iter()
                    .map(|i| i.id.clone())
                    .collect::<Vec<_>>(),
            );
        }
        assert_eq!(srv.hits_for("/old.xml").len(), 3);
        // Later fetches go straight to the new address, and say so.
        for _ in 0..2 {
            let out = fetch(&ctx, std::slice::from_ref(&old), &no_cache()).await;
            let f = &out.feeds[0];
            assert_eq!(f.status, FeedStatus::Ok);
            assert_eq!(f.feed_url, old);
            assert_eq!(f.final_url.as_deref(), Some(new.as_str()));
            let w = moved_warnings(&out);
            assert_eq!(w.len(), 1, "{w:?}");
            assert!(w[0].contains(&new), "{w:?}");
            // The feed is the one it was: its items keep their ids.
            assert_eq!(
                f.items.iter().map(|i| i.id.clone()).collect::<Vec<_>>(),
                ids[0]
            );
        }
        assert_eq!(
            srv.hits_for("/old.xml").len(),
            3,
            "{status}: the old address is not asked again"
        );
        assert_eq!(srv.hits_for("/new.xml").len(), 5);
        let listed = rss::ops::moved_list(&ctx).await.unwrap();
        assert_eq!(listed.feeds.len(), 1);
        assert!(listed.feeds[0].remembered);
        assert_eq!(listed.feeds[0].moved_to, new);
        assert_eq!(listed.feeds[0].times_in_a_row, 3);
        // Forgotten, the old address is asked again.
        let forgot = rss::ops::moved_forget(&ctx, Some(&old)).await.unwrap();
        assert_eq!(forgot.forgotten, 1);
        let out = fetch(&ctx, std::slice::from_ref(&old), &no_cache()).await;
        assert!(moved_warnings(&out).is_empty());
        assert_eq!(srv.hits_for("/old.xml").len(), 4);
    }
}

#[tokio::test]
async fn issue_40_a_temporary_redirect_is_never_remembered() {
    for status in [302, 303, 307] {
        let dir = tempfile::tempdir().unwrap();
        let srv = moving_origin(status, always()).await;
        let ctx = context(config(Some(dir.path())));
        let old = srv.url("/old.xml");
        for _ in 0..5 {
            let out = fetch(&ctx, std::slice::from_ref(&old), &no_cache()).await;
            assert_eq!(out.feeds[0].status, FeedStatus::Ok);
            assert!(moved_warnings(&out).is_empty());
        }
        assert_eq!(srv.hits_for("/old.xml").len(), 5, "{status}");
        assert!(rss::ops::moved_list(&ctx).await.unwrap().feeds.is_empty());
    }
}

#[tokio::test]
async fn issue_40_an_answer_without_the_redirect_ends_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let redirect = always();
    let srv = moving_origin(301, redirect.clone()).await;
    let ctx = context(config(Some(dir.path())));
    let old = srv.url("/old.xml");
    let set = |on: bool| redirect.store(on, std::sync::atomic::Ordering::SeqCst);
    for on in [true, true, false, true, true] {
        set(on);
        let out = fetch(&ctx, std::slice::from_ref(&old), &no_cache()).await;
        assert!(moved_warnings(&out).is_empty());
    }
    let listed = rss::ops::moved_list(&ctx).await.unwrap();
    assert_eq!(listed.feeds[0].times_in_a_row, 2);
    assert!(!listed.feeds[0].remembered);
    let out = fetch(&ctx, std::slice::from_ref(&old), &no_cache()).await;
    assert_eq!(moved_warnings(&out).len(), 1, "the third in a row");
    assert_eq!(srv.hits_for("/old.xml").len(), 6);
}

#[test]
fn issue_40_every_output_format_says_the_feed_moved() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let srv = rt.block_on(moving_origin(301, always()));
    let dir = tempfile::tempdir().unwrap();
    let old = srv.url("/old.xml");
    let new = srv.url("/new.xml");
    let run = |extra: &[&str]| {
        let out = rss_cmd()
            .args(["--cache-dir", dir.path().join("c").to_str().unwrap()])
            .args(["--state-dir", dir.path().join("s").to_str().unwrap()])
            .args(["fetch", "--no-cache"])
            .args(extra)
            .arg(&old)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    for _ in 0..3 {
        run(&["-q"]);
    }
    let (json, _) = run(&["-q"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let w = doc["warnings"].as_array().unwrap();
    assert!(
        w.iter()
            .any(|w| w["code"] == "FEED_MOVED" && w["message"].as_str().unwrap().contains(&new)),
        "{w:?}"
    );
    let (records, _) = run(&["-q", "--format", "ndjson", "--ndjson-records"]);
    let summary = records.lines().last().unwrap();
    assert!(
        summary.contains("FEED_MOVED") && summary.contains(&new),
        "{summary}"
    );
    let (text, _) = run(&["-q", "--format", "text", "--no-color"]);
    assert!(text.contains("FEED_MOVED") || text.contains(&new), "{text}");
    let (lines, stderr) = run(&["--format", "ndjson"]);
    assert!(!lines.contains("FEED_MOVED"), "stdout holds items only");
    assert!(
        stderr.contains("FEED_MOVED") && stderr.contains(&new),
        "{stderr}"
    );
    let listed = rss_cmd()
        .args(["--state-dir", dir.path().join("s").to_str().unwrap()])
        .args(["moved"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(doc["feeds"][0]["feed_url"], old.as_str());
    assert_eq!(doc["feeds"][0]["remembered"], true);
    assert_eq!(srv.hits_for("/old.xml").len(), 3);
}

#[tokio::test]
async fn issue_40_mcp_fetch_feed_says_the_feed_moved() {
    let srv = moving_origin(308, always()).await;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let s = crate::mcp::spawn_in(
        dir.path(),
        &[],
        &[("RSS_STATE_DIR", state.to_str().unwrap())],
    )
    .await;
    let old = srv.url("/old.xml");
    let new = srv.url("/new.xml");
    let mut last = serde_json::Value::Null;
    for _ in 0..4 {
        let r = crate::mcp::call(
            &s,
            "fetch_feed",
            serde_json::json!({"url": old, "cache_policy": "refresh"}),
        )
        .await;
        last = r.structured_content.clone().expect("structured content");
    }
    let w = last["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        w.iter().any(|w| w["code"] == "FEED_MOVED"
            && w["message"].as_str().unwrap_or_default().contains(&new)),
        "{last}"
    );
    assert_eq!(srv.hits_for("/old.xml").len(), 3);
}

/// A feed URL's password is kept nowhere: `rss moved` lists the address without it, and
/// the record on disk holds neither the password nor the URL that carried it.
#[test]
fn a_moved_feeds_password_is_neither_listed_nor_stored() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let srv = rt.block_on(moving_origin(301, always()));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s");
    let old = srv
        .url("/old.xml")
        .replace("http://", "http://u:PASSWD_40@");
    for _ in 0..3 {
        let out = rss_cmd()
            .args(["--cache-dir", dir.path().join("c").to_str().unwrap()])
            .args(["--state-dir", state.to_str().unwrap()])
            .args(["fetch", "--no-cache", "-q", &old])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
    }
    let listed = rss_cmd()
        .args(["--state-dir", state.to_str().unwrap(), "moved"])
        .output()
        .unwrap();
    let text = String::from_utf8(listed.stdout).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc["feeds"][0]["remembered"], true, "{doc}");
    assert_eq!(doc["feeds"][0]["feed_url"], srv.url("/old.xml").as_str());
    assert!(!text.contains("PASSWD_40"), "{text}");
    let mut stack = vec![state.clone()];
    let mut files = 0;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files += 1;
                let body = std::fs::read(&p).unwrap();
                assert!(
                    !String::from_utf8_lossy(&body).contains("PASSWD_40"),
                    "{} holds the password",
                    p.display()
                );
            }
        }
    }
    assert!(files > 0);
    // Forgetting it by the URL a fetch names (password and all) finds the record.
    let forgot = rss_cmd()
        .args([
            "--state-dir",
            state.to_str().unwrap(),
            "moved",
            "forget",
            &old,
        ])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&forgot.stdout).unwrap();
    assert_eq!(doc["forgotten"], 1, "{doc}");
}
