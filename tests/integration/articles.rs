//! `rss article`, `fetch --articles` and the MCP `fetch_article` tool at loopback origins:
//! what each page is said to be, what the origin saw (request counts, spacing, bytes), and
//! robots.txt.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::hosts::fetch_in;
use crate::mcp::{call, spawn_in, structured};

fn page(name: &str) -> Vec<u8> {
    fixture(&format!("articles/{name}"))
}

fn html(body: Vec<u8>) -> Reply {
    Reply::ok(body, "text/html; charset=utf-8")
}

/// `rss article ARGS` in the cache directory `cache`.
async fn article_in(cache: &std::path::Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut cmd = tokio::process::Command::from(rss_std(cache));
    cmd.arg("article")
        .args(args)
        .stderr(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("rss article finished")
        .unwrap();
    (out.status.code(), json(&out.stdout))
}

fn code(doc: &Value, i: usize) -> Value {
    doc["articles"][i]["error"]["code"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_are_articles_or_say_what_they_are() {
    let pdf = {
        let mut b = b"%PDF-1.7\n".to_vec();
        b.resize(40 << 20, b'x');
        b
    };
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/story" => html(page("story.html")),
        "/index" => html(page("index.html")),
        "/feed" => Reply::xml(fixture("rss20.xml")),
        "/paper.pdf" => Reply::ok(pdf.clone(), "application/pdf"),
        "/unlabelled" => Reply::ok(b"%PDF-1.4 tiny".to_vec(), "text/html"),
        "/legacy" => Reply::ok(page("cp1251.html"), "text/html"),
        "/huge" => html(vec![b' '; 40 << 20]),
        "/gone" => Reply::status(404),
        _ => Reply::status(404),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let urls: Vec<String> = [
        "/story",
        "/index",
        "/feed",
        "/paper.pdf",
        "/unlabelled",
        "/legacy",
        "/huge",
        "/gone",
    ]
    .iter()
    .map(|p| srv.url(p))
    .collect();
    let mut args: Vec<&str> = vec!["--content", "text"];
    args.extend(urls.iter().map(String::as_str));
    let (exit, doc) = article_in(cache.path(), &args).await;
    assert_eq!(exit, Some(3), "some pages failed: {doc}");
    let story = &doc["articles"][0];
    assert_eq!(story["status"], "ok");
    assert_eq!(story["title"], "The lighthouse keepers of Skerry Point");
    assert_eq!(story["final_url"], srv.url("/story"));
    assert!(
        story["content"]
            .as_str()
            .unwrap()
            .contains("ninety-one years")
    );
    assert_eq!(code(&doc, 1), "NO_READABLE_CONTENT");
    assert_eq!(doc["articles"][1]["error"]["details"]["readerable"], false);
    assert_eq!(code(&doc, 2), "NOT_AN_ARTICLE");
    assert!(
        doc["articles"][2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("` reads it as a feed")
    );
    assert_eq!(code(&doc, 3), "UNSUPPORTED_CONTENT");
    assert_eq!(
        doc["articles"][3]["error"]["details"]["content_type"],
        "application/pdf"
    );
    assert_eq!(code(&doc, 4), "UNSUPPORTED_CONTENT");
    assert_eq!(doc["articles"][5]["status"], "ok");
    assert_eq!(doc["articles"][5]["title"], "Маяк на мысе");
    assert_eq!(code(&doc, 6), "RESPONSE_TOO_LARGE");
    assert_eq!(code(&doc, 7), "PAGE_FETCH_FAILED");
    assert_eq!(doc["articles"][7]["error"]["url"], srv.url("/gone"));
    assert_eq!(doc["errors"].as_array().unwrap().len(), 6);
    // The PDF was refused from its header: its body was never read to the end.
    let pdf_hit = &srv.hits_for("/paper.pdf")[0];
    assert!(
        pdf_hit.client_hung_up || pdf_hit.bytes_sent < 40 << 20,
        "{} bytes went out",
        pdf_hit.bytes_sent
    );
    // Pages are cached as pages: `rss cache list` says so, and a second run revalidates.
    let listed = json(
        &rss_std(cache.path())
            .args(["cache", "list"])
            .output()
            .unwrap()
            .stdout,
    );
    let kinds: Vec<&str> = listed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"page") && !kinds.contains(&"feed"),
        "{listed}"
    );
    let (_, again) = article_in(cache.path(), &["--max-age", "1h", &urls[0]]).await;
    assert_eq!(again["articles"][0]["from_cache"], true);
    assert_eq!(
        srv.hits_for("/story").len(),
        1,
        "a fresh copy is served with no request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_txt_is_honoured_for_model_reads_and_its_crawl_delay_spaces_the_host() {
    let robots = Arc::new(std::sync::Mutex::new((200u16, String::new())));
    let r = robots.clone();
    let srv = TestServer::start(move |req| {
        if req.path == "/robots.txt" {
            let (status, body) = r.lock().unwrap().clone();
            return Reply::Full {
                status,
                headers: vec![("Content-Type".into(), "text/plain".into())],
                body: body.into_bytes(),
                delay: Duration::ZERO,
            };
        }
        html(page("story.html"))
    })
    .await;
    *robots.lock().unwrap() = (
        200,
        "User-agent: *\nDisallow: /private\nCrawl-delay: 1\n".to_owned(),
    );
    let cache = tempfile::tempdir().unwrap();
    let (exit, doc) = article_in(
        cache.path(),
        &[
            "--respect-robots",
            &srv.url("/private/a"),
            &srv.url("/open/a"),
            &srv.url("/open/b"),
        ],
    )
    .await;
    assert_eq!(exit, Some(3), "{doc}");
    assert_eq!(code(&doc, 0), "ROBOTS_DISALLOWED");
    assert_eq!(
        doc["articles"][0]["error"]["details"]["rule"],
        "Disallow: /private"
    );
    assert_eq!(doc["articles"][1]["status"], "ok");
    assert_eq!(doc["articles"][2]["status"], "ok");
    assert!(
        srv.hits_for("/private/a").is_empty(),
        "a disallowed page is never asked for"
    );
    assert_eq!(
        srv.hits_for("/robots.txt").len(),
        1,
        "one robots.txt for the host"
    );
    // The crawl delay spaced the two pages' starts by a second. The gate spaces the sends'
    // starts; the first one's arrival also holds a new connection's setup (the second
    // reuses it), so the gap seen here may come out that much short of the second.
    let a = srv.hits_for("/open/a")[0].arrived;
    let b = srv.hits_for("/open/b")[0].arrived;
    let gap = if b > a { b - a } else { a - b };
    assert!(gap >= Duration::from_millis(900), "{gap:?}");
    let hosts = json(&rss_std(cache.path()).arg("hosts").output().unwrap().stdout);
    assert_eq!(hosts["hosts"][0]["crawl_delay_ms"], 1000, "{hosts}");
    // Without --respect-robots (a person's CLI run) the robots.txt is not read.
    let (exit, _) = article_in(
        tempfile::tempdir().unwrap().path(),
        &[&srv.url("/private/b")],
    )
    .await;
    assert_eq!(exit, Some(0));
    assert_eq!(srv.hits_for("/robots.txt").len(), 1);

    // A 404 allows everything; a 500 disallows the host for now, and says so.
    for (status, expect_ok) in [(404u16, true), (500, false)] {
        *robots.lock().unwrap() = (status, String::new());
        let fresh = tempfile::tempdir().unwrap();
        let (_, doc) =
            article_in(fresh.path(), &["--respect-robots", &srv.url("/private/c")]).await;
        if expect_ok {
            assert_eq!(doc["articles"][0]["status"], "ok", "{status}: {doc}");
        } else {
            assert_eq!(code(&doc, 0), "ROBOTS_DISALLOWED", "{status}: {doc}");
            let msg = doc["articles"][0]["error"]["message"].as_str().unwrap();
            assert!(msg.contains("could not be read"), "{msg}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_host_serving_a_feed_and_its_articles_is_never_provoked() {
    // One request a second, 429 with Retry-After: 1 past it; a feed of four items whose
    // pages are on the same host.
    let last: Arc<std::sync::Mutex<Option<std::time::Instant>>> = Default::default();
    let refused = Arc::new(AtomicUsize::new(0));
    let (l, rf) = (last.clone(), refused.clone());
    let srv = TestServer::start(move |req| {
        let now = std::time::Instant::now();
        let mut last = l.lock().unwrap();
        if last.is_some_and(|t| now - t < Duration::from_secs(1)) {
            rf.fetch_add(1, Ordering::SeqCst);
            return Reply::status(429).header("Retry-After", "1");
        }
        *last = Some(now);
        if req.path == "/feed" {
            let items: String = (0..4)
                .map(|i| format!("<item><title>Story {i}</title><link>/story/{i}</link></item>"))
                .collect();
            Reply::xml(format!(
                "<rss><channel><title>Coast</title>{items}</channel></rss>"
            ))
        } else {
            html(page("story.html"))
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let (exit, doc) = fetch_in(
        cache.path(),
        &["--no-cache".into(), "--articles".into(), srv.url("/feed")],
    )
    .await;
    assert_eq!(exit, Some(0), "{doc}");
    let items = doc["feeds"][0]["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    for it in items {
        assert_eq!(it["article"]["status"], "ok", "{it}");
        assert_eq!(
            it["article"]["title"],
            "The lighthouse keepers of Skerry Point"
        );
    }
    // The first refusal teaches the host; none after it.
    assert!(
        refused.load(Ordering::SeqCst) <= 1,
        "{} refusals",
        refused.load(Ordering::SeqCst)
    );
    assert_eq!(srv.count(), 5 + refused.load(Ordering::SeqCst));
    assert_eq!(srv.max_in_flight(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_article_comes_in_parts_the_rest_from_the_cache() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        _ => html(page("story.html")),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let server = spawn_in(cache.path(), &[], &[]).await;
    let ask = |offset: Option<u64>| json!({"url": srv.url("/story"), "content_format": "text", "max_response_tokens": 400, "offset": offset});
    let first = structured(&call(&server, "fetch_article", ask(None)).await);
    let a = &first["articles"][0];
    assert_eq!(a["status"], "ok", "{first}");
    assert_eq!(a["content_truncated"], true);
    let next = a["next_offset"].as_u64().unwrap();
    let part1 = a["content"].as_str().unwrap().to_owned();
    // Cut at a paragraph: the part ends with a break.
    assert!(part1.ends_with('\n'), "{part1:?}");
    let pages = srv.hits_for("/story").len();
    let mut parts = vec![part1];
    let mut offset = Some(next);
    for _ in 0..30 {
        let Some(o) = offset else { break };
        let r = structured(&call(&server, "fetch_article", ask(Some(o))).await);
        let a = &r["articles"][0];
        assert_eq!(a["from_cache"], true);
        parts.push(a["content"].as_str().unwrap().to_owned());
        offset = a["next_offset"].as_u64();
    }
    assert_eq!(offset, None, "the article ends within thirty parts");
    assert_eq!(
        srv.hits_for("/story").len(),
        pages,
        "the next parts sent no request"
    );
    // The parts put together are the article.
    let whole = structured(&call(&server, "fetch_article", json!({"url": srv.url("/story"), "content_format": "text", "max_response_tokens": 25000})).await);
    assert_eq!(
        parts.concat(),
        whole["articles"][0]["content"].as_str().unwrap()
    );
    // The server read robots.txt (a 404: every page allowed).
    assert_eq!(srv.hits_for("/robots.txt").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_feed_with_articles_shares_one_token_budget() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        "/feed" => {
            let items: String = (0..3)
                .map(|i| format!("<item><title>Story {i}</title><link>/story/{i}</link></item>"))
                .collect();
            Reply::xml(format!(
                "<rss><channel><title>Coast</title>{items}</channel></rss>"
            ))
        }
        _ => html(page("story.html")),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let server = spawn_in(cache.path(), &[], &[]).await;
    // Each item with its article is over the budget alone: one item a page, its article
    // cut at a paragraph (the rest with fetch_article's offset), and the pages continue
    // from the cache, with no second request for the feed or any page.
    let mut cursor: Option<String> = None;
    let mut titles = Vec::new();
    for _ in 0..3 {
        let mut a = json!({"url": srv.url("/feed"), "articles": true, "max_response_tokens": 800});
        if let Some(c) = &cursor {
            a["cursor"] = json!(c);
        }
        let out = structured(&call(&server, "fetch_feed", a).await);
        let text = serde_json::to_string(&out).unwrap();
        assert!(text.len() / 4 <= 800, "{} tokens", text.len() / 4);
        let items = out["feeds"][0]["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        let a = &items[0]["article"];
        assert_eq!(a["status"], "ok", "{a}");
        assert_eq!(a["content_truncated"], true, "{a}");
        assert!(a["next_offset"].as_u64().is_some());
        titles.push(items[0]["title"].as_str().unwrap().to_owned());
        cursor = out["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(cursor, None);
    assert_eq!(titles, ["Story 0", "Story 1", "Story 2"]);
    assert_eq!(srv.hits_for("/feed").len(), 1);
    for i in 0..3 {
        assert_eq!(srv.hits_for(&format!("/story/{i}")).len(), 1);
    }
}
