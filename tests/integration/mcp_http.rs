//! `rss mcp --http` as remote clients see it: the rmcp streamable HTTP client, the
//! official Python SDK, and plain HTTP requests probing the guard.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

use crate::helpers::*;
use crate::mcp::{args, python_with_mcp, run_python_client, structured};

const TOKEN: &str = "test-token-3f9a";
const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

/// A running `rss mcp --http 127.0.0.1:0 --allow-private-networks` (its feeds are on
/// loopback) with its own cache; killed when dropped.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    _cache: tempfile::TempDir,
}

impl HttpServer {
    async fn start(extra: &[&str]) -> HttpServer {
        let mut flags = vec!["--allow-private-networks"];
        flags.extend_from_slice(extra);
        HttpServer::launch(&flags, &[]).await
    }

    /// `rss mcp --http 127.0.0.1:0 FLAGS…` with `env`, private networks as they default.
    async fn launch(flags: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let cache = tempfile::tempdir().unwrap();
        let mut cmd = rss_tokio();
        cmd.args(["mcp", "--http", "127.0.0.1:0"])
            .args(flags)
            .envs(env.iter().copied())
            .env("RSS_CACHE_DIR", cache.path())
            .env("RSS_STATE_DIR", cache.path().join("state"))
            .env("RSS_MCP_TOKEN", TOKEN);
        let (child, url) = spawn_listening(cmd).await;
        HttpServer {
            child,
            url,
            _cache: cache,
        }
    }

    async fn client(&self) -> RunningService<RoleClient, ()> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url.clone());
        config.auth_header = Some(TOKEN.to_owned());
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        tokio::time::timeout(Duration::from_secs(30), ().serve(transport))
            .await
            .expect("initialized within 30 s")
            .expect("the client initializes")
    }

    fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_owned()
    }

    /// Sends the server `SIGTERM`.
    fn terminate(&self) {
        let pid = self.child.id().expect("the server is running");
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
    }

    /// The server's exit code, once it exits within `within` (else the test fails).
    async fn exit_within(&mut self, within: Duration) -> Option<i32> {
        tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("the server exits within {within:?}"))
            .unwrap()
            .code()
    }
}

async fn fetch_feed(
    client: &RunningService<RoleClient, ()>,
    url: &str,
) -> rmcp::model::CallToolResult {
    let call = client.call_tool(
        CallToolRequestParams::new("fetch_feed").with_arguments(args(json!({ "url": url }))),
    );
    tokio::time::timeout(Duration::from_secs(120), call)
        .await
        .expect("answered within two minutes")
        .expect("the call completes")
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}})
    .to_string()
}

/// Initializes a session at `url` as a raw client with the `Authorization` value `auth`;
/// the session's id.
async fn open_session(http: &reqwest::Client, url: &str, auth: &str) -> String {
    let init = http
        .post(url)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize_body())
        .send()
        .await
        .unwrap();
    assert!(init.status().is_success(), "{}", init.status());
    init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

