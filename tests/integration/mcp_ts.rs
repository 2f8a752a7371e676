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
    // Asks for 8 s, then never answers: the 10 s call timeout must cut the retry.
    let cool = TestServer::start(move |_| {
        if n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Reply::status(429).header("Retry-After", "8")
        } else {
            Reply::Stall
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
        ms < 10_000,
        "answered after {ms} ms, past the call timeout: {found}"
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
    // The refusal, then the retry once the 8 s were waited out (as the origin saw them),
    // which the deadline cut: the server hung up on it.
    let hits = cool.hits();
    assert_eq!(hits.len(), 2, "{found}");
    assert!(hits[1].arrived - hits[0].arrived >= Duration::from_secs(8));
    wait_until("the cut retry is hung up", || cool.hits()[1].client_hung_up).await;
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
    let srv =
        TestServer::with_routes(vec![("/fast", Reply::xml(FEED)), ("/slow", Reply::Stall)]).await;
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
    assert!(
        took < Duration::from_secs(3),
        "answered after {took:?}, past the call timeout"
    );
    assert_eq!(out["feeds"][0]["status"], "error");
    assert_eq!(out["feeds"][0]["error"]["code"], "RATE_LIMITED", "{out}");
    assert!(
        out["feeds"][0]["error"]["details"]["retry_after_ms"]
            .as_u64()
            .unwrap()
            >= 1000
    );
    assert_eq!(out["feeds"][1]["status"], "ok", "{out}");
    wait_until("the cut send is hung up", || {
        srv.hits_for("/slow")
            .first()
            .is_some_and(|h| h.client_hung_up)
    })
    .await;
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
    // Every feed of the call failed: an error result, in the shape of any fetch.
    assert_eq!(crate::mcp::error_object(&r)["code"], "RATE_LIMITED");
    s.client.cancel().await.unwrap();
}
