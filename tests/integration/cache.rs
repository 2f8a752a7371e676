//! The file cache: conditional GETs, freshness, corruption, concurrency, stale-if-error, show.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::helpers::*;
use rss::model::FeedStatus;
use rss::ops::{CacheMode, FetchOptions, ShowOptions};

fn validating_server(
    body: &'static str,
) -> impl Fn(&server::Request) -> Reply + Send + Sync + 'static {
    move |req| {
        if req.header("if-none-match") == Some("\"v1\"") {
            Reply::status(304).header("ETag", "\"v1\"")
        } else {
            Reply::xml(body)
                .header("ETag", "\"v1\"")
                .header("Last-Modified", "Mon, 01 Jun 2026 10:00:00 GMT")
        }
    }
}

const FEED: &str = "<rss><channel><title>Cached</title><item><title>one</title><link>https://c.example/1</link><guid>g-1</guid><pubDate>Mon, 01 Jun 2026 09:00:00 GMT</pubDate><description>First</description></item></channel></rss>";

fn opts(cache: CacheMode) -> FetchOptions {
    FetchOptions {
        cache,
        ..FetchOptions::default()
    }
}

#[tokio::test]
async fn a_second_fetch_revalidates_and_serves_the_cached_items() {
    let srv = TestServer::start(validating_server(FEED)).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    let first = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
    assert_eq!(first.feeds[0].status, FeedStatus::Ok);
    assert!(!first.feeds[0].from_cache);

    let second = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
    let f = &second.feeds[0];
    assert_eq!(f.status, FeedStatus::NotModified);
    assert!(f.from_cache);
    assert_eq!(f.items.len(), 1);
    assert_eq!(f.items[0].title.as_deref(), Some("one"));
    assert_eq!(f.items[0].id, first.feeds[0].items[0].id);
    assert!(f.cached_at.is_some());
    let hits = srv.hits();
    assert_eq!(hits.len(), 2);
    assert_eq!(
        hits[1].headers.get("if-none-match").map(String::as_str),
        Some("\"v1\"")
    );
    assert_eq!(
        hits[1].headers.get("if-modified-since").map(String::as_str),
        Some("Mon, 01 Jun 2026 10:00:00 GMT")
    );
    assert_eq!(hits[1].status, 304);
}

#[tokio::test]
async fn a_max_age_hit_makes_no_request_and_refresh_revalidates() {
    let srv = TestServer::start(validating_server(FEED)).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
    let out = fetch(
        &ctx,
        &[srv.url("/f")],
        &opts(CacheMode::MaxAge(Duration::from_secs(3600))),
    )
    .await;
    let f = &out.feeds[0];
    assert_eq!(f.status, FeedStatus::Ok);
    assert!(f.from_cache);
    assert_eq!(f.attempts, 0);
    assert_eq!(f.items.len(), 1);
    assert_eq!(srv.count(), 1, "a fresh entry never reaches the network");
    let out = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Refresh)).await;
    assert_eq!(out.feeds[0].status, FeedStatus::NotModified);
    assert_eq!(srv.count(), 2);
}

#[tokio::test]
async fn no_cache_neither_reads_nor_writes() {
    let srv = TestServer::start(validating_server(FEED)).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Off)).await;
    let files = std::fs::read_dir(dir.path().join("feeds"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(files, 0);
    fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
    fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Off)).await;
    assert!(
        !srv.hits()[2].headers.contains_key("if-none-match"),
        "--no-cache sends no validators"
    );
}

