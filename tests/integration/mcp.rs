//! `rss mcp` as real clients see it: spawned as a child process and driven with the rmcp
//! client (and, in `python_sdk_client`, with the official Python SDK).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, NumberOrString,
    ProgressNotificationParam, ProgressToken, Request, RequestMetaObject,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::helpers::*;

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link><description>Body text</description></item></channel></rss>";

#[derive(Clone, Default)]
pub struct Client {
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }
}

pub struct Server {
    pub client: RunningService<RoleClient, Client>,
    progress: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    _cache: tempfile::TempDir,
}

async fn spawn(env: &[(&str, &str)]) -> Server {
    spawn_with(&[], env).await
}

/// `rss mcp ARGS…` with `env`, a cache of its own, and an rmcp client connected.
pub async fn spawn_with(extra: &[&str], env: &[(&str, &str)]) -> Server {
    let cache = tempfile::tempdir().unwrap();
    let mut server = spawn_in(cache.path(), extra, env).await;
    server._cache = cache;
    server
}

/// `rss mcp ARGS…` with `env` on the cache directory `dir`, and an rmcp client connected.
pub async fn spawn_in(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = rss_tokio();
    cmd.arg("mcp").args(extra).arg("--cache-dir").arg(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let handler = Client::default();
    let progress = handler.progress.clone();
    let client = handler
        .serve(transport)
        .await
        .expect("the server initializes");
    Server {
        client,
        progress,
        _cache: cache,
    }
}

pub fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().cloned().unwrap()
}

pub async fn call(s: &Server, tool: &str, a: Value) -> CallToolResult {
    let call = s
        .client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(args(a)));
    tokio::time::timeout(Duration::from_secs(120), call)
        .await
        .expect("the call is answered within two minutes")
        .expect("the call completes")
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("")
}

/// The last text block as JSON: the result a model reads (the first block is a summary
/// line).
pub fn payload(r: &CallToolResult) -> Value {
    let last = r
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .next_back()
        .expect("a text block");
    serde_json::from_str(&last).expect("the last text block is JSON")
}

/// The summary line of a result.
pub fn summary(r: &CallToolResult) -> String {
    r.content[0].as_text().expect("a text block").text.clone()
}

/// The error of an error result: its error object, or, for a result whose every feed or
/// page failed, the first of its `errors`.
pub fn error_object(r: &CallToolResult) -> Value {
    assert_eq!(
        r.is_error,
        Some(true),
        "expected an error result: {}",
        text(r)
    );
    let v = payload(r);
    match v.get("errors").and_then(Value::as_array) {
        Some(errors) => errors.first().cloned().expect("an error"),
        None => v,
    }
}

