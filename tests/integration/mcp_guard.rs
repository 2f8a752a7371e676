//! The MCP server as something an untrusted prompt drives: it reads no local files unless
//! told to, answers huge inputs briefly, and keeps every result within its token budget.

use serde_json::json;

use crate::helpers::*;
use crate::mcp::{call, error_object, spawn_with, structured};

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_reads_no_local_file_by_default_and_reveals_nothing_about_paths() {
    let s = spawn_with(&[], &[]).await;
    let real = fixture_path("rss20.xml");
    let mut answers = Vec::new();
    for path in [
        real.to_str().unwrap().to_owned(),
        "/no/such/file.xml".to_owned(),
        format!("file://{}", real.display()),
    ] {
        let err = error_object(&call(&s, "fetch_feed", json!({ "url": path })).await);
        assert_eq!(err["code"], "INVALID_URL", "{err}");
        answers.push(err["message"].as_str().unwrap().replace(&path, "P"));
    }
    assert_eq!(
        answers[0], answers[1],
        "an existing and a missing path answer alike"
    );
    let err =
        error_object(&call(&s, "get_item", json!({"feed_url": "/dev/zero", "id": "x"})).await);
    assert_eq!(err["code"], "INVALID_URL");
    let err = error_object(&call(&s, "discover_feeds", json!({"site_url": "/etc/hostname"})).await);
    assert_eq!(err["code"], "INVALID_URL");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_files_opens_one_directory_tree_and_nothing_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let feeds = dir.path().join("feeds");
    std::fs::create_dir(&feeds).unwrap();
    std::fs::write(feeds.join("a.xml"), FEED).unwrap();
    std::fs::write(dir.path().join("outside.xml"), FEED).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.xml"), feeds.join("escape.xml")).unwrap();
    let s = spawn_with(&["--allow-files", feeds.to_str().unwrap()], &[]).await;
    let ok = call(
        &s,
        "fetch_feed",
        json!({"url": feeds.join("a.xml").to_str().unwrap()}),
    )
    .await;
    assert_eq!(structured(&ok)["feeds"][0]["status"], "ok");
    let relative = call(&s, "fetch_feed", json!({"url": "a.xml"})).await;
    assert_eq!(structured(&relative)["feeds"][0]["status"], "ok");
    for bad in [
        dir.path().join("outside.xml").to_str().unwrap().to_owned(),
        format!("{}/../outside.xml", feeds.display()),
        "escape.xml".to_owned(),
        "/etc/hostname".to_owned(),
    ] {
        let err = error_object(&call(&s, "fetch_feed", json!({ "url": bad })).await);
        assert_eq!(err["code"], "INVALID_URL", "{bad}: {err}");
    }
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_megabyte_url_gets_a_short_answer() {
    let s = spawn_with(&[], &[]).await;
    let huge = format!("ftp://{}", "x".repeat(10_000_000));
    let r = call(&s, "fetch_feed", json!({ "url": huge })).await;
    let err = error_object(&r);
    assert_eq!(err["code"], "INVALID_URL");
    let size = err.to_string().len();
    assert!(size < 4_000, "the error is {size} bytes");
    s.client.cancel().await.unwrap();
}

fn big_feed(items: usize, body_words: usize) -> String {
    let mut body = String::from("<rss><channel><title>Big</title>");
    for i in 0..items {
        body.push_str(&format!(
            "<item><title>Item {i}</title><link>https://x.example/{i}</link><description>{}</description></item>",
            "word ".repeat(body_words)
        ));
    }
    body.push_str("</channel></rss>");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_item_keeps_to_its_budget_and_its_cut_continues() {
    let srv = TestServer::with_routes(vec![("/one", Reply::xml(big_feed(1, 200_000)))]).await;
    let s = spawn_with(&[], &[]).await;
    let listing = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/one"), "content_format": "none", "max_content_chars": 10}),
    )
    .await;
    let id = structured(&listing)["feeds"][0]["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Over the default budget, the body comes cut at a paragraph, within the budget, with
    // where the rest starts; that rest is the same tool's `offset`.
    let r = call(
        &s,
        "get_item",
        json!({"feed_url": srv.url("/one"), "id": id}),
    )
    .await;
    let out = structured(&r);
    assert!(rss::internals::estimate_tokens(&serde_json::to_string(&out).unwrap()) <= 10_000);
    assert_eq!(out["item"]["content_truncated"], true);
    let next = out["item"]["next_offset"].as_u64().unwrap();
    let r = call(
        &s,
        "get_item",
        json!({"feed_url": srv.url("/one"), "id": id, "offset": next, "max_content_chars": 100}),
    )
    .await;
    let rest = structured(&r);
    assert_eq!(
        rest["item"]["content"].as_str().unwrap().chars().count(),
        100
    );
    assert_eq!(rest["item"]["next_offset"].as_u64(), Some(next + 100));
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_over_the_budget_comes_in_pages_not_a_refusal() {
    // 5,000 items: even with no content at all, the listing passes the budget.
    let srv = TestServer::with_routes(vec![("/many", Reply::xml(big_feed(5_000, 400)))]).await;
    let s = spawn_with(&[], &[]).await;
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/many"), "limit": 5000, "content_format": "none"}),
    )
    .await;
    let page = structured(&r);
    let n = page["feeds"][0]["item_count"].as_u64().unwrap();
    assert!(n > 10, "{n} items");
    assert_eq!(page["truncation"]["items_on_later_pages"], 5_000 - n);
    assert!(page["next_cursor"].is_string());
    s.client.cancel().await.unwrap();
}
