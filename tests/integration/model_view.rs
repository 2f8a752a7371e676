//! Issue 31: what a model sees. Every result readable from its `content[]` text, one body
//! per item, every cut continued to its end, unknown arguments refused, queries that say
//! what they do, MCP words in MCP errors, true and short descriptions, the compact view,
//! the cap on budgets, one shape for a feed's error.

use std::time::Duration;

use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::{call, error_object, payload, spawn_with, structured, summary};

/// A feed of `n` items whose links are pages of the same server (`/page/I`), each body
/// `words` words long.
fn linked_feed(n: usize, words: usize) -> String {
    let mut body = String::from("<rss><channel><title>Linked</title>");
    for i in 0..n {
        body.push_str(&format!(
            "<item><title>Story {i}</title><link>/page/{i}</link>\
             <pubDate>Mon, 01 Jun 2026 10:{i:02}:00 GMT</pubDate>\
             <description>{}</description></item>",
            (0..words)
                .map(|w| format!("feedword{w} "))
                .collect::<String>()
        ));
    }
    body.push_str("</channel></rss>");
    body
}

/// An article page of `paragraphs` paragraphs of forty words.
fn article_page(title: &str, paragraphs: usize) -> String {
    let mut body = format!(
        "<!DOCTYPE html><html><head><title>{title}</title></head><body><article><h1>{title}</h1>"
    );
    for p in 0..paragraphs {
        body.push_str("<p>");
        for w in 0..40 {
            body.push_str(&format!("para{p}word{w} "));
        }
        body.push_str("</p>");
    }
    body.push_str("</article></body></html>");
    body
}

async fn site(items: usize, feed_words: usize, paragraphs: usize) -> TestServer {
    let feed = linked_feed(items, feed_words);
    TestServer::start(move |req| match req.path.as_str() {
        "/feed" => Reply::xml(feed.clone()),
        "/robots.txt" => Reply::status(404),
        p if p.starts_with("/page/") => Reply::ok(
            article_page(&format!("Page {}", &p[6..]), paragraphs),
            "text/html; charset=utf-8",
        ),
        _ => Reply::status(404),
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reads_only_the_text_gets_every_item_and_every_feed() {
    let srv = fixture_server().await;
    let s = spawn_with(&[], &[]).await;
    let r = call(
        &s,
        "fetch_feed",
        json!({"urls": [srv.url("/rss20.xml"), srv.url("/page.html")]}),
    )
    .await;
    // What a client that hands the model only content[] shows it.
    let text: Vec<String> = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    assert_eq!(text.len(), 2, "a summary line and the result");
    assert!(
        text[0].starts_with("2 feeds: 1 ok, 1 failed (FEED_PARSE_FAILED); 3 items"),
        "{}",
        text[0]
    );
    let v: Value = serde_json::from_str(&text[1]).unwrap();
    let feeds = v["feeds"].as_array().unwrap();
    assert_eq!(feeds[0]["status"], "ok");
    assert_eq!(feeds[0]["title"], "Example Engineering Blog");
    assert_eq!(feeds[1]["status"], "error");
    assert_eq!(feeds[1]["error"]["code"], "FEED_PARSE_FAILED");
    let item = &feeds[0]["items"][0];
    for field in ["id", "title", "url", "published", "content"] {
        assert!(item[field].is_string(), "{field} missing: {item}");
    }
    // The same value as structuredContent, compact: no nulls, no empty lists, no zeros.
    assert_eq!(Some(v.clone()), r.structured_content);
    let json = text[1].as_str();
    for noise in [
        ":null",
        ":[]",
        ":false",
        "\"id_source\"",
        "\"content_hash\"",
    ] {
        assert!(!json.contains(noise), "{noise} in {json}");
    }
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_articles_each_item_has_one_body_and_none_never_empties_the_article() {
    let srv = site(2, 30, 3).await;
    let s = spawn_with(&[], &[]).await;
    let feed = srv.url("/feed");
    let out = structured(&call(&s, "fetch_feed", json!({"url": feed, "articles": true})).await);
    let item = &out["feeds"][0]["items"][0];
    assert!(
        item.get("content").is_none(),
        "the feed's body is left out: {item}"
    );
    let article = item["article"]["content"].as_str().unwrap();
    assert!(article.contains("para0word0"), "{article}");
    assert_eq!(item["article"]["content_format"], "markdown");
    // content_format none asks for no feed body; the article is still there.
    let out = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": feed, "articles": true, "content_format": "none", "article_format": "text"}),
        )
        .await,
    );
    let item = &out["feeds"][0]["items"][0];
    assert!(item.get("content").is_none());
    assert_eq!(item["article"]["content_format"], "text");
    assert!(
        item["article"]["content"]
            .as_str()
            .unwrap()
            .contains("para2word39")
    );
    // Asked for, the feed's body comes too.
    let out = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": feed, "articles": true, "content_format": "text"}),
        )
        .await,
    );
    assert!(
        out["feeds"][0]["items"][0]["content"]
            .as_str()
            .unwrap()
            .contains("feedword0")
    );
    // get_item the same way.
    let id = out["feeds"][0]["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = structured(
        &call(
            &s,
            "get_item",
            json!({"feed_url": feed, "id": id, "article": true, "content_format": "none"}),
        )
        .await,
    );
    assert!(got["item"].get("content").is_none());
    assert!(
        got["item"]["article"]["content"]
            .as_str()
            .unwrap()
            .contains("para1word3")
    );
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"url": feed, "article_format": "text"}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("`articles: true`"),
        "{err}"
    );
    s.client.cancel().await.unwrap();
}

