//! `fetch_feed` pages (issue 22): a result over its token budget comes as pages of whole
//! feeds and items with `next_cursor`; a cursor continues exactly there, from the cache,
//! and is refused when changed, expired or given with other options.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::{call, error_object, spawn_with, structured};

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
                .unwrap()
                .iter()
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
    let mut feeds_seen = Vec::new();
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
        let left = page["truncation"]["items_on_later_pages"].as_u64().unwrap();
        seen.extend(here);
        assert_eq!(left as usize, 45 - seen.len(), "page {pages}");
        for f in page["feeds"].as_array().unwrap() {
            feeds_seen.push(f["feed_url"].as_str().unwrap().to_owned());
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
    // Every item once, in the order of one whole run.
    let all = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"urls": urls, "limit": 40, "max_response_tokens": 1_000_000}),
        )
        .await,
    );
    assert_eq!(seen, items_of(&all));
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 45);
    // Every feed shows up, the empty one too, in request order.
    let mut order = feeds_seen.clone();
    order.dedup();
    assert_eq!(order, urls);
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
