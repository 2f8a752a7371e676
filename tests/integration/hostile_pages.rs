//! Pages written as an attacker writes them, read by `rss article` and by the MCP server at
//! a loopback origin: every one gets an answer (an article or a structured error), the
//! process lives on, and ordinary pages beside them are read as usual.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::{call, payload, spawn_in, structured};

/// Enough words to be an article.
const PARAGRAPH: &str = "The keeper climbed the stairs of the lighthouse every evening at dusk, \
    trimmed the wick, polished the great lens and wrote the weather in the log before the \
    first ship of the night rounded the point and the long watch began again.";

/// The hostile pages, by path.
fn hostile(path: &str) -> Option<Vec<u8>> {
    let page = match path {
        // 30,000 nested spans: a tree walked recursively overflowed a thread's stack.
        "/deep-spans" => format!(
            "<html><body>{}<p>deep words in a deep page. {PARAGRAPH}</p>{}</body></html>",
            "<span>".repeat(30_000),
            "</span>".repeat(30_000)
        ),
        // 12,000 unclosed divs: a tree builder's work grew with the square of the nesting.
        "/deep-divs" => format!(
            "<html><body>{}<p>text at the bottom of the divs. {PARAGRAPH}</p></body></html>",
            "<div>".repeat(12_000)
        ),
        // One attribute of 4 MiB.
        "/huge-attribute" => format!(
            "<html><body><p class=\"{}\">a paragraph under a huge attribute</p></body></html>",
            "a".repeat(4 << 20)
        ),
        // Endless <meta>.
        "/endless-meta" => format!(
            "<html><head>{}</head><body><p>text</p></body></html>",
            "<meta name=\"description\" content=\"x\">".repeat(100_000)
        ),
        // 8 MiB in one paragraph.
        "/one-paragraph" => format!(
            "<html><body><p>{}</p></body></html>",
            "word ".repeat(8 << 18)
        ),
        _ => return None,
    };
    Some(page.into_bytes())
}

fn origin() -> impl Fn(&server::Request) -> Reply + Send + Sync + 'static {
    let story = fixture("articles/story.html");
    move |req: &server::Request| {
        if req.path == "/robots.txt" {
            return Reply::status(404);
        }
        if req.path == "/invalid-utf8" {
            let mut b = b"<html><body><p>".to_vec();
            b.extend((0..200_000u32).map(|i| 0x80 | (i % 0x7f) as u8));
            b.extend_from_slice(b"</p></body></html>");
            return Reply::ok(b, "text/html; charset=utf-8");
        }
        match hostile(&req.path) {
            Some(page) => Reply::ok(page, "text/html"),
            None => Reply::ok(story.clone(), "text/html"),
        }
    }
}

const PATHS: [&str; 6] = [
    "/deep-spans",
    "/deep-divs",
    "/huge-attribute",
    "/endless-meta",
    "/one-paragraph",
    "/invalid-utf8",
];

