//! Soak: one `rss mcp` server handles 20,000 `fetch_feed` calls, 32 at a time, over 50
//! loopback hosts of which 5 throttle (429 with `Retry-After: 1` past 20 requests a
//! second). Prints the server's resident memory at the start, the middle and the end (it
//! must stay flat within a few MiB), how the calls ended, and, at the end, that no call is
//! left hanging and every host is idle. Bounded: every call has a two-minute limit, and
//! the run stops after 20,000 calls. Not part of CI.
//!
//! Run: `cargo bench --bench soak` (optionally `-- 2000` for a shorter run).

mod origin;

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::StreamExt;
use origin::rss_bin::rss_tokio;
use origin::{Policy, RetryAfter, TestServer, host, rss_mib};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const HOSTS: usize = 50;
const THROTTLING: usize = 5;
const IN_FLIGHT: usize = 32;

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let total: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let mut hosts: Vec<TestServer> = Vec::new();
    for i in 0..HOSTS {
        let policy = if i < THROTTLING {
            let mut p = Policy::strict(Duration::from_millis(50), RetryAfter::Seconds(1));
            p.latency = Duration::from_millis(2);
            p
        } else {
            Policy::lenient(2)
        };
        hosts.push(host(policy).await);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = rss_tokio();
    cmd.args(["mcp", "--cache-dir"]).arg(dir.path());
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rss mcp");
    let pid = transport.id().expect("server pid");
    let client = ().serve(transport).await.expect("initialize");
    let start_mib = rss_mib(pid);
    println!("soak: {total} calls, {IN_FLIGHT} in flight, {HOSTS} hosts ({THROTTLING} throttling)");
    println!("server memory at start:  {start_mib:7.1} MiB");

    let started = Instant::now();
    let mut ok = 0usize;
    let mut rate_limited = 0usize;
    let mut other = 0usize;
    let mut hung = 0usize;
    let mut middle_mib = 0.0;
    let urls: Vec<String> = (0..total)
        .map(|i| hosts[i % HOSTS].url(&format!("/s{}", i % 97)))
        .collect();
    let mut calls = futures::stream::iter(urls.into_iter().map(|url| {
        let client = &client;
        async move {
            let args = json!({"url": url, "content_format": "none", "cache_policy": "no-cache", "limit": 1});
            let call = client.call_tool(
                CallToolRequestParams::new("fetch_feed")
                    .with_arguments(args.as_object().unwrap().clone()),
            );
            tokio::time::timeout(Duration::from_secs(120), call).await
        }
    }))
    .buffer_unordered(IN_FLIGHT);
    let mut done = 0usize;
    while let Some(r) = calls.next().await {
        done += 1;
        match r {
            Err(_) => hung += 1,
            Ok(Err(_)) => other += 1,
            Ok(Ok(res)) => {
                let text: String = res
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect();
                if res.is_error != Some(true) {
                    ok += 1;
                } else if text.contains("RATE_LIMITED") {
                    rate_limited += 1;
                } else {
                    other += 1;
                }
            }
        }
        if done == total / 2 {
            middle_mib = rss_mib(pid);
            println!(
                "server memory at middle: {middle_mib:7.1} MiB ({done} calls, {:.1} s)",
                started.elapsed().as_secs_f64()
            );
        }
    }
    drop(calls);
    let end_mib = rss_mib(pid);
    println!(
        "server memory at end:    {end_mib:7.1} MiB ({done} calls, {:.1} s); middle to end {:+.1} MiB",
        started.elapsed().as_secs_f64(),
        end_mib - middle_mib
    );
    println!(
        "calls: {ok} ok, {rate_limited} RATE_LIMITED with a wait, {other} other errors, {hung} left hanging"
    );
    let refusals: usize = hosts
        .iter()
        .map(|h| h.hits().iter().filter(|x| x.status == 429).count())
        .sum();
    let requests: usize = hosts.iter().map(|h| h.count()).sum();
    println!("origin saw {requests} requests, {refusals} refusals");

    // Idle: a probe to each host gets a permit at once (nothing held, nothing queued).
    let probe = Instant::now();
    let mut busy = 0;
    for (i, h) in hosts.iter().enumerate().skip(THROTTLING) {
        let args = json!({"url": h.url(&format!("/probe{i}")), "content_format": "none", "cache_policy": "no-cache"});
        let r = client
            .call_tool(
                CallToolRequestParams::new("fetch_feed")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await;
        if !r.is_ok_and(|r| r.is_error != Some(true)) {
            busy += 1;
        }
    }
    println!(
        "after the run: {busy} of {} lenient hosts busy (probes took {:.2} s in all)",
        HOSTS - THROTTLING,
        probe.elapsed().as_secs_f64()
    );
    let _ = client.cancel().await;
}
