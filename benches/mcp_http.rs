//! MCP over HTTP under load: one `rss mcp --http` server, 50 concurrent sessions (rmcp
//! streamable HTTP clients) making 1,000 `fetch_feed` calls over 20 loopback hosts, 2 of
//! them throttling (5 requests a second, then `429` with `Retry-After: 1`). Prints call
//! latency (p50, p99), the server's memory at start and end, and the refusals provoked.
//!
//! Run: `cargo bench --bench mcp_http`

mod origin;

use std::process::Stdio;
use std::time::{Duration, Instant};

use origin::rss_bin::rss_tokio;
use origin::{Policy, RetryAfter, host, rss_mib, seen};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

const SESSIONS: usize = 50;
const CALLS: usize = 1_000;
const HOSTS: usize = 20;
const THROTTLING: usize = 2;
const TOKEN: &str = "bench-token";

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let mut hosts = Vec::new();
    for i in 0..HOSTS {
        let policy = if i < THROTTLING {
            Policy {
                allow: Some((5, Duration::from_secs(1))),
                retry_after: RetryAfter::Seconds(1),
                ..Policy::lenient(20)
            }
        } else {
            Policy::lenient(20)
        };
        hosts.push(host(policy).await);
    }
    let cache = tempfile::tempdir().expect("temp dir");
    let mut server = rss_tokio()
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--allow-private-networks",
            "--max-sessions",
            "64",
        ])
        .env("RSS_CACHE_DIR", cache.path())
        .env("RSS_STATE_DIR", cache.path().join("state"))
        .env("RSS_MCP_TOKEN", TOKEN)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn rss mcp --http");
    let mut lines = tokio::io::BufReader::new(server.stderr.take().unwrap()).lines();
    let mut url = String::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(at) = line.find("http://") {
            url = line[at..].trim().to_owned();
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let pid = server.id().expect("pid");
    let mem_start = rss_mib(pid);

    let mut clients = Vec::new();
    for _ in 0..SESSIONS {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
        config.auth_header = Some(TOKEN.to_owned());
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        clients.push(().serve(transport).await.expect("initialize"));
    }
    let started = Instant::now();
    let per_session = CALLS / SESSIONS;
    let mut tasks = Vec::new();
    for (s, client) in clients.into_iter().enumerate() {
        let urls: Vec<String> = (0..per_session)
            .map(|c| {
                let n = s * per_session + c;
                hosts[n % HOSTS].url(&format!("/s{s}/c{c}.xml"))
            })
            .collect();
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            for url in urls {
                let args =
                    json!({"url": url, "content_format": "none", "cache_policy": "no-cache"});
                let t = Instant::now();
                let r = client
                    .call_tool(
                        CallToolRequestParams::new("fetch_feed")
                            .with_arguments(args.as_object().unwrap().clone()),
                    )
                    .await;
                let ok = r.is_ok_and(|r| r.is_error != Some(true));
                out.push((t.elapsed(), ok));
            }
            let _ = client.cancel().await;
            out
        }));
    }
    let mut latencies = Vec::new();
    let mut ok = 0;
    for t in tasks {
        for (d, good) in t.await.expect("session task") {
            latencies.push(d);
            ok += usize::from(good);
        }
    }
    let wall = started.elapsed();
    let mem_end = rss_mib(pid);
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let refs: Vec<_> = hosts.iter().collect();
    let s = seen(&refs, 0);
    println!(
        "mcp --http: {SESSIONS} sessions, {CALLS} calls, {HOSTS} hosts ({THROTTLING} throttling at 5/s)"
    );
    println!(
        "  ok {ok}/{CALLS}, wall {:.2}s, call latency p50 {:.0} ms p99 {:.0} ms",
        wall.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3
    );
    println!(
        "  server memory {mem_start:.1} MiB at start, {mem_end:.1} MiB at end; {} requests, {} refusals",
        s.requests, s.refusals
    );
    let _ = server.start_kill();
}
