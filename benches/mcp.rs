//! MCP burst: 8 concurrent `fetch_feed` calls on one session for 8 feeds on a host that
//! allows 1 request per second (then `429`, no `Retry-After`), and the same 8 feeds as one
//! call with `urls`. Drives `rss mcp` with the rmcp client. Prints figures.
//!
//! Run: `cargo bench --bench mcp`

mod origin;

use std::process::Stdio;
use std::time::{Duration, Instant};

use origin::rss_bin::rss_tokio;
use origin::{Policy, RetryAfter, host, report, seen};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

async fn session(cache: &std::path::Path) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut cmd = rss_tokio();
    cmd.args(["mcp", "--cache-dir"]).arg(cache);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rss mcp");
    ().serve(transport).await.expect("initialize")
}

fn statuses(v: &Value) -> Vec<String> {
    v["feeds"].as_array().map_or_else(Vec::new, |f| {
        f.iter()
            .map(|x| x["status"].as_str().unwrap_or("?").to_owned())
            .collect()
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let lower = Duration::from_secs(7);

    let strict = host(Policy::strict(Duration::from_secs(1), RetryAfter::None)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let client = session(dir.path()).await;
    let started = Instant::now();
    let calls = (0..8).map(|i| {
        let args = json!({"url": strict.url(&format!("/b{i}")), "content_format": "none", "cache_policy": "no-cache"});
        client.call_tool(CallToolRequestParams::new("fetch_feed").with_arguments(args.as_object().unwrap().clone()))
    });
    let results = futures::future::join_all(calls).await;
    let wall = started.elapsed();
    let ok = results
        .iter()
        .filter(|r| {
            r.as_ref().is_ok_and(|r| {
                r.is_error != Some(true)
                    && r.structured_content
                        .as_ref()
                        .is_some_and(|v| statuses(v) == ["ok"])
            })
        })
        .count();
    report(
        "burst: 8 concurrent calls",
        ok,
        8,
        &seen(&[&strict], 0),
        wall,
        lower,
    );
    let _ = client.cancel().await;

    let strict = host(Policy::strict(Duration::from_secs(1), RetryAfter::None)).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let client = session(dir.path()).await;
    let urls: Vec<String> = (0..8).map(|i| strict.url(&format!("/u{i}"))).collect();
    let started = Instant::now();
    let args = json!({"urls": urls, "content_format": "none", "cache_policy": "no-cache"});
    let r = client
        .call_tool(
            CallToolRequestParams::new("fetch_feed")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .expect("the call completes");
    let wall = started.elapsed();
    let ok = r
        .structured_content
        .as_ref()
        .map_or(0, |v| statuses(v).iter().filter(|s| *s == "ok").count());
    report(
        "burst: one call with urls",
        ok,
        8,
        &seen(&[&strict], 0),
        wall,
        lower,
    );
    println!("  targets: 8 ok, <= 2 refusals, ratio <= 1.3");
    let _ = client.cancel().await;
}
