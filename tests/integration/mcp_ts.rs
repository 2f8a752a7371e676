//! `rss mcp` as the official TypeScript SDK's client sees it (issue 23): the tools, a
//! fetch, and the client's own clock. That client gives up on a request after its timeout
//! unless a progress notification resets it; the server answers every call by its
//! `--call-timeout` and sends a heartbeat while it waits, so a long wait in the gate ends
//! in an answer (`RATE_LIMITED` with the wait), never in the client's "Request timed out".

use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;

const FEED: &str = "<rss><channel><title>T</title><item><title>i</title><link>https://x.example/i</link></item></channel></rss>";

/// The Node binary and the node_modules holding `@modelcontextprotocol/sdk`, when
/// `.ci/run` installed them; `None` (saying so) otherwise.
fn node() -> Option<(String, String)> {
    let node = std::env::var("RSS_TEST_NODE")
        .ok()
        .filter(|p| !p.is_empty());
    let modules = std::env::var("RSS_TEST_NODE_MODULES")
        .ok()
        .filter(|p| !p.is_empty());
    match (node, modules) {
        (Some(n), Some(m)) => Some((n, m)),
        _ => {
            eprintln!(
                "skipped: RSS_TEST_NODE / RSS_TEST_NODE_MODULES are not set (.ci/run installs Node 22 and the TypeScript SDK and sets them)"
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_client_gets_an_answer_before_its_own_timeout() {
    let Some((node, modules)) = node() else {
        return;
    };
    let feed = TestServer::with_routes(vec![("/feed", Reply::xml(FEED))]).await;
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let n = served.clone();
    // Asks for 8 s, then takes 4 s to answer: 12 s in all, past a 10 s call timeout.
    let cool = TestServer::start(move |_| {
        if n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Reply::status(429).header("Retry-After", "8")
        } else {
            Reply::xml(FEED).delay(Duration::from_secs(4))
        }
    })
    .await;
    // Asks for 30 s every time.
    let cool2 = TestServer::start(|_| Reply::status(429).header("Retry-After", "30")).await;
    let cache = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client.mjs");
    let mut cmd = tokio::process::Command::new(&node);
    cmd.arg(script)
        .env("NODE_PATH", &modules)
        .env("RSS_BIN", env!("CARGO_BIN_EXE_rss"))
        .env("RSS_CACHE_DIR", cache.path())
        .env("FEED_URL", feed.url("/feed"))
        .env("COOL_URL", cool.url("/feed"))
        .env("COOL2_URL", cool2.url("/feed"))
        .env("CALL_TIMEOUT", "10")
        .env("CLIENT_TIMEOUT_MS", "6000")
        .env("TOOLS", rss::internals::tool_names().join(","));
    for var in rss_vars() {
        cmd.env_remove(var);
    }
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("the TypeScript client ends within 90 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "node client failed:\n{stdout}\n{stderr}"
    );
    let found: Value = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(found["feed_status"], "ok", "{found}");
    // The refused call: no client timeout; an answer by the call timeout (10 s, less the
    // answer's margin) after the 8 s wait, with heartbeats that kept the client waiting.
    assert!(found["slow_error"].is_null(), "{found}");
    assert_eq!(found["slow_code"], "RATE_LIMITED", "{found}");
    let ms = found["slow_ms"].as_u64().unwrap();
    assert!(
        (8_000..10_500).contains(&ms),
        "answered after {ms} ms: {found}"
    );
    assert!(found["progress"].as_u64().unwrap() >= 1, "{found}");
    // The heartbeat says what the call waits for: the cooling host, by name.
    let host = cool.url("").trim_start_matches("http://").to_owned();
    let said = found["messages"].to_string();
    assert!(said.contains(&format!("{host} (its turn in")), "{said}");
    assert_eq!(found["progress_increases"], true, "{found}");
    assert!(
        found["slow_retry_after_ms"].as_u64().unwrap() >= 1_000,
        "{found}"
    );
    // The refusal, then the retry after the 8 s (cut at the deadline).
    assert_eq!(cool.count(), 2, "{found}");
    // A wait past the call's own timeout_seconds: answered at once, nothing sent.
    assert_eq!(found["quick_code"], "RATE_LIMITED", "{found}");
    assert!(found["quick_ms"].as_u64().unwrap() < 2_000, "{found}");
    assert_eq!(
        cool2.count(),
        1,
        "only the call that learned the wait reached the host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_answers_by_its_call_timeout_with_what_finished() {
    use crate::mcp::{call, spawn_with, structured};
    let srv = TestServer::with_routes(vec![
        ("/fast", Reply::xml(FEED)),
        ("/slow", Reply::xml(FEED).delay(Duration::from_secs(30))),
    ])
    .await;
    let other = TestServer::with_routes(vec![("/fast", Reply::xml(FEED))]).await;
    let s = spawn_with(&["--call-timeout", "3"], &[]).await;
    let started = std::time::Instant::now();
    let r = call(
        &s,
        "fetch_feed",
        serde_json::json!({"urls": [srv.url("/slow"), other.url("/fast")]}),
    )
    .await;
    let took = started.elapsed();
    let out = structured(&r);
    assert!(took < Duration::from_secs(4), "answered after {took:?}");
    assert_eq!(out["feeds"][0]["status"], "error");
    assert_eq!(out["feeds"][0]["error"]["code"], "RATE_LIMITED", "{out}");
    assert!(
        out["feeds"][0]["error"]["details"]["retry_after_ms"]
            .as_u64()
            .unwrap()
            >= 1000
    );
    assert_eq!(out["feeds"][1]["status"], "ok", "{out}");
    // A call's timeout_seconds may lower the server's, not raise it.
    let started = std::time::Instant::now();
    let r = call(
        &s,
        "fetch_feed",
        serde_json::json!({"urls": [srv.url("/slow")], "timeout_seconds": 1}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(structured(&r)["feeds"][0]["error"]["code"], "RATE_LIMITED");
    s.client.cancel().await.unwrap();
}
