//! Issue 27, the page reads' own rules: a document's links are followed over http(s) only,
//! a server's numbers never panic, and robots.txt holds on every redirect hop, through
//! percent-encoding, for at most a day, under the cache flags, with its `Crawl-delay` from
//! the first page and across a site's hosts. Proven by what the loopback origins saw.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::helpers::server::{Hit, Request};
use crate::helpers::*;
use crate::mcp::{call, error_object, spawn_with, structured};

const CANARY: &str = "the-secret-canary-4471";

fn html_page() -> Reply {
    Reply::ok(fixture("articles/story.html"), "text/html; charset=utf-8")
}

fn text_reply(body: &str) -> Reply {
    Reply::ok(body.as_bytes().to_vec(), "text/plain")
}

/// `rss ARGS` in the cache directory `cache` (global flags first): exit code and stdout.
async fn run_in(cache: &std::path::Path, args: &[&str]) -> (Option<i32>, Value) {
    let mut cmd = tokio::process::Command::from(rss_std(cache));
    cmd.args(args).stderr(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("rss finished")
        .unwrap();
    assert_ne!(out.status.code(), Some(101), "rss panicked");
    (out.status.code(), json(&out.stdout))
}

fn article_code(doc: &Value, i: usize) -> &Value {
    &doc["articles"][i]["error"]["code"]
}

/// A robots.txt body that the test can change between runs, with its headers.
type Robots = Arc<Mutex<(u16, String, Vec<(String, String)>)>>;

fn robots_reply(r: &Robots, req: &Request) -> Reply {
    let (status, body, headers) = r.lock().unwrap().clone();
    let etag = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("etag"))
        .map(|(_, v)| v.clone());
    if etag.is_some() && req.header("if-none-match") == etag.as_deref() {
        let mut reply = Reply::status(304);
        for (k, v) in &headers {
            reply = reply.header(k, v);
        }
        return reply;
    }
    let mut reply = Reply::Full {
        status,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: body.into_bytes(),
        delay: Duration::ZERO,
    };
    for (k, v) in &headers {
        reply = reply.header(k, v);
    }
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_a_feeds_file_link_is_an_error_and_no_local_file_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.html");
    std::fs::write(
        &secret,
        format!(
            "<html><body><article><h1>Secret</h1><p>{CANARY} {}</p></article></body></html>",
            "word ".repeat(200)
        ),
    )
    .unwrap();
    let file_link = url::Url::from_file_path(&secret).unwrap().to_string();
    let feed = format!(
        "<rss><channel><title>T</title>\
         <item><title>file</title><link>{file_link}</link></item>\
         <item><title>ftp</title><link>ftp://files.example/x.html</link></item>\
         </channel></rss>"
    );
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/feed" => Reply::xml(feed.clone()),
        _ => Reply::status(404),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let (_, doc) = run_in(
        cache.path(),
        &["fetch", "--articles", "--no-cache", &srv.url("/feed")],
    )
    .await;
    let text = doc.to_string();
    assert!(!text.contains(CANARY), "the local file was read: {text}");
    let items = doc["feeds"][0]["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{doc}");
    for (item, scheme) in items.iter().zip(["file", "ftp"]) {
        let a = &item["article"];
        assert_eq!(a["status"], "error", "{a}");
        assert_eq!(a["error"]["code"], "INVALID_URL", "{a}");
        let msg = a["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(&format!("\"{scheme}\"")) && msg.contains("http(s)"),
            "{msg}"
        );
    }

    // MCP `get_item` with `article: true`, even with the file's directory allowed.
    let s = spawn_with(&["--allow-files", dir.path().to_str().unwrap()], &[]).await;
    let r = call(
        &s,
        "get_item",
        json!({"feed_url": srv.url("/feed"), "id": file_link, "article": true}),
    )
    .await;
    let out = structured(&r);
    assert!(!out.to_string().contains(CANARY), "{out}");
    assert_eq!(
        out["item"]["article"]["error"]["code"], "INVALID_URL",
        "{out}"
    );
    assert!(
        out["item"]["article"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"file\""),
        "{out}"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_numbers_a_server_sends_are_capped_and_never_panic() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => text_reply("User-agent: *\nCrawl-delay: 1e20\n")
            .header("Cache-Control", "max-age=18446744073709551615"),
        "/feed" => Reply::xml(fixture("rss20.xml"))
            .header("Age", "18446744073709551615")
            .header("X-RateLimit-Remaining", "5")
            .header("X-RateLimit-Reset", "1e300")
            .header("Cache-Control", "max-age=99999999999999999999"),
        "/limited" => Reply::xml(fixture("rss20.xml"))
            .header("RateLimit-Policy", "\"p\";q=10;w=999999999999999")
            .header("RateLimit", "\"p\";r=3;t=999999999999999"),
        "/slow-down" => Reply::status(429).header("Retry-After", "99999999999999999999999"),
        _ => html_page(),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    // The delay is capped (at --max-cooldown, 60 s): the page after the robots.txt is
    // answered at once as held back for that long, not after 10^20 s or a panic.
    let (_, doc) = run_in(
        cache.path(),
        &[
            "--max-gate-wait",
            "5",
            "article",
            "--respect-robots",
            &srv.url("/story"),
        ],
    )
    .await;
    let err = &doc["articles"][0]["error"];
    assert_eq!(err["code"], "RATE_LIMITED", "{doc}");
    let wait = err["details"]["retry_after_seconds"].as_u64().unwrap();
    assert!((55..=60).contains(&wait), "{doc}");
    assert!(srv.hits_for("/story").is_empty());
    // Each run on a cache (and host state) of its own: the capped delay above holds the
    // loopback host for a minute.
    let cache = tempfile::tempdir().unwrap();
    let (exit, doc) = run_in(
        cache.path(),
        &["fetch", &srv.url("/feed"), &srv.url("/limited")],
    )
    .await;
    assert_eq!(exit, Some(0), "{doc}");
    let cache = tempfile::tempdir().unwrap();
    let (_, doc) = run_in(
        cache.path(),
        &["--max-gate-wait", "1", "fetch", &srv.url("/slow-down")],
    )
    .await;
    assert_eq!(doc["feeds"][0]["error"]["code"], "RATE_LIMITED", "{doc}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_every_redirect_hop_is_checked_against_its_own_hosts_robots_txt() {
    // K disallows everything; J allows everything and redirects to K.
    let k = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => text_reply("User-agent: *\nDisallow: /\n"),
        _ => html_page(),
    })
    .await;
    let k_secret = k.url("/secret");
    let j = TestServer::start(move |req| match req.path.as_str() {
        "/robots.txt" => text_reply("User-agent: *\nDisallow: /private\n"),
        "/go" => Reply::status(302).header("Location", "/private/x"),
        "/hop" => Reply::status(302).header("Location", &k_secret),
        "/fine" => Reply::status(301).header("Location", "/open/page"),
        _ => html_page(),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let (exit, doc) = run_in(
        cache.path(),
        &[
            "article",
            "--respect-robots",
            &j.url("/go"),
            &j.url("/hop"),
            &j.url("/fine"),
        ],
    )
    .await;
    assert_eq!(exit, Some(3), "{doc}");
    assert_eq!(article_code(&doc, 0), "ROBOTS_DISALLOWED", "{doc}");
    assert_eq!(
        doc["articles"][0]["error"]["details"]["rule"],
        "Disallow: /private"
    );
    assert_eq!(article_code(&doc, 1), "ROBOTS_DISALLOWED", "{doc}");
    assert_eq!(
        doc["articles"][1]["error"]["details"]["robots_url"],
        k.url("/robots.txt")
    );
    assert_eq!(doc["articles"][2]["status"], "ok", "{doc}");
    assert_eq!(doc["articles"][2]["final_url"], j.url("/open/page"));
    assert!(
        j.hits_for("/private/x").is_empty(),
        "a disallowed hop was asked for"
    );
    assert!(
        k.hits_for("/secret").is_empty(),
        "a disallowed hop was asked for"
    );
    assert_eq!(k.hits_for("/robots.txt").len(), 1);
    assert_eq!(k.count(), 1, "K saw only its robots.txt");
    assert_eq!(j.hits_for("/robots.txt").len(), 1);
    assert_eq!(j.hits_for("/go").len(), 1);
    assert_eq!(j.hits_for("/hop").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_percent_encoding_does_not_slip_past_the_rules() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => text_reply("User-agent: *\nDisallow: /private\nDisallow: /%7Ejoe/\n"),
        _ => html_page(),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let (exit, doc) = run_in(
        cache.path(),
        &[
            "article",
            "--respect-robots",
            &srv.url("/%70rivate/page"),
            &srv.url("/~joe/notes"),
            &srv.url("/%7ejoe/other"),
            &srv.url("/public/%70age"),
        ],
    )
    .await;
    assert_eq!(exit, Some(3), "{doc}");
    for i in 0..3 {
        assert_eq!(article_code(&doc, i), "ROBOTS_DISALLOWED", "{i}: {doc}");
    }
    assert_eq!(doc["articles"][3]["status"], "ok", "{doc}");
    assert_eq!(
        srv.count(),
        2,
        "only robots.txt and the public page were asked for"
    );
}

/// Moves every robots.txt entry of the cache at `dir` `by` into the past, as if it had been
/// fetched (and last confirmed) that long ago.
fn age_robots_entries(dir: &std::path::Path, by: Duration) {
    let mut n = 0;
    for path in files_under(&dir.join("robots")) {
        if path.extension().is_none_or(|x| x != "entry") {
            continue;
        }
        let whole = std::fs::read(&path).unwrap();
        let split = whole.iter().position(|&b| b == b'\n').unwrap();
        let (line, body) = whole.split_at(split);
        let mut meta: Value = serde_json::from_slice(line).unwrap();
        let ms = by.as_millis() as u64;
        let received = meta["received_ms"].as_u64().unwrap();
        meta["received_ms"] = json!(received - ms);
        let fetched = chrono::DateTime::parse_from_rfc3339(meta["fetched_at"].as_str().unwrap())
            .unwrap()
            - chrono::Duration::milliseconds(ms as i64);
        meta["fetched_at"] = json!(fetched.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
        let mut aged = serde_json::to_vec(&meta).unwrap();
        aged.extend_from_slice(body);
        std::fs::write(&path, aged).unwrap();
        n += 1;
    }
    assert_eq!(n, 1, "one robots.txt entry");
}

fn robots_entries(dir: &std::path::Path) -> usize {
    files_under(&dir.join("robots"))
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "entry"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_a_cached_robots_txt_is_asked_again_after_a_day_or_max_freshness() {
    let robots: Robots = Arc::new(Mutex::new((
        200,
        "User-agent: *\nDisallow: /private\n".into(),
        vec![
            ("Cache-Control".into(), "max-age=31536000".into()),
            ("ETag".into(), "\"r1\"".into()),
        ],
    )));
    let r = robots.clone();
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/robots.txt" => robots_reply(&r, req),
        _ => html_page(),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let page = srv.url("/page");
    let read = |freshness: &'static str| {
        let page = page.clone();
        let dir = cache.path().to_owned();
        async move {
            let (_, doc) = run_in(
                &dir,
                &[
                    "--max-freshness",
                    freshness,
                    "article",
                    "--respect-robots",
                    &page,
                ],
            )
            .await;
            assert_eq!(doc["articles"][0]["status"], "ok", "{doc}");
        }
    };
    read("30d").await;
    read("30d").await;
    assert_eq!(srv.hits_for("/robots.txt").len(), 1, "a fresh copy is used");
    // A day and an hour later, a year's max-age notwithstanding: asked again, conditionally.
    age_robots_entries(cache.path(), Duration::from_secs(25 * 3600));
    read("30d").await;
    let hits = srv.hits_for("/robots.txt");
    assert_eq!(
        hits.len(),
        2,
        "a robots.txt older than a day is asked for again"
    );
    assert_eq!(hits[1].status, 304);
    assert_eq!(
        hits[1].headers.get("if-none-match").map(String::as_str),
        Some("\"r1\"")
    );
    // The 304 made it fresh again.
    read("30d").await;
    assert_eq!(srv.hits_for("/robots.txt").len(), 2);
    // Two hours old: within a day and within --max-freshness 3h, used...
    age_robots_entries(cache.path(), Duration::from_secs(2 * 3600));
    read("3h").await;
    assert_eq!(srv.hits_for("/robots.txt").len(), 2);
    // ...but past --max-freshness 1h (the default), asked again.
    read("1h").await;
    assert_eq!(srv.hits_for("/robots.txt").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_the_cache_flags_mean_the_same_for_robots_txt() {
    let robots: Robots = Arc::new(Mutex::new((
        200,
        "User-agent: *\nDisallow: /private\n".into(),
        vec![("Cache-Control".into(), "max-age=31536000".into())],
    )));
    let r = robots.clone();
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/robots.txt" => robots_reply(&r, req),
        _ => html_page(),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let page = srv.url("/page");
    let read = |flags: &'static [&'static str]| {
        let page = page.clone();
        let dir = cache.path().to_owned();
        async move {
            let mut args = vec!["article", "--respect-robots"];
            args.extend(flags);
            args.push(&page);
            let (_, doc) = run_in(&dir, &args).await;
            doc["articles"][0]["status"].as_str().unwrap().to_owned()
        }
    };
    // --no-cache leaves nothing behind.
    assert_eq!(read(&["--no-cache"]).await, "ok");
    assert_eq!(
        robots_entries(cache.path()),
        0,
        "--no-cache stored a robots.txt"
    );
    // A default run caches the robots.txt that allows the page (for a year, it says).
    assert_eq!(read(&[]).await, "ok");
    assert_eq!(robots_entries(cache.path()), 1);
    let asked = srv.hits_for("/robots.txt").len();
    assert_eq!(read(&[]).await, "ok");
    assert_eq!(
        srv.hits_for("/robots.txt").len(),
        asked,
        "a fresh copy is used"
    );
    // The site now disallows everything: --no-cache and --refresh ask it, and obey it.
    robots.lock().unwrap().1 = "User-agent: *\nDisallow: /\n".into();
    assert_eq!(read(&["--no-cache"]).await, "error");
    assert_eq!(read(&["--refresh"]).await, "error");
    // --refresh stored what it read: a default run obeys it too.
    assert_eq!(read(&[]).await, "error");
    // --cache-policy revalidate asks each time.
    robots.lock().unwrap().1 = "User-agent: *\nAllow: /\n".into();
    assert_eq!(read(&["--cache-policy", "revalidate"]).await, "ok");
    // --max-age serves what is younger than it with no request.
    robots.lock().unwrap().1 = "User-agent: *\nDisallow: /\n".into();
    let asked = srv.hits_for("/robots.txt").len();
    assert_eq!(read(&["--max-age", "1h"]).await, "ok");
    assert_eq!(srv.hits_for("/robots.txt").len(), asked);
    assert_eq!(
        srv.hits_for("/page").len(),
        4,
        "every allowed read was sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_an_mcp_call_with_refresh_asks_robots_txt_again() {
    let robots: Robots = Arc::new(Mutex::new((
        200,
        "User-agent: *\nAllow: /\n".into(),
        vec![("Cache-Control".into(), "max-age=31536000".into())],
    )));
    let r = robots.clone();
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/robots.txt" => robots_reply(&r, req),
        _ => html_page(),
    })
    .await;
    let s = spawn_with(&[], &[]).await;
    let read = |policy: Option<&str>| {
        let mut a = json!({"url": srv.url("/page")});
        if let Some(p) = policy {
            a["cache_policy"] = json!(p);
        }
        a
    };
    let out = structured(&call(&s, "fetch_article", read(None)).await);
    assert_eq!(out["articles"][0]["status"], "ok", "{out}");
    robots.lock().unwrap().1 = "User-agent: *\nDisallow: /\n".into();
    // Within its freshness, the server keeps to the copy it read...
    let out = structured(&call(&s, "fetch_article", read(None)).await);
    assert_eq!(out["articles"][0]["status"], "ok", "{out}");
    assert_eq!(srv.hits_for("/robots.txt").len(), 1);
    // ...and a refresh (or no cache) asks again, in the same process.
    for policy in ["refresh", "no-cache"] {
        let err = error_object(&call(&s, "fetch_article", read(Some(policy))).await);
        assert_eq!(err["code"], "ROBOTS_DISALLOWED", "{policy}: {err}");
    }
    assert_eq!(srv.hits_for("/robots.txt").len(), 3);
    s.client.cancel().await.unwrap();
}

/// Arrival gaps between consecutive requests, in the order they arrived.
fn gaps(mut hits: Vec<Hit>) -> Vec<(String, Duration)> {
    hits.sort_by_key(|h| h.arrived);
    hits.windows(2)
        .map(|w| (w[1].path.clone(), w[1].arrived - w[0].arrived))
        .collect()
}

/// The spacing the gate keeps from each send's start, less what a connection's setup and
/// scheduling may take off an arrival gap at the origin (the defect these tests catch sends
/// within a few milliseconds).
const DELAY: Duration = Duration::from_millis(500);
const SLACK: Duration = Duration::from_millis(100);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_the_first_page_after_robots_txt_is_spaced_by_its_crawl_delay() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => text_reply("User-agent: *\nCrawl-delay: 0.5\n"),
        _ => html_page(),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let (exit, doc) = run_in(
        cache.path(),
        &[
            "article",
            "--respect-robots",
            &srv.url("/a"),
            &srv.url("/b"),
        ],
    )
    .await;
    assert_eq!(exit, Some(0), "{doc}");
    let g = gaps(srv.hits());
    assert_eq!(g.len(), 2, "{g:?}");
    for (path, gap) in &g {
        assert!(
            *gap >= DELAY - SLACK,
            "{path} came {gap:?} after the request before it"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_27_under_a_site_key_one_hosts_robots_txt_never_erases_a_siblings_delay() {
    // A proxy answering for every host: b.site.example asks for a delay, a.site.example
    // for none.
    let proxy = TestServer::start(|req| {
        if req.path.ends_with("b.site.example/robots.txt") {
            text_reply("User-agent: *\nCrawl-delay: 0.5\n")
        } else if req.path.ends_with("/robots.txt") {
            text_reply("User-agent: *\nAllow: /\n")
        } else {
            html_page()
        }
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(rss_std(cache.path()));
    cmd.args(["--host-key", "site", "article", "--respect-robots"])
        .args([
            "http://b.site.example/1",
            "http://a.site.example/1",
            "http://a.site.example/2",
            "http://b.site.example/2",
        ])
        .env("HTTP_PROXY", format!("http://{}", proxy.addr))
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .stderr(std::process::Stdio::null());
    let started = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap()
        .unwrap();
    let doc = json(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    let g = gaps(proxy.hits());
    let mut sent: Vec<&str> = g.iter().map(|(p, _)| p.as_str()).collect();
    sent.sort_unstable();
    assert_eq!(
        sent,
        [
            "http://a.site.example/1",
            "http://a.site.example/2",
            "http://a.site.example/robots.txt",
            "http://b.site.example/1",
            "http://b.site.example/2",
        ],
        "{g:?}"
    );
    for (path, gap) in &g {
        assert!(
            *gap >= DELAY - SLACK,
            "{path} came {gap:?} after the request before it"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}
