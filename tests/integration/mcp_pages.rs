//! `fetch_feed` pages (issue 22): a result over its token budget comes as pages of whole
//! feeds and items with `next_cursor`; a cursor continues exactly there, from the cache,
//! and is refused when changed, expired or given with other options.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::{call, error_object, spawn_with, structured, summary};

fn feed(name: &str, items: usize, words: usize) -> String {
    let mut body = format!("<rss><channel><title>{name}</title>");
    for i in 0..items {
        body.push_str(&format!(
            "<item><title>{name} {i}</title><link>https://x.example/{name}/{i}</link>\
             <pubDate>Mon, 01 Jun 2026 {:02}:{:02}:00 GMT</pubDate><description>{}</description></item>",
            23 - i / 60,
            59 - i % 60,
            "word ".repeat(words)
        ));
    }
    body.push_str("</channel></rss>");
    body
}

/// (feed_url, item id) of every item of `out`, in order.
fn items_of(out: &Value) -> Vec<(String, String)> {
    out["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            let url = f["feed_url"].as_str().unwrap().to_owned();
            f["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |i| (url.clone(), i["id"].as_str().unwrap().to_owned()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_follow_each_other_exactly_with_no_new_request() {
    let srv = TestServer::with_routes(vec![
        ("/a", Reply::xml(feed("a", 12, 60))),
        ("/b", Reply::xml(feed("b", 3, 10))),
        ("/c", Reply::xml(feed("c", 30, 80))),
        ("/d", Reply::xml(feed("d", 0, 0))),
    ])
    .await;
    let urls: Vec<String> = ["/a", "/b", "/c", "/d"]
        .iter()
        .map(|p| srv.url(p))
        .collect();
    let s = spawn_with(&[], &[]).await;
    let ask = |cursor: Option<String>| {
        let mut a = json!({"urls": urls, "limit": 40, "max_response_tokens": 2500});
        if let Some(c) = cursor {
            a["cursor"] = json!(c);
        }
        a
    };
    let mut seen = Vec::new();
    let mut first_page_feeds = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let r = call(&s, "fetch_feed", ask(cursor.clone())).await;
        let page = structured(&r);
        let size = serde_json::to_string(&page).unwrap().len() / 4;
        assert!(size <= 2500, "page {pages} is ~{size} tokens");
        let here = items_of(&page);
        assert!(
            !here.is_empty() || page["next_cursor"].is_null(),
            "an empty page"
        );
        let left = page["truncation"]["items_on_later_pages"]
            .as_u64()
            .unwrap_or(0);
        seen.extend(here);
        assert_eq!(left as usize, 45 - seen.len(), "page {pages}");
        if pages == 0 {
            for f in page["feeds"].as_array().unwrap() {
                first_page_feeds.push(f["feed_url"].as_str().unwrap().to_owned());
            }
        }
        pages += 1;
        assert!(pages < 40, "the pages never end");
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    // One request per feed for all those pages.
    for p in ["/a", "/b", "/c", "/d"] {
        assert_eq!(srv.hits_for(p).len(), 1, "{p}");
    }
    // Every item once, each feed's in the order of one whole run.
    let all = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"urls": urls, "limit": 40, "max_response_tokens": 25_000}),
        )
        .await,
    );
    let whole = items_of(&all);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 45);
    for url in &urls {
        let of = |v: &[(String, String)]| {
            v.iter()
                .filter(|(f, _)| f == url)
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(of(&seen), of(&whole), "{url}");
    }
    // The first page shows every feed, the empty one too, in request order.
    assert_eq!(first_page_feeds, urls);
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_cursor_or_one_with_other_options_is_refused() {
    let srv = TestServer::with_routes(vec![("/a", Reply::xml(feed("a", 40, 80)))]).await;
    let s = spawn_with(&[], &[]).await;
    let first = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": srv.url("/a"), "max_response_tokens": 2000}),
        )
        .await,
    );
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    assert!(cursor.len() < 400, "{} chars", cursor.len());
    let refused = |a: Value| {
        let s = &s;
        async move {
            let err = error_object(&call(s, "fetch_feed", a).await);
            assert_eq!(err["code"], "USAGE_ERROR", "{err}");
            err["message"].as_str().unwrap().to_owned()
        }
    };
    // One character changed, anywhere in the JSON part or the tag.
    for at in [3, cursor.len() / 2, cursor.len() - 2] {
        let mut b = cursor.clone().into_bytes();
        b[at] = if b[at] == b'x' { b'y' } else { b'x' };
        let changed = String::from_utf8(b).unwrap();
        let m =
            refused(json!({"url": srv.url("/a"), "max_response_tokens": 2000, "cursor": changed}))
                .await;
        assert!(m.contains("cursor"), "{m}");
    }
    let m = refused(json!({"url": srv.url("/a"), "limit": 5, "cursor": cursor})).await;
    assert!(m.contains("other urls or options"), "{m}");
    // A cursor from another server (or this one restarted) is refused too.
    let other = spawn_with(&[], &[]).await;
    let err = error_object(
        &call(
            &other,
            "fetch_feed",
            json!({"url": srv.url("/a"), "cursor": cursor}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    // The right cursor with a different budget is fine: the budget may change per page.
    let next = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": srv.url("/a"), "max_response_tokens": 4000, "cursor": cursor}),
        )
        .await,
    );
    let first_ids = items_of(&first);
    let next_ids = items_of(&next);
    assert!(!next_ids.is_empty());
    assert!(next_ids.iter().all(|i| !first_ids.contains(i)));
    assert_eq!(srv.hits_for("/a").len(), 1);
    other.client.cancel().await.unwrap();
    s.client.cancel().await.unwrap();
}