/// Follows `next_offset` from `first` with `ask(offset)`, at most 40 calls; the parts.
async fn follow(
    s: &crate::mcp::Server,
    tool: &str,
    first: Value,
    ask: impl Fn(u64) -> Value,
    text_of: impl Fn(&Value) -> &Value,
) -> Vec<String> {
    let mut parts = vec![text_of(&first)["content"].as_str().unwrap().to_owned()];
    let mut next = text_of(&first)["next_offset"].as_u64();
    for _ in 0..40 {
        let Some(o) = next else { break };
        let r = structured(&call(s, tool, ask(o)).await);
        parts.push(text_of(&r)["content"].as_str().unwrap().to_owned());
        next = text_of(&r)["next_offset"].as_u64();
    }
    assert_eq!(next, None, "the text ends within forty parts");
    parts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cut_text_continues_to_its_end_in_the_tool_that_cut_it() {
    // One item of ~50,000 characters, and pages of ~30,000.
    let srv = site(2, 5_000, 60).await;
    let s = spawn_with(&["--max-response-tokens", "100000"], &[]).await;
    let feed = srv.url("/feed");
    let listing = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": feed, "content_format": "text", "max_content_chars": 500}),
        )
        .await,
    );
    let item = &listing["feeds"][0]["items"][0];
    assert_eq!(item["next_offset"], 500, "{item}");
    let id = item["id"].as_str().unwrap().to_owned();
    let whole = structured(
        &call(&s, "get_item", json!({"feed_url": feed, "id": id, "content_format": "text", "max_response_tokens": 100000})).await,
    )["item"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(whole.chars().count() > 50_000, "{}", whole.len());
    // get_item over its budget: cut at a paragraph, continued with `offset`.
    let ask = |o: u64| json!({"feed_url": feed, "id": id, "content_format": "text", "max_response_tokens": 3000, "offset": o});
    let first = call(
        &s,
        "get_item",
        json!({"feed_url": feed, "id": id, "content_format": "text", "max_response_tokens": 3000}),
    )
    .await;
    assert!(summary(&first).contains("`offset`"), "{}", summary(&first));
    let parts = follow(&s, "get_item", structured(&first), ask, |v| &v["item"]).await;
    assert!(parts.len() >= 4, "{} parts", parts.len());
    assert_eq!(parts.concat(), whole);
    // The listing's cut continues the same way.
    let rest = structured(&call(&s, "get_item", json!({"feed_url": feed, "id": id, "content_format": "text", "max_response_tokens": 100000, "offset": 500})).await);
    assert_eq!(
        whole.chars().skip(500).collect::<String>(),
        rest["item"]["content"].as_str().unwrap()
    );
    // The item's article, continued with `article_offset`.
    let first = structured(
        &call(
            &s,
            "get_item",
            json!({"feed_url": feed, "id": id, "article": true, "max_response_tokens": 2000}),
        )
        .await,
    );
    let ask = |o: u64| json!({"feed_url": feed, "id": id, "article": true, "max_response_tokens": 2000, "article_offset": o});
    let parts = follow(&s, "get_item", first, ask, |v| &v["item"]["article"]).await;
    assert!(parts.len() >= 3, "{} parts", parts.len());
    let article = structured(
        &call(
            &s,
            "fetch_article",
            json!({"url": srv.url("/page/0"), "max_response_tokens": 25000}),
        )
        .await,
    );
    assert_eq!(
        parts.concat(),
        article["articles"][0]["content"].as_str().unwrap()
    );
    // Two pages in one fetch_article call: each continued by its own call.
    let both = structured(
        &call(
            &s,
            "fetch_article",
            json!({"urls": [srv.url("/page/0"), srv.url("/page/1")], "max_response_tokens": 3000}),
        )
        .await,
    );
    for (i, a) in both["articles"].as_array().unwrap().iter().enumerate() {
        let url = a["url"].as_str().unwrap().to_owned();
        let ask = |o: u64| json!({"url": url, "max_response_tokens": 3000, "offset": o});
        let parts = follow(&s, "fetch_article", both.clone(), ask, |v| {
            if v["articles"].as_array().unwrap().len() == 2 {
                &v["articles"][i]
            } else {
                &v["articles"][0]
            }
        })
        .await;
        let whole = structured(
            &call(
                &s,
                "fetch_article",
                json!({"url": url, "max_response_tokens": 25000}),
            )
            .await,
        );
        assert_eq!(
            parts.concat(),
            whole["articles"][0]["content"].as_str().unwrap(),
            "{url}"
        );
    }
    let err = error_object(
        &call(
            &s,
            "fetch_article",
            json!({"urls": [srv.url("/page/0"), srv.url("/page/1")], "offset": 100}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    assert!(err["message"].as_str().unwrap().contains("`url`"), "{err}");
    // An offset past the end says where the end is.
    let len = whole.chars().count();
    let err = error_object(
        &call(
            &s,
            "get_item",
            json!({"feed_url": feed, "id": id, "content_format": "text", "offset": len + 10}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(&format!("{len} characters long")),
        "{err}"
    );
    let err = error_object(
        &call(
            &s,
            "fetch_article",
            json!({"url": srv.url("/page/0"), "offset": 10_000_000}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("past the end of the article"),
        "{err}"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_arguments_are_refused_naming_the_nearest_one() {
    let s = spawn_with(&[], &[]).await;
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"url": "https://example.com/feed", "max_results": 3}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    let m = err["message"].as_str().unwrap();
    assert!(
        m.contains("`max_results`") && m.contains("did you mean `limit`?"),
        "{m}"
    );
    let err = error_object(
        &call(
            &s,
            "get_item",
            json!({"url": "https://example.com/feed", "id": "x"}),
        )
        .await,
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `feed_url`?"),
        "{err}"
    );
    let err = error_object(
        &call(
            &s,
            "discover_feeds",
            json!({"site_url": "https://example.com/", "headers": {"Cookie": "x"}}),
        )
        .await,
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("takes no argument `headers`"),
        "{err}"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_can_say_or_and_one_that_leaves_nothing_says_what_it_looked_at() {
    let srv = fixture_server().await;
    let s = spawn_with(&[], &[]).await;
    let feed = srv.url("/rss20.xml");
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": feed, "query": "parser OR politely"}),
    )
    .await;
    let titles: Vec<String> = structured(&r)["feeds"][0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        titles,
        ["Shipping the new parser & more", "Rate limits, politely"]
    );
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": feed, "query": "WeWork OR Europa"}),
    )
    .await;
    let m = summary(&r);
    assert!(
        m.contains("matched none of the 3 items it looked at"),
        "{m}"
    );
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"url": feed, "query": "(parser OR"}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_errors_name_tools_and_arguments_and_carry_their_details() {
    let srv = fixture_server().await;
    let s = spawn_with(&[], &[]).await;
    let mut messages = Vec::new();
    let err = error_object(&call(&s, "fetch_feed", json!({"url": srv.url("/page.html")})).await);
    assert_eq!(err["code"], "FEED_PARSE_FAILED");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("discover_feeds with site_url"),
        "{err}"
    );
    assert_eq!(err["details"]["content_type"], "text/html; charset=utf-8");
    assert_eq!(err["details"]["http_status"], 200);
    messages.push(err);
    let err = error_object(
        &call(
            &s,
            "get_item",
            json!({"feed_url": srv.url("/rss20.xml"), "id": "nope"}),
        )
        .await,
    );
    assert_eq!(err["code"], "NOT_FOUND");
    assert_eq!(err["details"]["feed_url"], srv.url("/rss20.xml"));
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("fetch_feed with url"),
        "{err}"
    );
    messages.push(err);
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"url": srv.url("/rss20.xml"), "since": "today"}),
        )
        .await,
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("`since` \"today\""),
        "{err}"
    );
    messages.push(err);
    let err = error_object(&call(&s, "fetch_feed", json!({"url": "ftp://example.com/feed"})).await);
    assert_eq!(err["code"], "INVALID_URL");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .ends_with("give an http(s) URL"),
        "{err}"
    );
    messages.push(err);
    let err = error_object(&call(&s, "fetch_article", json!({"url": srv.url("/rss20.xml")})).await);
    assert_eq!(err["code"], "NOT_AN_ARTICLE");
    assert!(
        err["message"].as_str().unwrap().contains("fetch_feed"),
        "{err}"
    );
    messages.push(err);
    for e in &messages {
        let m = e["message"].as_str().unwrap();
        assert!(
            !m.contains("rss ") && !m.contains(" --") && !m.contains("a path"),
            "CLI words: {m}"
        );
        assert!(m.matches(" — ").count() <= 1, "one hint: {m}");
    }
    s.client.cancel().await.unwrap();
}

/// The words in backticks of a description: each must be an argument of the tool or a
/// field of its result.
fn backticked(s: &str) -> Vec<String> {
    s.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

fn fields_of(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(m) => {
            if let Some(Value::Object(props)) = m.get("properties") {
                out.extend(props.keys().cloned());
            }
            m.values().for_each(|v| fields_of(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| fields_of(v, out)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptions_are_short_and_say_only_what_the_tools_take_and_give() {
    let srv = TestServer::with_routes(vec![("/big", Reply::xml(linked_feed(40, 200)))]).await;
    let s = spawn_with(&[], &[]).await;
    let tools = s.client.list_all_tools().await.unwrap();
    let mut brief = 0;
    for t in &tools {
        let input = Value::Object((*t.input_schema).clone());
        let output = Value::Object((**t.output_schema.as_ref().unwrap()).clone());
        let description = t.description.as_deref().unwrap_or("");
        brief += description.len() + input.to_string().len();
        let mut known = Vec::new();
        fields_of(&input, &mut known);
        fields_of(&output, &mut known);
        for word in backticked(description) {
            let name = word.split(':').next().unwrap().trim();
            assert!(
                known.iter().any(|k| k == name),
                "{}: `{word}` is neither an argument nor a field",
                t.name
            );
        }
        assert_eq!(input["additionalProperties"], false, "{}", t.name);
    }
    let list = serde_json::to_string(&tools).unwrap().len();
    eprintln!("tools/list: {list} characters; descriptions and input schemas: {brief}");
    assert!(brief <= 10_000, "{brief}");
    // fetch_feed says it pages, and it does.
    let fetch = tools.iter().find(|t| t.name == "fetch_feed").unwrap();
    let d = fetch.description.as_deref().unwrap();
    assert!(
        d.contains("`cursor`") && d.contains("`next_cursor`") && !d.contains("RESPONSE_TOO_LARGE"),
        "{d}"
    );
    let page = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": srv.url("/big"), "limit": 40, "max_response_tokens": 2000}),
        )
        .await,
    );
    assert!(page["next_cursor"].is_string());
    // get_schema takes the tools' names.
    let get_schema = tools.iter().find(|t| t.name == "get_schema").unwrap();
    assert_eq!(
        get_schema.input_schema["properties"]["tool"]["enum"],
        json!([
            "fetch_feed",
            "fetch_article",
            "discover_feeds",
            "get_item",
            "ack_delivery"
        ])
    );
    let schema = structured(&call(&s, "get_schema", json!({"tool": "get_item"})).await);
    assert!(schema["$defs"]["Item"]["properties"]["next_offset"]["description"].is_string());
    let err = error_object(&call(&s, "get_schema", json!({"tool": "cache-list"})).await);
    assert_eq!(err["code"], "USAGE_ERROR");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_none_listing_costs_under_520_characters_an_item() {
    let srv = fixture_server().await;
    let s = spawn_with(&[], &[]).await;
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/news.xml"), "content_format": "none"}),
    )
    .await;
    let out = structured(&r);
    let items = out["feeds"][0]["items"].as_array().unwrap();
    let compact: usize = items.iter().map(|i| i.to_string().len()).sum::<usize>() / items.len();
    let cli = rss_cmd()
        .args(["fetch", "--no-cache", "--content", "none"])
        .arg(fixture_path("news.xml"))
        .output()
        .unwrap();
    let full: Value = serde_json::from_slice(&cli.stdout).unwrap();
    let full_items = full["feeds"][0]["items"].as_array().unwrap();
    let before: usize = full_items
        .iter()
        .map(|i| i.to_string().len())
        .sum::<usize>()
        / full_items.len();
    eprintln!(
        "content_format none: {compact} characters an item to a model, {before} in the CLI's contract"
    );
    assert!(compact <= 520, "{compact}");
    assert!(compact * 10 <= before * 6, "{compact} of {before}");
    // The CLI's contract keeps every field.
    assert!(full_items[0]["content_hash"].is_string() && full_items[0]["article"].is_null());
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_response_tokens_is_capped_by_the_server() {
    let srv = fixture_server().await;
    let s = spawn_with(&[], &[]).await;
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"url": srv.url("/rss20.xml"), "max_response_tokens": 100_000}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    assert!(
        err["message"].as_str().unwrap().contains("cap of 25000"),
        "{err}"
    );
    let wide = spawn_with(&["--max-response-tokens", "200000"], &[]).await;
    structured(
        &call(
            &wide,
            "fetch_feed",
            json!({"url": srv.url("/rss20.xml"), "max_response_tokens": 100_000}),
        )
        .await,
    );
    wide.client.cancel().await.unwrap();
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_error_has_one_shape_by_url_or_urls() {
    let srv = TestServer::with_routes(vec![("/gone", Reply::status(404))]).await;
    let s = spawn_with(&[], &[]).await;
    let one = call(&s, "fetch_feed", json!({"url": srv.url("/gone")})).await;
    let list = call(&s, "fetch_feed", json!({"urls": [srv.url("/gone")]})).await;
    for r in [&one, &list] {
        assert_eq!(r.is_error, Some(true));
        let v = payload(r);
        assert_eq!(v["feeds"][0]["status"], "error");
        assert_eq!(v["feeds"][0]["error"]["code"], "FEED_FETCH_FAILED");
        assert_eq!(v["feeds"][0]["error"]["details"]["http_status"], 404);
        assert_eq!(v["errors"][0], v["feeds"][0]["error"]);
    }
    let strip = |mut v: Value| {
        v["fetched_at"] = Value::Null;
        v
    };
    assert_eq!(strip(payload(&one)), strip(payload(&list)));
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_address_is_invalid_url_even_for_an_article() {
    let srv = site(1, 10, 2).await;
    let s = spawn_with(&["--deny-private-networks"], &[]).await;
    let err = error_object(&call(&s, "fetch_article", json!({"url": srv.url("/page/0")})).await);
    assert_eq!(err["code"], "INVALID_URL", "{err}");
    assert_eq!(err["details"]["private_network"], true);
    // By name too: the refusal met reading its robots.txt is the page's answer.
    let by_name = format!("http://localhost:{}/page/0", srv.addr.port());
    let err = error_object(&call(&s, "fetch_article", json!({"url": by_name})).await);
    assert_eq!(err["code"], "INVALID_URL", "{err}");
    assert_eq!(srv.count(), 0);
    let started = std::time::Instant::now();
    let err = error_object(&call(&s, "fetch_feed", json!({"url": srv.url("/feed")})).await);
    assert_eq!(err["code"], "INVALID_URL", "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    s.client.cancel().await.unwrap();
}

/// The done-when of issue 31: the official Python SDK, reading only content[], holds every
/// point on loopback feeds and pages (`tests/mcp_model_client.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_sees_every_point_from_the_text_alone() {
    let feed = linked_feed(6, 80);
    let news = std::fs::read(fixture_path("news.xml")).unwrap();
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/f0" | "/f1" | "/f2" | "/f3" => {
            Reply::xml(feed.replace("Story ", &format!("{} story ", &req.path[1..])))
        }
        "/broken" => Reply::ok(
            "<!DOCTYPE html><html><body>a page</body></html>",
            "text/html; charset=utf-8",
        ),
        "/news.xml" => Reply::xml(news.clone()),
        "/robots.txt" => Reply::status(404),
        p if p.starts_with("/page/") => Reply::ok(
            article_page(&format!("Page {}", &p[6..]), 40),
            "text/html; charset=utf-8",
        ),
        _ => Reply::status(404),
    })
    .await;
    let rss = env!("CARGO_BIN_EXE_rss");
    let base = srv.url("");
    if let Some(out) =
        crate::mcp::run_python_script("mcp_model_client.py", &[rss, &base], &[], "OK model view")
            .await
    {
        eprintln!("{}", out.trim());
    }
}