#[tokio::test]
async fn damaged_entries_are_misses_with_a_warning_and_a_fresh_fetch() {
    let srv = TestServer::start(validating_server(FEED)).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    let feeds = dir.path().join("feeds");
    type Damage = Box<dyn Fn(&std::path::Path)>;
    let damages: Vec<(&str, Damage)> = vec![
        ("truncated body", Box::new(|p| truncate_file(p, "body"))),
        (
            "garbage metadata",
            Box::new(|p| std::fs::write(find(p, "json"), b"{not json").unwrap()),
        ),
        (
            "hash mismatch",
            Box::new(|p| {
                let body = find(p, "body");
                let mut bytes = std::fs::read(&body).unwrap();
                bytes[10] ^= 0x20;
                std::fs::write(body, bytes).unwrap();
            }),
        ),
    ];
    for (what, damage) in damages {
        fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
        damage(&feeds);
        let before = srv.count();
        let out = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
        assert_eq!(out.feeds[0].status, FeedStatus::Ok, "{what}");
        assert!(!out.feeds[0].from_cache, "{what}");
        assert!(
            out.warnings.iter().any(|w| w.code == "CACHE_ENTRY_CORRUPT"),
            "{what}: {:?}",
            out.warnings
        );
        assert_eq!(srv.count(), before + 1, "{what}");
        assert!(
            !srv.hits()
                .last()
                .unwrap()
                .headers
                .contains_key("if-none-match"),
            "{what}"
        );
    }
}

fn find(dir: &std::path::Path, ext: &str) -> std::path::PathBuf {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == ext))
        .unwrap()
}

fn truncate_file(dir: &std::path::Path, ext: &str) {
    let path = find(dir, ext);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
}