/// Issue 31: a five-feed call (one feed a web page, one throttling) shows every feed, its
/// status and error on the first page; the budget is shared, so every feed that has items
/// has some there; later pages ask nothing again, the failed feeds included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_page_shows_every_feed_and_shares_the_items() {
    let srv = TestServer::with_routes(vec![
        ("/big", Reply::xml(feed("big", 25, 300))),
        ("/b", Reply::xml(feed("b", 5, 20))),
        (
            "/page",
            Reply::ok(
                "<!DOCTYPE html><html><head><title>Home</title></head><body>hi</body></html>",
                "text/html; charset=utf-8",
            ),
        ),
        ("/c", Reply::xml(feed("c", 5, 20))),
        ("/slow", Reply::status(429)),
    ])
    .await;
    let urls: Vec<String> = ["/big", "/b", "/page", "/c", "/slow"]
        .iter()
        .map(|p| srv.url(p))
        .collect();
    let s = spawn_with(&[], &[("RSS_MAX_GATE_WAIT_SECS", "1")]).await;
    let ask = |cursor: Option<&str>| {
        let mut a = json!({"urls": urls, "max_response_tokens": 4000});
        if let Some(c) = cursor {
            a["cursor"] = json!(c);
        }
        a
    };
    let r = call(&s, "fetch_feed", ask(None)).await;
    let page = structured(&r);
    let feeds = page["feeds"].as_array().unwrap();
    let shown: Vec<&str> = feeds
        .iter()
        .map(|f| f["feed_url"].as_str().unwrap())
        .collect();
    assert_eq!(shown, urls.iter().map(String::as_str).collect::<Vec<_>>());
    let status: Vec<&str> = feeds
        .iter()
        .map(|f| f["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["ok", "ok", "error", "ok", "error"]);
    assert_eq!(feeds[2]["error"]["code"], "FEED_PARSE_FAILED");
    assert!(
        feeds[2]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("discover_feeds"),
        "{}",
        feeds[2]["error"]
    );
    assert_eq!(
        feeds[2]["error"]["details"]["content_type"],
        "text/html; charset=utf-8"
    );
    assert_eq!(feeds[2]["error"]["details"]["http_status"], 200);
    assert_eq!(feeds[4]["error"]["code"], "RATE_LIMITED");
    assert_eq!(page["errors"].as_array().unwrap().len(), 2);
    assert_eq!(feeds[0]["title"], "big");
    for i in [0, 1, 3] {
        assert!(
            feeds[i]["items"].as_array().is_some_and(|a| !a.is_empty()),
            "feed {i} has no item on the first page"
        );
    }
    assert!(
        summary(&r).contains("5 feeds: 3 ok, 2 failed"),
        "{}",
        summary(&r)
    );
    let mut seen: HashSet<(String, String)> = items_of(&page).into_iter().collect();
    let hits = srv.count();
    let mut cursor = page["next_cursor"].as_str().map(str::to_owned);
    let mut pages = 1;
    while let Some(c) = cursor {
        let next = structured(&call(&s, "fetch_feed", ask(Some(&c))).await);
        for f in next["feeds"].as_array().unwrap() {
            assert_ne!(f["status"], "error", "a failed feed again on a later page");
        }
        for item in items_of(&next) {
            assert!(seen.insert(item.clone()), "{item:?} repeats");
        }
        cursor = next["next_cursor"].as_str().map(str::to_owned);
        pages += 1;
        assert!(pages < 30, "the pages never end");
    }
    assert!(pages >= 2, "{pages} pages");
    assert_eq!(seen.len(), 35, "every item once");
    assert_eq!(srv.count(), hits, "later pages send no request");
    s.client.cancel().await.unwrap();
}

/// An article page of `paragraphs` paragraphs of thirty words, written as prose.
fn long_page(title: &str, paragraphs: usize) -> String {
    let mut body = format!(
        "<!DOCTYPE html><html><head><title>{title}</title></head><body><article><h1>{title}</h1>"
    );
    for p in 0..paragraphs {
        body.push_str("<p>");
        for w in 0..30 {
            body.push_str(&format!("harbour{p} lantern{w} "));
        }
        body.push_str("</p>");
    }
    body.push_str("</article></body></html>");
    body
}

/// A feed with a description and `items` items of `words` words, each linking to one of
/// this origin's pages.
fn described(name: &str, items: usize, words: usize) -> String {
    let mut body = format!(
        "<rss><channel><title>The {name} chronicle of coastal weather</title>\
         <link>https://{name}.example/</link><description>{}</description>",
        "Daily notes on tides, winds and the lighthouse keepers who watch them. ".repeat(3)
    );
    for i in 0..items {
        body.push_str(&format!(
            "<item><title>{name}: report {i} from the coast</title><link>/page/{name}-{i}</link>\
             <pubDate>Mon, 01 Jun 2026 {:02}:00:00 GMT</pubDate><description>{}</description></item>",
            23 - i % 24,
            "the tide rose over the harbour wall at dawn ".repeat(words / 9 + 1)
        ));
    }
    body.push_str("</channel></rss>");
    body
}

/// The tokens of an answer as the server counts them: its summary line and its result.
pub fn answer_tokens(r: &rmcp::model::CallToolResult) -> usize {
    rss::ops::budget::tokens_of(&summary(r)) + rss::ops::budget::tokens_of(&structured(r))
}

/// Calls `tool` with `a` (over its budget: `RESPONSE_TOO_LARGE`), then once with each
/// `suggested_*` value the error carries, alone: every one of them must succeed. How many
/// suggestions were followed.
async fn follow_each_suggestion(s: &crate::mcp::Server, tool: &str, a: Value) -> usize {
    let e = error_object(&call(s, tool, a.clone()).await);
    assert_eq!(e["code"], "RESPONSE_TOO_LARGE", "{tool}: {e}");
    let mut followed = 0;
    for key in [
        "suggested_max_response_tokens",
        "suggested_max_content_chars",
        "suggested_limit",
    ] {
        let Some(n) = e["details"][key].as_u64() else {
            continue;
        };
        let mut again = a.clone();
        again[&key["suggested_".len()..]] = json!(n);
        let r = call(s, tool, again.clone()).await;
        assert_ne!(
            r.is_error,
            Some(true),
            "{tool} with {key} = {n} alone: {}\nfirst: {e}",
            crate::mcp::text(&r)
        );
        let budget = again["max_response_tokens"].as_u64().unwrap() as usize;
        let size = answer_tokens(&r);
        assert!(size <= budget, "{tool} with {key} = {n}: ~{size} tokens");
        followed += 1;
    }
    followed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_every_suggestion_followed_alone_makes_the_same_call_succeed() {
    let names: Vec<String> = (0..13).map(|i| format!("coast{i}")).collect();
    let mut routes: Vec<(String, Reply)> = names
        .iter()
        .map(|n| (format!("/{n}"), Reply::xml(described(n, 6, 60))))
        .collect();
    routes.push(("/huge".into(), Reply::xml(described("huge", 1, 40_000))));
    routes.push(("/long".into(), Reply::xml(described("long", 3, 20))));
    let srv = TestServer::start(move |req| {
        if req.path == "/robots.txt" {
            return Reply::status(404);
        }
        if let Some(page) = req.path.strip_prefix("/page/") {
            return Reply::ok(long_page(page, 120), "text/html; charset=utf-8");
        }
        routes
            .iter()
            .find(|(p, _)| *p == req.path)
            .map_or_else(|| Reply::status(404), |(_, r)| r.clone())
    })
    .await;
    let s = spawn_with(&[], &[]).await;
    let many: Vec<String> = names.iter().map(|n| srv.url(&format!("/{n}"))).collect();
    let mut followed = 0;
    // Many feeds: the first page's thirteen feeds alone are over the budget.
    for budget in [400, 900] {
        let a = json!({"urls": many, "max_response_tokens": budget});
        followed += follow_each_suggestion(&s, "fetch_feed", a).await;
    }
    // One huge item, alone in its feed and with others.
    let huge = srv.url("/huge");
    followed += follow_each_suggestion(
        &s,
        "fetch_feed",
        json!({"url": huge, "max_response_tokens": 150}),
    )
    .await;
    let mut with_others = many[..4].to_vec();
    with_others.insert(0, huge.clone());
    followed += follow_each_suggestion(
        &s,
        "fetch_feed",
        json!({"urls": with_others, "max_response_tokens": 450}),
    )
    .await;
    let id = first_item_id(&s, &huge).await;
    followed += follow_each_suggestion(
        &s,
        "get_item",
        json!({"feed_url": huge, "id": id, "max_response_tokens": 120}),
    )
    .await;
    // Long articles: read with the feed, alone, and with their item.
    let long = srv.url("/long");
    followed += follow_each_suggestion(
        &s,
        "fetch_feed",
        json!({"url": long, "articles": true, "max_response_tokens": 250}),
    )
    .await;
    let pages: Vec<String> = (0..3)
        .map(|i| srv.url(&format!("/page/long-{i}")))
        .collect();
    followed += follow_each_suggestion(
        &s,
        "fetch_article",
        json!({"urls": pages, "max_response_tokens": 200}),
    )
    .await;
    let id = first_item_id(&s, &long).await;
    followed += follow_each_suggestion(
        &s,
        "get_item",
        json!({"feed_url": long, "id": id, "article": true, "max_response_tokens": 120}),
    )
    .await;
    assert!(followed >= 8, "{followed} suggestions followed");
    s.client.cancel().await.unwrap();
}

/// The id of the first item of `url`'s feed, read whole.
async fn first_item_id(s: &crate::mcp::Server, url: &str) -> String {
    let whole = structured(
        &call(
            s,
            "fetch_feed",
            json!({"url": url, "max_response_tokens": 25_000}),
        )
        .await,
    );
    whole["feeds"][0]["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}