/// A successful result's structured content, checked to be what its text carries.
pub fn structured(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "unexpected error: {}", text(r));
    let v = r.structured_content.clone().expect("structured content");
    assert_eq!(
        payload(r),
        v,
        "the text block carries the structured result"
    );
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_with_schemas_annotations_and_instructions() {
    let s = spawn(&[]).await;
    let info = s.client.peer_info().expect("server info");
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("RATE_LIMITED"));
    let tools = s.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, rss::internals::tool_names());
    for t in &tools {
        assert!(
            t.description.as_ref().is_some_and(|d| d.len() > 60),
            "{} needs a teaching description",
            t.name
        );
        assert_eq!(
            t.input_schema.get("type"),
            Some(&json!("object")),
            "{}",
            t.name
        );
        let out = t.output_schema.as_ref().expect("an output schema");
        assert_eq!(out.get("type"), Some(&json!("object")));
        let ann = t.annotations.as_ref().expect("annotations");
        // Acknowledging a delivery is the one change a tool makes (issue 29).
        let changes = t.name == "ack_delivery";
        assert_eq!(ann.read_only_hint, Some(!changes), "{}", t.name);
        assert_eq!(ann.destructive_hint, Some(false), "{}", t.name);
        assert_eq!(ann.idempotent_hint, Some(true));
    }
    let fetch = &tools[0];
    assert_eq!(
        fetch.annotations.as_ref().unwrap().open_world_hint,
        Some(true)
    );
    let props = fetch.input_schema.get("properties").unwrap();
    for p in [
        "url",
        "urls",
        "content_format",
        "limit",
        "since",
        "max_content_chars",
        "max_response_tokens",
    ] {
        assert!(props.get(p).is_some(), "fetch_feed lacks {p}");
    }
    let limit_type = props["limit"]["type"].clone();
    assert!(
        limit_type == json!("integer") || limit_type == json!(["integer", "null"]),
        "{limit_type}"
    );
    let get_schema = tools.iter().find(|t| t.name == "get_schema").unwrap();
    assert_eq!(
        get_schema.annotations.as_ref().unwrap().open_world_hint,
        Some(false)
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_answers_and_validates_against_its_output_schema() {
    let srv = fixture_server().await;
    let s = spawn(&[]).await;
    let tools = s.client.list_all_tools().await.unwrap();
    let schema_of = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        jsonschema::validator_for(&Value::Object(
            (**t.output_schema.as_ref().unwrap()).clone(),
        ))
        .unwrap()
    };
    let check = |name: &str, v: &Value| {
        let validator = schema_of(name);
        let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    };

    let r = call(&s, "fetch_feed", json!({"url": srv.url("/rss20.xml")})).await;
    let out = structured(&r);
    check("fetch_feed", &out);
    assert_eq!(out["feeds"][0]["title"], "Example Engineering Blog");
    assert!(
        summary(&r).len() < 200 && !summary(&r).contains('\n'),
        "the first text block is a one-line summary: {}",
        summary(&r)
    );
    let id = out["feeds"][0]["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let r = call(&s, "fetch_feed", json!({"urls": [srv.url("/atom10.xml"), srv.url("/jsonfeed11.json")], "content_format": "none"})).await;
    let out = structured(&r);
    check("fetch_feed", &out);
    assert_eq!(out["feeds"].as_array().unwrap().len(), 2);

    let r = call(
        &s,
        "discover_feeds",
        json!({"site_url": srv.url("/page.html")}),
    )
    .await;
    let out = structured(&r);
    check("discover_feeds", &out);
    assert_eq!(out["feeds"].as_array().unwrap().len(), 3);

    let hits_before = srv.count();
    let r = call(
        &s,
        "get_item",
        json!({"feed_url": srv.url("/rss20.xml"), "id": id}),
    )
    .await;
    let out = structured(&r);
    check("get_item", &out);
    assert_eq!(out["item"]["title"], "Shipping the new parser & more");
    assert_eq!(out["from_cache"], true);
    assert_eq!(
        srv.count(),
        hits_before,
        "get_item is served from the cache"
    );

    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/rss20.xml"), "max_age_seconds": "3600"}),
    )
    .await;
    let out = structured(&r);
    assert_eq!(out["feeds"][0]["from_cache"], true);
    assert_eq!(
        out["feeds"][0]["attempts"],
        Value::Null,
        "0 attempts: left out"
    );
    assert_eq!(
        srv.count(),
        hits_before,
        "a fresh cached copy is served with no request"
    );

    let r = call(&s, "get_schema", json!({"tool": "fetch_feed"})).await;
    assert_eq!(structured(&r)["type"], "object");

    let err = error_object(
        &call(
            &s,
            "get_item",
            json!({"feed_url": srv.url("/rss20.xml"), "id": "nope"}),
        )
        .await,
    );
    assert_eq!(err["code"], "NOT_FOUND");
    let err = error_object(&call(&s, "fetch_feed", json!({"url": srv.url("/page.html")})).await);
    assert_eq!(err["code"], "FEED_PARSE_FAILED");
    assert!(err["message"].as_str().unwrap().contains("discover"));
    let err = error_object(&call(&s, "fetch_feed", json!({})).await);
    assert_eq!(err["code"], "USAGE_ERROR");
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"urls": (0..51).map(|i| format!("http://x/{i}")).collect::<Vec<_>>()}),
        )
        .await,
    );
    assert_eq!(err["code"], "USAGE_ERROR");
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_concurrent_calls_to_one_host_never_overlap_and_eight_hosts_do() {
    let srv = TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(50))).await;
    let s = spawn(&[]).await;
    let calls = (0..8).map(|i| call(&s, "fetch_feed", json!({"url": srv.url(&format!("/f{i}"))})));
    let results = futures::future::join_all(calls).await;
    for r in &results {
        assert_eq!(structured(r)["feeds"][0]["status"], "ok");
    }
    assert_eq!(srv.count(), 8);
    assert_eq!(srv.max_in_flight(), 1);

    let hosts: Vec<TestServer> = futures::future::join_all(
        (0..8).map(|_| TestServer::start(|_| Reply::xml(FEED).delay(Duration::from_millis(300)))),
    )
    .await;
    let calls = hosts
        .iter()
        .map(|h| call(&s, "fetch_feed", json!({"url": h.url("/f")})));
    let results = futures::future::join_all(calls).await;
    assert!(
        results
            .iter()
            .all(|r| structured(r)["feeds"][0]["status"] == "ok")
    );
    let first_done = hosts
        .iter()
        .map(|h| h.hits()[0].finished.unwrap())
        .min()
        .unwrap();
    let overlapping = hosts
        .iter()
        .filter(|h| h.hits()[0].arrived < first_done)
        .count();
    assert!(
        overlapping >= 2,
        "calls to distinct hosts ran one at a time"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttling_host_is_rate_limited_and_a_later_call_waits_out_the_cooldown() {
    let srv = TestServer::start(|_| Reply::status(429)).await;
    let s = spawn(&[("RSS_MAX_GATE_WAIT_SECS", "5")]).await;
    let err = error_object(&call(&s, "fetch_feed", json!({"url": srv.url("/f")})).await);
    assert_eq!(err["code"], "RATE_LIMITED");
    let wait_ms = err["details"]["retry_after_ms"]
        .as_u64()
        .expect("a numeric wait");
    assert!(err["details"]["retry_after_seconds"].as_u64().unwrap() >= 1);
    // Refused at 0, again at the ladder's 2.05 s and 4.1 s; the next rung (8.2 s) is past the
    // 5 s budget, 4.1 s from the last refusal.
    assert!((3_900..=4_100).contains(&wait_ms), "{wait_ms}");
    assert_eq!(
        srv.count(),
        3,
        "the refusal and the retries its budget covered"
    );

    let err = error_object(&call(&s, "fetch_feed", json!({"url": srv.url("/f")})).await);
    assert_eq!(err["code"], "RATE_LIMITED");
    let hits = srv.hits();
    assert_eq!(
        hits.len(),
        4,
        "the second call sends once, after the cooldown, and its next rung is past its budget"
    );
    let gap = hits[3].arrived.duration_since(hits[2].finished.unwrap());
    assert!(
        gap >= Duration::from_millis(3_900),
        "the host was asked again after {gap:?}"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_frees_its_host_at_once() {
    let srv = TestServer::start(|req| {
        if req.path == "/slow" {
            Reply::Stall
        } else {
            Reply::xml(FEED)
        }
    })
    .await;
    let s = spawn(&[]).await;
    let req = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("fetch_feed")
            .with_arguments(args(json!({"url": srv.url("/slow")}))),
    ));
    let handle = s
        .client
        .send_cancellable_request(req, PeerRequestOptions::no_options())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.count() == 0 {
        assert!(Instant::now() < deadline, "the slow request never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled_at = Instant::now();
    handle.cancel(Some("test".into())).await.unwrap();
    let r = call(&s, "fetch_feed", json!({"url": srv.url("/fast")})).await;
    assert_eq!(structured(&r)["feeds"][0]["status"], "ok");
    let fast = &srv.hits_for("/fast")[0];
    assert!(
        fast.arrived.duration_since(cancelled_at) < Duration::from_secs(3),
        "the host stayed held"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stringified_integers_work_and_an_over_budget_result_suggests_what_fits() {
    let mut body = String::from("<rss><channel><title>Big</title>");
    for i in 0..40 {
        body.push_str(&format!(
            "<item><title>Item {i}</title><link>https://x.example/{i}</link><description>{}</description></item>",
            "word ".repeat(400)
        ));
    }
    body.push_str("</channel></rss>");
    let srv = TestServer::with_routes(vec![("/big", Reply::xml(body))]).await;
    let s = spawn(&[]).await;
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/big"), "limit": "3", "max_content_chars": "50"}),
    )
    .await;
    let out = structured(&r);
    assert_eq!(out["feeds"][0]["item_count"], 3);
    assert_eq!(
        out["feeds"][0]["items"][0]["content"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        50
    );

    // Over the budget: a page of whole items that fits, and a cursor for the rest.
    let budget = 3000;
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/big"), "max_response_tokens": budget}),
    )
    .await;
    let page = structured(&r);
    let n = page["feeds"][0]["item_count"].as_u64().unwrap();
    assert!((1..25).contains(&n), "{n} items");
    assert!(serde_json::to_string(&page).unwrap().len() / 4 <= budget);
    assert!(page["next_cursor"].is_string());
    assert_eq!(page["truncation"]["items_on_later_pages"], 25 - n);
    assert!(summary(&r).contains("cursor"), "{}", summary(&r));

    // One item alone over the budget: not a dead end, but the item cut at a paragraph,
    // with where its rest starts (get_item's `offset`).
    let budget = 700;
    let r = call(
        &s,
        "fetch_feed",
        json!({"url": srv.url("/big"), "max_response_tokens": budget}),
    )
    .await;
    let page = structured(&r);
    let item = &page["feeds"][0]["items"][0];
    assert_eq!(item["content_truncated"], true, "{item}");
    let kept = item["content"].as_str().unwrap().chars().count() as u64;
    assert_eq!(item["next_offset"].as_u64(), Some(kept));
    assert!(page["next_cursor"].is_string());
    // A budget no cut can meet: RESPONSE_TOO_LARGE, with a budget that works.
    let err = error_object(
        &call(
            &s,
            "fetch_feed",
            json!({"urls": (0..50).map(|i| srv.url(&format!("/big?{i}"))).collect::<Vec<_>>(), "max_response_tokens": 200}),
        )
        .await,
    );
    assert_eq!(err["code"], "RESPONSE_TOO_LARGE", "{err}");
    let d = &err["details"];
    assert!(d["estimated_tokens"].as_u64().unwrap() > 200);
    assert_eq!(d["budget_tokens"], 200);
    let fits = d["suggested_max_response_tokens"].as_u64().unwrap();
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(&format!("max_response_tokens: {fits}")),
        "{err}"
    );
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_call_reports_progress_when_asked() {
    let srv = TestServer::start(|_| Reply::xml(FEED)).await;
    let s = spawn(&[]).await;
    let urls: Vec<String> = (0..4).map(|i| srv.url(&format!("/f{i}"))).collect();
    let mut params =
        CallToolRequestParams::new("fetch_feed").with_arguments(args(json!({"urls": urls})));
    let mut meta = RequestMetaObject::new();
    meta.set_progress_token(ProgressToken(NumberOrString::String("p-1".into())));
    params.meta = Some(meta);
    let r = s.client.call_tool(params).await.unwrap();
    assert_eq!(structured(&r)["feeds"].as_array().unwrap().len(), 4);
    // Notifications may trail the response by a moment.
    wait_until("four progress notifications", || {
        s.progress.lock().unwrap().len() >= 4
    })
    .await;
    let p = s.progress.lock().unwrap().clone();
    assert_eq!(p.len(), 4, "{p:?}");
    assert_eq!(p.last().unwrap().progress, 4.0);
    assert_eq!(p.last().unwrap().total, Some(4.0));
    s.client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_exits_cleanly_when_stdin_closes() {
    let cache = tempfile::tempdir().unwrap();
    let mut child = rss_std(cache.path())
        .args(["mcp", "--no-color"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdin.take());
    let (code, _) = exit_within(&mut child, Duration::from_secs(10));
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(out.is_empty(), "stdout carries only the protocol: {out:?}");
    assert_eq!(code, Some(0));
}

/// The official Python SDK as a third-party client: initialize, list tools, call
/// fetch_feed on a fixture and check the structured result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_client() {
    let srv = fixture_server().await;
    let cache = tempfile::tempdir().unwrap();
    let rss = env!("CARGO_BIN_EXE_rss");
    run_python_client(
        &[
            rss,
            &srv.url("/rss20.xml"),
            &srv.url("/articles/story.html"),
        ],
        &[("RSS_CACHE_DIR", cache.path())],
    )
    .await;
}

/// Runs `tests/mcp_client.py ARGS` with the Python SDK (skipping, as `python_with_mcp`
/// says, when there is none) and checks that every one of its checks passed.
pub async fn run_python_client(args: &[&str], env: &[(&str, &std::path::Path)]) {
    run_python_script("mcp_client.py", args, env, "OK fetch_feed").await;
}

/// Runs `tests/SCRIPT ARGS` with the Python SDK (skipping when there is none); its output
/// must hold `ok`. Returns that output.
pub async fn run_python_script(
    script: &str,
    args: &[&str],
    env: &[(&str, &std::path::Path)],
    ok: &str,
) -> Option<String> {
    let python = python_with_mcp()?;
    let script = format!("{}/tests/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut cmd = tokio::process::Command::new(&python);
    cmd.arg(script)
        .args(args)
        .env("RSS_TEST_TOOLS", rss::internals::tool_names().join(","));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the python client ends within two minutes")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(ok), "{stdout}");
    Some(stdout.into_owned())
}

/// The Python with the `mcp` package that `.ci/run` installs and names in
/// `RSS_TEST_PYTHON`; `None` (the test says it skipped) when it is not set, so a plain
/// `cargo test` installs nothing.
pub fn python_with_mcp() -> Option<String> {
    let python = std::env::var("RSS_TEST_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    if python.is_none() {
        eprintln!(
            "skipped: RSS_TEST_PYTHON is not set (.ci/run installs the MCP Python SDK and sets it)"
        );
    }
    python
}
