//! Readers over MCP (issue 29): `fetch_feed` with `reader` and `unseen`, `ack_delivery`, a
//! delivery acknowledged by `rss ack` from another process, a cursor walk acknowledged page
//! by page, and bearer tokens that scope reader names.

use std::collections::HashSet;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::{args, call, error_object, spawn_in, structured};
use crate::readers::{Dirs, rss_of};

/// (feed_url, id) of every item of `out`, in order.
fn items_of(out: &Value) -> Vec<(String, String)> {
    out["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| {
            let url = f["feed_url"].as_str().unwrap().to_owned();
            // The compact view leaves an empty list out.
            f["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |i| (url.clone(), i["id"].as_str().unwrap().to_owned()))
        })
        .collect()
}

/// A feed of `n` dated items named `name 0…`, each with a body of `words` words.
fn feed(name: &str, n: usize, words: usize) -> String {
    let mut body = format!("<rss><channel><title>{name}</title>");
    for i in 0..n {
        body.push_str(&format!(
            "<item><title>{name} {i}</title><link>https://x.example/{name}/{i}</link>\
             <pubDate>Mon, 01 Jun 2026 10:{:02}:00 GMT</pubDate><description>{}</description></item>",
            59 - i,
            "word ".repeat(words)
        ));
    }
    body.push_str("</channel></rss>");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_delivery_is_acknowledged_by_rss_ack_from_another_process() {
    let srv = TestServer::with_routes(vec![("/f", Reply::xml(feed("f", 3, 5)))]).await;
    let d = Dirs::new();
    let state = d.state.path().to_str().unwrap().to_owned();
    let s = spawn_in(d.cache.path(), &[], &[("RSS_STATE_DIR", &state)]).await;
    let ask = json!({"url": srv.url("/f"), "reader": "digest", "unseen": true});
    let first = structured(&call(&s, "fetch_feed", ask.clone()).await);
    assert_eq!(items_of(&first).len(), 3);
    let token = first["delivery_token"].as_str().expect("a delivery_token");
    assert_eq!(first["delivery"]["token"].as_str(), Some(token));
    // Reading again over MCP changes nothing.
    let again = structured(&call(&s, "fetch_feed", ask.clone()).await);
    assert_eq!(items_of(&again), items_of(&first));
    // Another process, the CLI, acknowledges it.
    assert_eq!(d.ack(token), (3, 0));
    let after = structured(&call(&s, "fetch_feed", ask.clone()).await);
    assert!(items_of(&after).is_empty(), "{after}");
    assert!(after["delivery_token"].is_null());
    // ack_delivery answers the same token as acknowledged before.
    let r = call(&s, "ack_delivery", json!({"delivery_token": token})).await;
    let acked = structured(&r);
    assert_eq!(acked, json!({"acknowledged": 0, "already_acknowledged": 3}));
    // A changed token is refused with USAGE_ERROR.
    let last = if token.ends_with('A') { 'B' } else { 'A' };
    let bad = format!("{}{last}", &token[..token.len() - 1]);
    let r = call(&s, "ack_delivery", json!({"delivery_token": bad})).await;
    let e = error_object(&r);
    assert_eq!(e["code"], "USAGE_ERROR");
    // The results match their output schemas.
    let tools = s.client.list_all_tools().await.unwrap();
    for (name, value) in [("fetch_feed", &first), ("ack_delivery", &acked)] {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let schema = Value::Object((*tool.output_schema.clone().unwrap()).clone());
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(value), "{name}: {value}");
    }
    let ack_tool = tools.iter().find(|t| t.name == "ack_delivery").unwrap();
    let notes = ack_tool.annotations.as_ref().unwrap();
    assert_eq!(notes.read_only_hint, Some(false));
    assert_eq!(notes.idempotent_hint, Some(true));
    // `unseen` without a reader is a usage error.
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/f"), "unseen": true}),
    )
    .await;
    assert_eq!(error_object(&r)["code"], "USAGE_ERROR");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_walk_acknowledged_page_by_page_neither_repeats_nor_skips() {
    let srv = TestServer::with_routes(vec![
        ("/a", Reply::xml(feed("a", 12, 60))),
        ("/b", Reply::xml(feed("b", 20, 80))),
    ])
    .await;
    let urls = vec![srv.url("/a"), srv.url("/b")];
    let d = Dirs::new();
    let state = d.state.path().to_str().unwrap().to_owned();
    let s = spawn_in(d.cache.path(), &[], &[("RSS_STATE_DIR", &state)]).await;
    // The reader has seen three of a's items already.
    let seen = structured(
        &call(
            &s,
            "fetch_feed",
            json!({"url": urls[0], "reader": "digest", "unseen": true, "limit": 3}),
        )
        .await,
    );
    let before: HashSet<_> = items_of(&seen).into_iter().collect();
    let t = seen["delivery_token"].as_str().unwrap();
    let r = call(&s, "ack_delivery", json!({"delivery_token": t})).await;
    assert_eq!(structured(&r)["acknowledged"], 3);
    let ask = |cursor: Option<&str>| {
        let mut a = json!({"urls": urls, "limit": 40, "max_response_tokens": 2500,
                           "reader": "digest", "unseen": true});
        if let Some(c) = cursor {
            a["cursor"] = json!(c);
        }
        a
    };
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = structured(&call(&s, "fetch_feed", ask(cursor.as_deref())).await);
        let here = items_of(&page);
        assert!(!here.is_empty(), "an empty page: {page}");
        assert_eq!(page["delivery"]["items"], here.len());
        walked.extend(here);
        // Every page is cut from one run, as the first page saw the marks: nothing shifts.
        // The compact view leaves a zero count out.
        let left = page["truncation"]["items_on_later_pages"]
            .as_u64()
            .unwrap_or(0);
        assert_eq!(left as usize + walked.len(), 29, "page {pages}");
        assert_eq!(
            page["truncation"]["items_omitted_as_seen"], 3,
            "page {pages}"
        );
        let shifted = page["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|w| w["code"] == "CURSOR_SHIFTED");
        assert!(!shifted, "page {pages}: {}", page["warnings"]);
        // Acknowledged before the next page is asked for.
        let t = page["delivery_token"].as_str().unwrap();
        let r = call(&s, "ack_delivery", json!({"delivery_token": t})).await;
        assert!(structured(&r)["acknowledged"].as_u64().unwrap() >= 1);
        pages += 1;
        assert!(pages < 40, "the pages never end");
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    // Every unseen item exactly once: 32 items less the three seen before.
    let set: HashSet<_> = walked.iter().cloned().collect();
    assert_eq!(set.len(), walked.len(), "an item repeated");
    assert_eq!(walked.len(), 29);
    assert!(set.is_disjoint(&before));
    // One request per feed for the whole walk.
    assert_eq!(srv.hits_for("/a").len(), 2);
    assert_eq!(srv.hits_for("/b").len(), 1);
    // And all of it is acknowledged now.
    let after = structured(&call(&s, "fetch_feed", ask(None)).await);
    assert!(items_of(&after).is_empty(), "{after}");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_walk_of_teaser_feeds_with_drop_delivers_every_story_once() {
    // Two feeds whose every item has the body "Read more…": twenty stories, no two the same.
    let srv = TestServer::with_routes(vec![
        ("/a", Reply::xml(crate::readers::teasers("alpha", 10))),
        ("/b", Reply::xml(crate::readers::teasers("beta", 10))),
    ])
    .await;
    let urls = vec![srv.url("/a"), srv.url("/b")];
    let d = Dirs::new();
    let state = d.state.path().to_str().unwrap().to_owned();
    let s = spawn_in(d.cache.path(), &[], &[("RSS_STATE_DIR", &state)]).await;
    let ask = |cursor: Option<&str>| {
        let mut a = json!({"urls": urls, "dedupe": "drop", "max_response_tokens": 1500,
                           "reader": "digest", "unseen": true});
        if let Some(c) = cursor {
            a["cursor"] = json!(c);
        }
        a
    };
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let r = call(&s, "fetch_feed", ask(cursor.as_deref())).await;
        // The delivery and its token are within the budget too.
        let size = crate::mcp_pages::answer_tokens(&r);
        assert!(size <= 1500, "page {pages}: {size} tokens");
        let page = structured(&r);
        let here = items_of(&page);
        assert!(page["duplicates"].is_null(), "{}", page["duplicates"]);
        let t = page["delivery_token"].as_str().unwrap();
        let r = call(&s, "ack_delivery", json!({"delivery_token": t})).await;
        assert_eq!(structured(&r)["acknowledged"], here.len(), "page {pages}");
        walked.extend(here);
        pages += 1;
        assert!(pages < 40, "the pages never end");
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert!(pages >= 2, "{pages} pages");
    assert_eq!(walked.iter().collect::<HashSet<_>>().len(), 20);
    assert_eq!(walked.len(), 20);
    let after = structured(&call(&s, "fetch_feed", ask(None)).await);
    assert!(items_of(&after).is_empty(), "{after}");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_readers_page_with_its_delivery_is_within_its_budget() {
    // Many small items, so a page fills its budget closely, and the longest reader name.
    let srv = TestServer::with_routes(vec![
        ("/a", Reply::xml(feed("a", 40, 3))),
        ("/b", Reply::xml(feed("b", 40, 3))),
    ])
    .await;
    let urls = vec![srv.url("/a"), srv.url("/b")];
    let d = Dirs::new();
    let state = d.state.path().to_str().unwrap().to_owned();
    let s = spawn_in(d.cache.path(), &[], &[("RSS_STATE_DIR", &state)]).await;
    let reader = "r".repeat(rss::ops::MAX_NAME_CHARS);
    for budget in [900, 1300, 2000] {
        let mut cursor: Option<String> = None;
        for page in 0..3 {
            let mut a = json!({"urls": urls, "limit": 40, "max_response_tokens": budget,
                               "reader": reader, "unseen": true});
            if let Some(c) = &cursor {
                a["cursor"] = json!(c);
            }
            let r = call(&s, "fetch_feed", a).await;
            let size = crate::mcp_pages::answer_tokens(&r);
            assert!(
                size <= budget,
                "budget {budget}, page {page}: {size} tokens"
            );
            let out = structured(&r);
            assert!(out["delivery_token"].is_string());
            cursor = out["next_cursor"].as_str().map(str::to_owned);
        }
    }
    s.client.cancel().await.unwrap();
}

/// `rss mcp --http 127.0.0.1:0 --token-file FILE` on `d`'s directories; its URL.
async fn http_server(d: &Dirs, token_file: &std::path::Path) -> (tokio::process::Child, String) {
    let mut cmd = rss_tokio();
    // The feeds are on loopback, which `--http` refuses unless allowed.
    cmd.args([
        "mcp",
        "--http",
        "127.0.0.1:0",
        "--allow-private-networks",
        "--token-file",
    ])
    .arg(token_file)
    .env("RSS_CACHE_DIR", d.cache.path())
    .env("RSS_STATE_DIR", d.state.path());
    let (child, url) = spawn_listening(cmd).await;
    (child, url)
}

async fn http_client(url: &str, token: &str) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    config.auth_header = Some(token.to_owned());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
        .await
        .expect("initialized within 30 s")
        .expect("the client initializes")
}

async fn http_call(c: &RunningService<RoleClient, ()>, tool: &str, a: Value) -> Value {
    let call = c.call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args(a)));
    let r = tokio::time::timeout(Duration::from_secs(120), call)
        .await
        .expect("answered within two minutes")
        .expect("the call completes");
    if r.is_error == Some(true) {
        let text: String = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        return json!({ "error": serde_json::from_str::<Value>(&text).unwrap() });
    }
    r.structured_content.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bearer_tokens_with_one_reader_name_are_two_readers() {
    let srv = TestServer::with_routes(vec![(
        "/f",
        Reply::xml(rss_of(&[("a", None), ("b", None)])),
    )])
    .await;
    let d = Dirs::new();
    let file = d.cache.path().join("tokens");
    std::fs::write(
        &file,
        "# one token per agent\nalpha-7f3c91\n\n   beta-1d2e4a  \n",
    )
    .unwrap();
    // A token file readable by others is refused: the owner's alone.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (_server, url) = http_server(&d, &file).await;
    let alpha = http_client(&url, "alpha-7f3c91").await;
    let beta = http_client(&url, "beta-1d2e4a").await;
    let ask = json!({"url": srv.url("/f"), "reader": "digest", "unseen": true});
    let a = http_call(&alpha, "fetch_feed", ask.clone()).await;
    assert_eq!(items_of(&a).len(), 2);
    let a_token = a["delivery_token"].as_str().unwrap().to_owned();
    let acked = http_call(&alpha, "ack_delivery", json!({"delivery_token": a_token})).await;
    assert_eq!(acked["acknowledged"], 2);
    assert!(items_of(&http_call(&alpha, "fetch_feed", ask.clone()).await).is_empty());
    // beta's `digest` is another reader: it has seen nothing.
    let b = http_call(&beta, "fetch_feed", ask.clone()).await;
    assert_eq!(items_of(&b).len(), 2);
    // And beta can neither move alpha's marks nor alpha beta's.
    let theirs = http_call(
        &alpha,
        "fetch_feed",
        json!({"url": srv.url("/f"), "reader": "digest"}),
    )
    .await;
    let stolen = http_call(
        &beta,
        "ack_delivery",
        json!({"delivery_token": theirs["delivery_token"]}),
    )
    .await;
    assert_eq!(stolen["error"]["code"], "USAGE_ERROR", "{stolen}");
    assert_eq!(stolen["error"]["details"]["reason"], "other_client");
    let mine = http_call(
        &alpha,
        "ack_delivery",
        json!({"delivery_token": b["delivery_token"]}),
    )
    .await;
    assert_eq!(mine["error"]["details"]["reason"], "other_client");
    // Both are listed, apart, each under its token's scope.
    let (_, listed) = d.json(&["readers"]);
    let scopes: HashSet<&str> = listed["readers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["reader"] == "digest")
        .map(|r| r["scope"].as_str().unwrap())
        .collect();
    assert_eq!(scopes.len(), 2, "{listed}");
    // The machine's own user may acknowledge any client's delivery.
    assert_eq!(d.ack(b["delivery_token"].as_str().unwrap()), (2, 0));
    assert!(items_of(&http_call(&beta, "fetch_feed", ask).await).is_empty());
    alpha.cancel().await.unwrap();
    beta.cancel().await.unwrap();
}
