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
async fn issue_27_a_bare_304_keeps_the_copys_freshness_and_must_revalidate() {
    // The 200 says max-age=300 and must-revalidate; the 304 says neither; then the origin
    // fails.
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let fails = failing.clone();
    let srv = TestServer::start(move |req: &server::Request| {
        if fails.load(Ordering::SeqCst) {
            Reply::status(500)
        } else if req.header("if-none-match") == Some("\"v1\"") {
            Reply::status(304).header("ETag", "\"v1\"")
        } else {
            Reply::xml(FEED)
                .header("ETag", "\"v1\"")
                .header("Cache-Control", "max-age=300, must-revalidate")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Fresh)).await;
    let refreshed = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Refresh)).await;
    assert_eq!(refreshed.feeds[0].status, FeedStatus::NotModified);
    assert!(
        refreshed.feeds[0].fresh_until.is_some(),
        "still fresh after the 304"
    );
    // Within the stored max-age: served with no request.
    let again = fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Fresh)).await;
    assert_eq!(again.feeds[0].status, FeedStatus::Ok);
    assert_eq!(again.feeds[0].attempts, 0);
    assert_eq!(srv.hits().len(), 2);
    // must-revalidate survived the 304: a failing origin is not answered with the copy.
    failing.store(true, Ordering::SeqCst);
    let out = fetch(
        &ctx,
        &[srv.url("/f")],
        &FetchOptions {
            stale_if_error: true,
            ..opts(CacheMode::Refresh)
        },
    )
    .await;
    assert_eq!(out.feeds[0].status, FeedStatus::Error);
    assert_eq!(srv.hits().len(), 3);
}

#[tokio::test]
async fn no_cache_neither_reads_nor_writes() {
    let srv = TestServer::start(validating_server(FEED)).await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    fetch(&ctx, &[srv.url("/f")], &opts(CacheMode::Off)).await;
    assert_eq!(files_under(&dir.path().join("feeds")).len(), 0);
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
        ("truncated body", Box::new(|p| truncate_file(p, "entry"))),
        (
            "garbage metadata",
            Box::new(|p| std::fs::write(find(p, "entry"), b"{not json\n<rss/>").unwrap()),
        ),
        (
            "hash mismatch",
            Box::new(|p| {
                let entry = find(p, "entry");
                let mut bytes = std::fs::read(&entry).unwrap();
                let last = bytes.len() - 10;
                bytes[last] ^= 0x20;
                std::fs::write(entry, bytes).unwrap();
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
    files_under(dir)
        .into_iter()
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

/// A feed of about `size` bytes.
fn sized_feed(size: usize) -> String {
    let pad = "x".repeat(size.saturating_sub(120));
    format!(
        "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link><description>{pad}</description></item></channel></rss>"
    )
}

/// Bytes of every file under `dir`, as the file system counts them.
fn walk_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.file_type().unwrap().is_dir() {
                walk_bytes(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

fn cache_list(cache: &std::path::Path) -> serde_json::Value {
    let out = rss_std(cache).args(["cache", "list"]).output().unwrap();
    assert!(out.status.success());
    json(&out.stdout)
}

#[test]
fn the_cap_evicts_the_least_recently_fetched_entry_and_never_the_one_written() {
    let dir = tempfile::tempdir().unwrap();
    let cache = rss::internals::Cache::open(dir.path())
        .unwrap()
        .with_max_bytes(25_000);
    let body = sized_feed(10_000);
    for name in ["a", "b", "c"] {
        let url = format!("https://x.example/{name}.xml");
        let req = rss::internals::StoreRequest {
            received_ms: 0,
            freshness: Default::default(),
            feed_url: &url,
            final_url: &url,
            etag: None,
            last_modified: None,
            content_type: None,
            ..Default::default()
        };
        cache.store(&req, &body.as_bytes().into()).unwrap();
    }
    let (entries, _, total) = cache.list();
    let urls: Vec<&str> = entries.iter().map(|e| e.0.feed_url.as_str()).collect();
    assert_eq!(urls, ["https://x.example/b.xml", "https://x.example/c.xml"]);
    assert!(total <= 25_000, "{total}");
    // One entry larger than the cap stays: the entry being written is never evicted.
    let big = sized_feed(40_000);
    let url = "https://x.example/big.xml";
    let req = rss::internals::StoreRequest {
        received_ms: 0,
        freshness: Default::default(),
        feed_url: url,
        final_url: url,
        etag: None,
        last_modified: None,
        content_type: None,
        ..Default::default()
    };
    cache.store(&req, &big.as_bytes().into()).unwrap();
    let (entries, _, _) = cache.list();
    let urls: Vec<&str> = entries.iter().map(|e| e.0.feed_url.as_str()).collect();
    assert_eq!(urls, [url]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cap_holds_under_concurrent_writers_and_the_listed_total_is_the_directory() {
    let body = sized_feed(20_000);
    let srv = TestServer::start(move |_| Reply::xml(body.clone())).await;
    let cache = tempfile::tempdir().unwrap();
    let runs: Vec<_> = (0..4)
        .map(|p| {
            let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
            cmd.args(["fetch", "--cache-max-bytes", "150000", "--content", "none"])
                .args((0..10).map(|i| srv.url(&format!("/p{p}-{i}.xml"))))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(120), cmd.status())
                    .await
                    .unwrap()
                    .unwrap()
            })
        })
        .collect();
    for r in runs {
        assert!(r.await.unwrap().success());
    }
    let on_disk = walk_bytes(cache.path());
    assert!(on_disk <= 150_000, "{on_disk} bytes on disk");
    let list = cache_list(cache.path());
    assert_eq!(
        list["total_bytes"].as_u64().unwrap(),
        walk_bytes(cache.path())
    );
    let entries = list["entries"].as_array().unwrap();
    assert!(
        entries.len() >= 5 && entries.len() < 40,
        "{}",
        entries.len()
    );
    let sum: u64 = entries
        .iter()
        .map(|e| e["disk_bytes"].as_u64().unwrap())
        .sum();
    assert!(sum <= list["total_bytes"].as_u64().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_each_write_of_an_entry_leaves_one_file_and_it_is_counted_on_disk() {
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    let srv = TestServer::start(move |_| {
        let i = c.fetch_add(1, Ordering::SeqCst);
        Reply::xml(sized_feed(5_000 + i))
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        let out = rss_std(cache.path())
            .args(["fetch", "--refresh", &srv.url("/f.xml")])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let list = cache_list(cache.path());
    let entry = &list["entries"][0];
    // One file: the last body and its metadata line.
    let disk = entry["disk_bytes"].as_u64().unwrap();
    let body = entry["bytes"].as_u64().unwrap();
    assert!(
        body < 5_100 && disk > body && disk < body + 2_000,
        "{entry}"
    );
    assert_eq!(files_under(&cache.path().join("feeds")).len(), 1);
    assert_eq!(
        list["total_bytes"].as_u64().unwrap(),
        walk_bytes(cache.path())
    );
}