fn answered(a: &Value) -> bool {
    a["status"] == "ok" || a["error"]["code"].is_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_every_hostile_page_is_answered_and_the_process_lives() {
    let srv = TestServer::start(origin()).await;
    let cache = tempfile::tempdir().unwrap();
    let mut urls: Vec<String> = PATHS.iter().map(|p| srv.url(p)).collect();
    urls.push(srv.url("/story"));
    let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
    cmd.args(["article", "--content", "text", "--format", "json"])
        .args(&urls)
        .stderr(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(300), cmd.output())
        .await
        .expect("rss article finished")
        .unwrap();
    // Exit 0 or 3 (some pages failed), never a signal.
    assert!(matches!(out.status.code(), Some(0 | 3)), "{:?}", out.status);
    let doc = json(&out.stdout);
    let articles = doc["articles"].as_array().unwrap();
    assert_eq!(articles.len(), urls.len());
    for a in articles {
        assert!(answered(a), "{a}");
    }
    let by = |p: &str| &articles[PATHS.iter().position(|x| *x == p).unwrap()];
    assert_eq!(by("/deep-spans")["status"], "ok", "{}", by("/deep-spans"));
    assert!(
        by("/deep-spans")["content"]
            .as_str()
            .unwrap()
            .contains("deep words in a deep page")
    );
    assert!(
        by("/deep-divs")["content"]
            .as_str()
            .unwrap_or_default()
            .contains("text at the bottom of the divs"),
        "{}",
        by("/deep-divs")
    );
    assert_eq!(by("/one-paragraph")["status"], "ok");
    assert_eq!(articles[PATHS.len()]["status"], "ok", "the ordinary page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_an_mcp_server_reads_hostile_pages_and_goes_on_serving() {
    let srv = TestServer::start(origin()).await;
    let cache = tempfile::tempdir().unwrap();
    let server = spawn_in(cache.path(), &[], &[]).await;
    for path in PATHS {
        let r = payload(
            &call(
                &server,
                "fetch_article",
                json!({"url": srv.url(path), "content_format": "none"}),
            )
            .await,
        );
        assert!(answered(&r["articles"][0]), "{path}: {r}");
    }
    // Several at once, beside an ordinary page: each answered, the ordinary one read.
    let r = structured(
        &call(
            &server,
            "fetch_article",
            json!({"urls": [srv.url("/deep-spans"), srv.url("/deep-divs"), srv.url("/story")], "content_format": "text", "cache_policy": "no-cache"}),
        )
        .await,
    );
    assert_eq!(r["articles"][2]["status"], "ok", "{r}");
    assert!(r["articles"][2]["word_count"].as_u64().unwrap() > 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_a_page_read_slowly_holds_up_no_other_page_of_its_host_and_says_why_it_was_cut() {
    // Within the bounds, but seconds of extraction: nested 120 deep over 15,000 elements.
    let heavy = format!(
        "<html><body>{}{}</body></html>",
        "<div>".repeat(120),
        "<div>x words here</div>".repeat(15_000)
    );
    let story = fixture("articles/story.html");
    let srv = TestServer::start(move |req: &server::Request| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        "/heavy" => Reply::ok(heavy.clone(), "text/html"),
        _ => Reply::ok(story.clone(), "text/html"),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let server = spawn_in(cache.path(), &[], &[]).await;
    let r = payload(
        &call(
            &server,
            "fetch_article",
            json!({"urls": [srv.url("/heavy"), srv.url("/story")], "content_format": "none", "timeout_seconds": 4}),
        )
        .await,
    );
    let heavy = &r["articles"][0];
    assert_eq!(heavy["error"]["code"], "EXTRACTION_TIMEOUT", "{r}");
    assert_eq!(heavy["error"]["details"]["cut_by"], "call", "{r}");
    // The other page of the host was read meanwhile, not cut as if its host were pacing.
    assert_eq!(r["articles"][1]["status"], "ok", "{r}");
    assert_eq!(srv.hits_for("/story").len(), 1);
}

/// A host whose every page answers only after 120 s (long past any deadline here): each
/// page sent for holds its place in the window while it waits.
async fn stalled_host() -> TestServer {
    let story = fixture("articles/story.html");
    TestServer::start(move |req: &server::Request| {
        if req.path == "/robots.txt" {
            Reply::status(404)
        } else {
            Reply::ok(story.clone(), "text/html").delay(Duration::from_secs(120))
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_a_call_of_many_slow_pages_leaves_places_for_another_calls_page() {
    let stalled = stalled_host().await;
    let story = fixture("articles/story.html");
    let other = TestServer::start(move |req: &server::Request| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        _ => Reply::ok(story.clone(), "text/html"),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    // Every page of the stalled host sent at once, so only the window holds them back.
    let server = spawn_in(cache.path(), &[], &[("RSS_HOST_CONCURRENCY", "16")]).await;
    let slow: Vec<String> = (0..8).map(|i| stalled.url(&format!("/p{i}"))).collect();
    let heavy = call(
        &server,
        "fetch_article",
        json!({"urls": slow, "content_format": "none", "timeout_seconds": 40}),
    );
    tokio::pin!(heavy);
    // The first call's pages take their share of the window (not all of it).
    tokio::select! {
        _ = &mut heavy => panic!("pages that answer after 120 s cannot be read yet"),
        _ = wait_until("the first call's pages are sent", || stalled.count() == 7) => {}
    }
    let ordinary = call(
        &server,
        "fetch_article",
        json!({"url": other.url("/story"), "content_format": "none"}),
    );
    // Before, the window's every place held a stalled page and this page waited for the
    // first call's deadline.
    let r = tokio::select! {
        _ = &mut heavy => panic!("the other call's page waited for this call's deadline"),
        r = ordinary => payload(&r),
    };
    assert_eq!(r["articles"][0]["status"], "ok", "{r}");
    // Its robots.txt and six pages: a call holds at most its share.
    assert_eq!(stalled.count(), 7, "a call holds at most its share");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_a_page_cut_while_it_waits_behind_its_calls_other_pages_says_so() {
    let stalled = stalled_host().await;
    let cache = tempfile::tempdir().unwrap();
    let server = spawn_in(cache.path(), &[], &[("RSS_HOST_CONCURRENCY", "16")]).await;
    let urls: Vec<String> = (0..7).map(|i| stalled.url(&format!("/p{i}"))).collect();
    let r = payload(
        &call(
            &server,
            "fetch_article",
            json!({"urls": urls, "content_format": "none", "timeout_seconds": 3}),
        )
        .await,
    );
    let queued: Vec<&Value> = r["articles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["error"]["details"]["cut_by"] == "queue")
        .collect();
    assert_eq!(queued.len(), 1, "{r}");
    assert_eq!(queued[0]["error"]["code"], "EXTRACTION_TIMEOUT", "{r}");
    // Never sent for: it waited behind the six its call had in flight, not for its host
    // (the seventh request is the host's robots.txt).
    assert_eq!(stalled.count(), 7);
    assert_eq!(stalled.hits_for("/robots.txt").len(), 1);
}