async fn post(url: &str, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> u16 {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap().status().as_u16()
}

/// Posts a whole body one byte past the server's 4 MiB cap to `url` and reads the status the
/// server answered. The body is complete and exactly as long as announced, so the server has
/// read every byte when it answers: a larger one would be left partly unread, and a server
/// closing on unread bytes resets the connection, losing its answer by timing.
async fn post_oversized(url: &str, auth: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let len = (4 << 20) + 1;
    let url = url::Url::parse(url).unwrap();
    let addr = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\nauthorization: {auth}\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         content-length: {len}\r\n\r\n",
        url.path(),
        url.authority(),
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&vec![b' '; len]).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !answer.windows(2).any(|w| w == b"\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer to an oversized body within 10 s");
    let line = String::from_utf8_lossy(&answer);
    line.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {line:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rmcp_client_initializes_lists_tools_and_fetches() {
    let srv = fixture_server().await;
    let server = HttpServer::start(&[]).await;
    let client = server.client().await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "rss");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, rss::internals::tool_names());
    let r = fetch_feed(&client, &srv.url("/rss20.xml")).await;
    let doc = structured(&r);
    assert_eq!(doc["feeds"][0]["status"], "ok", "{doc}");
    assert_eq!(doc["feeds"][0]["title"], "Example Engineering Blog");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_client_initializes_lists_tools_and_fetches() {
    if python_with_mcp().is_none() {
        return;
    }
    let srv = fixture_server().await;
    let server = HttpServer::start(&[]).await;
    let feed = srv.url("/rss20.xml");
    let article = srv.url("/articles/story.html");
    run_python_client(&["--http", &server.url, TOKEN, &feed, &article], &[]).await;
}

/// Issue 31: a server for several clients refuses private and local addresses unless told
/// otherwise, with INVALID_URL, and sends them nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_private_networks_are_refused_unless_allowed() {
    let srv = fixture_server().await;
    let feed = srv.url("/rss20.xml");
    let server = HttpServer::launch(&[], &[]).await;
    let client = server.client().await;
    let r = fetch_feed(&client, &feed).await;
    let err = crate::mcp::error_object(&r);
    assert_eq!(err["code"], "INVALID_URL", "{err}");
    assert_eq!(err["details"]["private_network"], true);
    assert_eq!(srv.count(), 0, "nothing was sent");
    client.cancel().await.unwrap();
    for (flags, env) in [
        (&["--allow-private-networks"][..], &[][..]),
        (&[][..], &[("RSS_ALLOW_PRIVATE_NETWORKS", "1")][..]),
    ] {
        let server = HttpServer::launch(flags, env).await;
        let client = server.client().await;
        let doc = structured(&fetch_feed(&client, &feed).await);
        assert_eq!(doc["feeds"][0]["status"], "ok", "{doc}");
        client.cancel().await.unwrap();
    }
    let out = rss_cmd()
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--allow-private-networks",
            "--deny-private-networks",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sessions_share_one_gate_on_a_one_per_second_host() {
    // One request a second; 429 without Retry-After beyond it.
    let last = Arc::new(Mutex::new(None::<Instant>));
    let l = last.clone();
    let host = TestServer::start(move |req| {
        let mut last = l.lock().unwrap();
        if last.is_none_or(|t| req.arrived.duration_since(t) >= Duration::from_secs(1)) {
            *last = Some(req.arrived);
            Reply::xml(FEED)
        } else {
            Reply::status(429)
        }
    })
    .await;
    let server = HttpServer::start(&[]).await;
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(Arc::new(server.client().await));
    }
    let mut calls = Vec::new();
    for (s, client) in sessions.iter().enumerate() {
        for i in 0..8 {
            let client = client.clone();
            let url = host.url(&format!("/s{s}-{i}.xml"));
            calls.push(tokio::spawn(async move {
                structured(&fetch_feed(&client, &url).await)
            }));
        }
    }
    for call in calls {
        let doc = call.await.unwrap();
        assert_eq!(doc["feeds"][0]["status"], "ok", "{doc}");
    }
    let refusals = host.hits().iter().filter(|h| h.status == 429).count();
    assert!(refusals <= 1, "{refusals} refusals");
    assert_eq!(host.count(), 24 + refusals);
    assert_eq!(host.max_in_flight(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_answers_401_403_413_and_healthz() {
    let server = HttpServer::start(&[]).await;
    let auth = format!("Bearer {TOKEN}");
    assert_eq!(post(&server.url, &[], initialize_body()).await, 401);
    assert_eq!(
        post(
            &server.url,
            &[("authorization", "Bearer wrong")],
            initialize_body()
        )
        .await,
        401
    );
    let r = reqwest::Client::new()
        .post(&server.url)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let challenge = r.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.starts_with("Bearer"), "{challenge}");
    assert!(!r.text().await.unwrap().contains(TOKEN));
    assert_eq!(
        post(
            &server.url,
            &[("authorization", &auth), ("origin", "http://evil.example")],
            initialize_body()
        )
        .await,
        403
    );
    assert_eq!(
        post(
            &server.url,
            &[("authorization", &auth), ("host", "evil.example")],
            initialize_body()
        )
        .await,
        403
    );
    assert_eq!(post_oversized(&server.url, &auth).await, 413);
    assert_eq!(
        post(&server.url, &[("authorization", &auth)], initialize_body()).await,
        200
    );
    let health = reqwest::get(format!("{}/healthz", server.base()))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.text().await.unwrap(), "ok\n");
    // Ready: its store (files) is deliberately local; nothing of the setup is told.
    let ready = reqwest::get(format!("{}/readyz", server.base()))
        .await
        .unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    assert_eq!(ready.text().await.unwrap(), "ready\n");
    // Metrics beside /mcp ask for the token.
    let metrics = format!("{}/metrics", server.base());
    assert_eq!(reqwest::get(&metrics).await.unwrap().status().as_u16(), 401);
    let m = reqwest::Client::new()
        .get(&metrics)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap();
    assert_eq!(m.status().as_u16(), 200);
    assert!(
        m.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = m.text().await.unwrap();
    assert!(
        text.contains(r#"rss_http_refused_total{reason="token"}"#),
        "{text}"
    );
    assert!(!text.contains(TOKEN));
    // A call of a tool that does not exist is counted, under the one label `unknown`.
    let unknown = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "no_such_tool_1234", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let free = [
        ("authorization", auth.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "no_such_tool_1234"),
    ];
    post(&server.url, &free, unknown).await;
    let text = reqwest::Client::new()
        .get(&metrics)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains(r#"rss_mcp_calls_total{tool="unknown",result="error"} 1"#),
        "{text}"
    );
    assert!(!text.contains("no_such_tool_1234"));
}

/// A session-free request of the 2026-07-28 revision (no `initialize`, no session).
fn session_free_body(id: u32) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cap_refuses_one_more_old_style_session_and_never_a_session_free_request() {
    let server = HttpServer::start(&["--max-sessions", "2"]).await;
    let a = server.client().await;
    let _b = server.client().await;
    let auth = format!("Bearer {TOKEN}");
    assert_eq!(
        post(&server.url, &[("authorization", &auth)], initialize_body()).await,
        503
    );
    // Every slot taken, a session-free client is still served, as often as it asks.
    let free = [
        ("authorization", auth.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    for id in 0..3 {
        assert_eq!(post(&server.url, &free, session_free_body(id)).await, 200);
    }
    // A session closed frees its slot, and its close is answered as the official clients
    // expect (the Python SDK logs "Session termination failed" for anything but 200/204).
    a.cancel().await.unwrap();
    let http = reqwest::Client::new();
    let session = open_session(&http, &server.url, &auth).await;
    let closed = http
        .delete(&server.url)
        .header("authorization", &auth)
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status().as_u16(), 204);
}

#[test]
fn a_remote_address_without_allow_remote_and_a_token_is_a_usage_error() {
    let out = rss_cmd()
        .args(["mcp", "--http", "0.0.0.0:0"])
        .env("RSS_MCP_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = json(&out.stderr);
    assert_eq!(err["code"], "USAGE_ERROR");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(TOKEN));
    let out = rss_cmd()
        .args(["mcp", "--http", "0.0.0.0:0", "--allow-remote"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let help = rss_cmd().args(["mcp", "--help"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_server_with_exit_0_within_5_s_when_a_call_outlasts_the_drain() {
    let slow = slow_and_fast_host().await;
    let mut server = HttpServer::start(&["--drain-timeout", "1s"]).await;
    let client = Arc::new(server.client().await);
    let c = client.clone();
    let url = slow.url("/slow");
    let _call = tokio::spawn(async move {
        c.call_tool(
            CallToolRequestParams::new("fetch_feed").with_arguments(args(json!({ "url": url }))),
        )
        .await
    });
    wait_until("the slow host sees the call", || slow.count() == 1).await;
    let sent = Instant::now();
    server.terminate();
    let code = server.exit_within(Duration::from_secs(5)).await;
    assert_eq!(code, Some(0), "after {:?}", sent.elapsed());
}

/// The lines of `data:` events an SSE body has given so far, read until `until` holds of
/// them (or the body ends, or 10 s pass).
async fn sse_until(
    body: &mut reqwest::Response,
    seen: &mut Vec<serde_json::Value>,
    until: impl Fn(&[serde_json::Value]) -> bool,
) {
    let mut text = String::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !until(seen) {
        let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, body.chunk()).await else {
            return;
        };
        text.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = text.find('\n') {
            let line: String = text.drain(..=end).collect();
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str(data.trim())
            {
                seen.push(v);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_listen_with_its_result_and_never_waits_the_drain_bound_for_it() {
    let origin = slow_and_fast_host().await;
    // A drain bound no test waits: a listen held open to it would fail the 5 s below.
    let mut server = HttpServer::start(&["--drain-timeout", "10m"]).await;
    let listen = json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": [origin.url("/fast.xml")]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut body = reqwest::Client::new()
        .post(&server.url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(listen.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(body.status(), 200);
    let mut seen = Vec::new();
    sse_until(&mut body, &mut seen, |s| !s.is_empty()).await;
    assert!(
        seen.first().is_some_and(|v| v.get("id").is_none()),
        "the listen is acknowledged and open: {seen:?}"
    );
    server.terminate();
    sse_until(&mut body, &mut seen, |s| {
        s.iter().any(|v| v.get("id") == Some(&json!(7)))
    })
    .await;
    let result = seen.iter().find(|v| v.get("id") == Some(&json!(7)));
    assert!(
        result.is_some_and(|r| r.get("result").is_some()),
        "the listen ends with its result: {seen:?}"
    );
    // Within 5 s: its listen ended, not drained for 10 min.
    assert_eq!(server.exit_within(Duration::from_secs(5)).await, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_mid_call_frees_the_host_at_once() {
    let host = slow_and_fast_host().await;
    let server = HttpServer::start(&[]).await;
    // A raw client, as a crashed agent looks: it opens a session, starts a call, and its
    // connection closes while the call runs.
    let http = reqwest::Client::new();
    let auth = format!("Bearer {TOKEN}");
    let session = open_session(&http, &server.url, &auth).await;
    let send = |body: serde_json::Value| {
        http.post(&server.url)
            .header("authorization", &auth)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(body.to_string())
            .send()
    };
    let ack = send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    assert!(ack.status().is_success());
    let call = |id: u32, url: String| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "fetch_feed", "arguments": {"url": url}}})
    };
    let pending = send(call(2, host.url("/slow"))).await.unwrap();
    assert!(pending.status().is_success());
    wait_until("the slow host sees the call", || host.count() == 1).await;
    drop(pending);
    let started = Instant::now();
    let answer = send(call(3, host.url("/fast.xml")))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(answer.contains("\"status\":\"ok\""), "{answer}");
    // Held, the host would stay taken for the slow reply's 120 s.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the host stayed taken for {:?}",
        started.elapsed()
    );
    assert_eq!(host.hits_for("/fast.xml").len(), 1);
}

#[test]
fn bash_completion_offers_fetch_and_the_man_page_names_every_subcommand() {
    let out = rss_cmd().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    let script = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(script.path(), &out.stdout).unwrap();
    // Source the script and ask it what `rss fe<TAB>` completes to.
    let probe = format!(
        "source {}; COMP_WORDS=(rss fe); COMP_CWORD=1; COMP_LINE='rss fe'; COMP_POINT=6; _rss rss fe rss; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.path().display()
    );
    let got = std::process::Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    let words = String::from_utf8_lossy(&got.stdout);
    assert_eq!(
        words.trim(),
        "fetch",
        "{words} {}",
        String::from_utf8_lossy(&got.stderr)
    );

    let man = rss_cmd().arg("man").output().unwrap();
    assert!(man.status.success());
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(page.contains(".TH rss"), "{page}");
    for sub in subcommands() {
        assert!(
            page.contains(&format!("rss\\-{sub}(1)")),
            "the man page does not name {sub}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_only_the_token_that_opened_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "alpha-tok-1\nbeta-tok-2\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = HttpServer::start(&["--token-file", file.to_str().unwrap()]).await;
    let http = reqwest::Client::new();
    let session = open_session(&http, &server.url, "Bearer alpha-tok-1").await;
    let send = |method: reqwest::Method, token: &str, body: Option<serde_json::Value>| {
        let mut req = http
            .request(method, &server.url)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18");
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        req.send()
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    // Another valid token is told the session does not exist: it can neither use it nor
    // close it.
    let other = send(
        reqwest::Method::POST,
        "beta-tok-2",
        Some(initialized.clone()),
    )
    .await
    .unwrap();
    assert_eq!(other.status().as_u16(), 404);
    let closed = send(reqwest::Method::DELETE, "beta-tok-2", None)
        .await
        .unwrap();
    assert_eq!(closed.status().as_u16(), 404);
    // Its own token goes on using it.
    let own = send(reqwest::Method::POST, "alpha-tok-1", Some(initialized))
        .await
        .unwrap();
    assert!(own.status().is_success(), "{}", own.status());
    let tools = send(reqwest::Method::POST, "alpha-tok-1", Some(list))
        .await
        .unwrap();
    assert!(tools.status().is_success());
    assert!(tools.text().await.unwrap().contains("fetch_feed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_file_readable_by_others_or_not_a_file_is_refused_at_once() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let open = dir.path().join("open");
    std::fs::write(&open, "tok-1\n").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o644)).unwrap();
    let fifo = make_fifo(dir.path(), "fifo");
    for (file, says) in [
        (&open, "readable by other users"),
        (&fifo, "not a regular file"),
    ] {
        // A FIFO with no writer was waited on for ever.
        let (code, said) = said_within(
            rss_std(dir.path())
                .args(["mcp", "--http", "127.0.0.1:0", "--token-file"])
                .arg(file),
            Duration::from_secs(30),
        );
        assert_ne!(code, Some(0), "{said}");
        assert!(said.contains(says), "{said}");
    }
}

/// Runs `rss FLAGS mcp --http 127.0.0.1:0`, opens a session and makes a call, stops it with
/// SIGTERM, and returns every line it wrote on stderr.
async fn server_lines(flags: &[&str]) -> Vec<String> {
    let cache = tempfile::tempdir().unwrap();
    let mut child = rss_tokio()
        .args(flags)
        .args(["mcp", "--http", "127.0.0.1:0"])
        .env("RSS_CACHE_DIR", cache.path())
        .env("RSS_STATE_DIR", cache.path().join("state"))
        .env("RSS_MCP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the server names its address within 30 s")
        .unwrap()
        .expect("a first line");
    let at = first.find("http://").expect("the address");
    let url: String = first[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"')
        .collect();
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.auth_header = Some(TOKEN.to_owned());
    let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
    let client = ().serve(transport).await.unwrap();
    let _ = client
        .call_tool(
            CallToolRequestParams::new("get_schema")
                .with_arguments(args(json!({"tool": "get_item"}))),
        )
        .await
        .unwrap();
    client.cancel().await.unwrap();
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().unwrap().to_string()])
        .status()
        .unwrap();
    let mut out = vec![first];
    while let Ok(Ok(Some(l))) =
        tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await
    {
        out.push(l);
    }
    let exit = child.wait().await.unwrap();
    assert_eq!(exit.code(), Some(0), "{out:?}");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_silences_every_library_and_json_logs_are_one_object_a_line() {
    // -q: the address (asked for port 0, there is no other way to learn it), then nothing.
    let quiet = server_lines(&["-q"]).await;
    assert_eq!(quiet.len(), 1, "{quiet:?}");
    assert!(quiet[0].starts_with("rss: serving MCP on http://127.0.0.1:"));
    // -v --log-format json: the MCP library's lines too, each one JSON object, none a secret.
    let lines = server_lines(&["-v", "--log-format", "json"]).await;
    assert!(lines.len() > 2, "{lines:?}");
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
        assert!(
            v["level"].is_string() && v["fields"]["message"].is_string(),
            "{l}"
        );
        assert!(!l.contains(TOKEN), "{l}");
    }
    assert!(lines.iter().any(|l| l.contains("session")), "{lines:?}");
}

/// A client that opens connections and sends its request head a byte at a time (or nothing)
/// loses them once the head bound (10 s) passes, while the server keeps answering others:
/// before, such a connection stayed open as long as the client liked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_that_never_arrives_loses_its_connection_within_the_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = HttpServer::start(&[]).await;
    let addr = server.base().trim_start_matches("http://").to_owned();
    let started = Instant::now();
    let mut stalled = Vec::new();
    for i in 0..20 {
        let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
        if i % 2 == 0 {
            s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                .await
                .unwrap();
        }
        stalled.push(s);
    }
    // Others are answered meanwhile.
    let health = reqwest::get(format!("{}/healthz", server.base()))
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    for mut s in stalled {
        let mut rest = Vec::new();
        // Closed by the server (EOF, or a reset) well within 30 s of being opened.
        let read = tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut rest)).await;
        assert!(
            read.is_ok(),
            "a stalled connection was still open after 30 s"
        );
    }
    assert!(
        started.elapsed() >= Duration::from_secs(9),
        "closed before the bound: {:?}",
        started.elapsed()
    );
}

/// Opens a connection and sends a whole `POST /mcp` head with the token, announcing a body
/// of 200 bytes, and the body's first byte.
async fn trickle_a_body(server: &HttpServer) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let addr = server.base().trim_start_matches("http://").to_owned();
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 200\r\n\r\n{{"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s
}

/// A body sent a byte now and then is refused `408` once 30 s pass from its head, and the
/// connection closed: before, it held the connection as long as the client kept sending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_that_trickles_is_refused_408_after_30_s() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = HttpServer::start(&[]).await;
    let mut s = trickle_a_body(&server).await;
    let sent = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    // One byte every 2 s (150 bytes short of the body at the bound), reading what comes.
    let ended = tokio::time::timeout(Duration::from_secs(45), async {
        loop {
            tokio::select! {
                n = s.read(&mut buf) => match n {
                    Ok(0) | Err(_) => return,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                },
                _ = tokio::time::sleep(Duration::from_secs(2)) => {
                    if s.write_all(b" ").await.is_err() {
                        return;
                    }
                }
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the connection was still open after 45 s");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        sent.elapsed() >= Duration::from_secs(29),
        "{:?}",
        sent.elapsed()
    );
}

/// A trickling body is no call in flight: a drain does not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_does_not_wait_for_a_body_that_trickles() {
    let mut server = HttpServer::start(&[]).await;
    let _s = trickle_a_body(&server).await;
    // The head is in: its body is being waited for.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.terminate();
    // Within 10 s of SIGTERM, not its drain bound (60 s).
    assert_eq!(server.exit_within(Duration::from_secs(10)).await, Some(0));
}