#[tokio::test]
async fn an_unwritable_cache_directory_degrades_to_no_cache_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let srv = TestServer::start(validating_server(FEED)).await;
    let ctx = context(config(Some(&file)));
    let out = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
    assert_eq!(out.feeds[0].status, FeedStatus::Ok);
    assert!(out.warnings.iter().any(|w| w.code == "CACHE_UNAVAILABLE"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_if_error_serves_the_cached_copy_when_the_origin_fails() {
    let failing = Arc::new(AtomicUsize::new(0));
    let f = failing.clone();
    let srv = TestServer::start(move |_| {
        if f.load(Ordering::SeqCst) == 1 {
            Reply::status(500)
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap().to_owned();
    let url = srv.url("/f");
    let run = |extra: &[&str]| {
        let mut cmd = rss_cmd();
        cmd.args(["fetch", "--cache-dir", &cache, "--stale-if-error"])
            .args(extra)
            .arg(&url);
        cmd.output().unwrap()
    };
    assert!(run(&[]).status.success());
    failing.store(1, Ordering::SeqCst);
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "a stale feed counts as success");
    let doc = json(&out.stdout);
    let feed = &doc["feeds"][0];
    assert_eq!(feed["status"], "stale");
    assert_eq!(feed["from_cache"], true);
    assert!(feed["cached_at"].is_string());
    assert!(feed["cache_age_seconds"].is_u64());
    assert_eq!(feed["items"][0]["title"], "one");
    let warning = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "SERVED_STALE")
        .expect("a SERVED_STALE warning");
    assert!(
        warning["message"].as_str().unwrap().contains("500"),
        "{warning}"
    );

    // A copy fetched before the --since cutoff cannot cover the window.
    let out2 = run(&["--since", "2999-01-01"]);
    let doc = json(&out2.stdout);
    assert_eq!(doc["feeds"][0]["status"], "error");
    assert_eq!(doc["feeds"][0]["error"]["code"], "FEED_FETCH_FAILED");
    assert_eq!(out2.status.code(), Some(4));

    // No copy at all: the origin's error.
    let out = rss_cmd()
        .args([
            "fetch",
            "--cache-dir",
            &cache,
            "--stale-if-error",
            &srv.url("/other"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        json(&out.stdout)["feeds"][0]["error"]["details"]["http_status"],
        500
    );
}

#[tokio::test]
async fn show_finds_an_item_by_id_guid_and_url_after_the_live_feed_dropped_it() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let d = dropped.clone();
    let srv = TestServer::start(move |_| {
        if d.load(Ordering::SeqCst) == 1 {
            Reply::xml("<rss><channel><title>Cached</title><item><title>two</title><link>https://c.example/2</link></item></channel></rss>")
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    let out = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Revalidate)).await;
    let id = out.feeds[0].items[0].id.clone();
    dropped.store(1, Ordering::SeqCst);
    let before = srv.count();
    for key in [id.as_str(), "g-1", "https://c.example/1"] {
        let shown = rss::ops::show_item(&ctx, &srv.url("/f"), key, ShowOptions::default())
            .await
            .unwrap();
        assert_eq!(shown.item.title.as_deref(), Some("one"), "{key}");
        assert!(shown.from_cache);
        assert_eq!(shown.item.content.as_deref(), Some("First"));
    }
    assert_eq!(
        srv.count(),
        before,
        "served from the cache with no network call"
    );
    let live = rss::ops::show_item(
        &ctx,
        &srv.url("/f"),
        "https://c.example/2",
        ShowOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(live.item.title.as_deref(), Some("two"));
    assert!(!live.from_cache);
    let err = rss::ops::show_item(&ctx, &srv.url("/f"), "nope", ShowOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code().as_str(), "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_list_and_clear() {
    let srv = TestServer::start(validating_server(FEED)).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap().to_owned();
    let out = rss_cmd()
        .args([
            "fetch",
            "--cache-dir",
            &cache,
            &srv.url("/a"),
            &srv.url("/b"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let out = rss_cmd()
        .args(["cache", "list", "--cache-dir", &cache])
        .output()
        .unwrap();
    let doc = json(&out.stdout);
    let entries = doc["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["feed_url"], srv.url("/a"));
    assert_eq!(entries[0]["etag"], "\"v1\"");
    assert_eq!(entries[0]["bytes"], FEED.len());
    let out = rss_cmd()
        .args([
            "cache",
            "clear",
            "--older-than",
            "1h",
            "--cache-dir",
            &cache,
        ])
        .output()
        .unwrap();
    assert_eq!(json(&out.stdout)["removed"], 0);
    let out = rss_cmd()
        .args(["cache", "clear", "--cache-dir", &cache])
        .output()
        .unwrap();
    assert_eq!(json(&out.stdout)["removed"], 2);
    let out = rss_cmd()
        .args(["cache", "path", "--cache-dir", &cache])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), cache);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_never_leave_a_torn_entry_for_a_reader() {
    // Every response is a different, self-consistent version of the feed.
    let srv = TestServer::start(|req| {
        let v = req.nth_overall;
        let mut body = format!("<rss><channel><title>v{v}</title>");
        for i in 0..200 {
            body.push_str(&format!("<item><title>v{v}-{i}</title><link>https://c.example/{i}</link><description>{}</description></item>", "x".repeat(900)));
        }
        body.push_str("</channel></rss>");
        Reply::xml(body)
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap().to_owned();
    let url = srv.url("/f");
    assert!(
        rss_cmd()
            .args(["fetch", "--content", "none", "--cache-dir", &cache, &url])
            .output()
            .unwrap()
            .status
            .success()
    );
    let writer = |_: usize| {
        let (cache, url) = (cache.clone(), url.clone());
        std::thread::spawn(move || {
            for _ in 0..50 {
                let out = rss_std(std::path::Path::new(&cache))
                    .args([
                        "fetch",
                        "--no-color",
                        "--content",
                        "none",
                        "--refresh",
                        "--cache-dir",
                        &cache,
                        &url,
                    ])
                    .output()
                    .unwrap();
                assert!(out.status.success());
            }
        })
    };
    let writers: Vec<_> = (0..2).map(writer).collect();
    let mut reads = 0;
    while writers.iter().any(|w| !w.is_finished()) && reads < 400 {
        let out = rss_std(std::path::Path::new(&cache))
            .args([
                "fetch",
                "--content",
                "none",
                "--max-age",
                "1h",
                "--cache-dir",
                &cache,
                &url,
            ])
            .output()
            .unwrap();
        let doc = json(&out.stdout);
        let feed = &doc["feeds"][0];
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .all(|w| w["code"] != "CACHE_ENTRY_CORRUPT"),
            "{}",
            doc["warnings"]
        );
        assert_eq!(
            feed["from_cache"], true,
            "the reader found no complete entry"
        );
        let version = feed["title"].as_str().unwrap().to_owned();
        let items = feed["items"].as_array().unwrap();
        assert_eq!(items.len(), 200);
        assert!(items.iter().all(|i| {
            i["title"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{version}-"))
        }));
        reads += 1;
    }
    for w in writers {
        w.join().unwrap();
    }
    assert!(reads > 5, "only {reads} reads overlapped the writers");
}
