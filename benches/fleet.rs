//! A fleet behind one address: three `rss fetch` processes with separate cache directories
//! (as on three machines), 8 feeds each, on a host allowing 1 request/s (429 without
//! `Retry-After` beyond that), with host state in one Redis and without it (each its own
//! file store), side by side; and what Redis costs on the happy path (100 hosts, no
//! throttling) against the file store. Starts its own `redis-server` (from PATH) on a free
//! loopback port. Prints figures; asserts nothing.
//!
//! And the service a team runs (`service`): 40 concurrent MCP clients (20 session-free, 20
//! with old-style sessions), 800 `fetch_feed` calls over 100 feeds on 20 hosts (18 lenient,
//! 2 allowing one request a second, `429` with `Retry-After: 1` past it; every feed
//! `max-age=60`), through HAProxy (`contrib/haproxy.cfg`) to three `rss mcp --http` nodes on
//! one Redis, and to one node alone: calls answered, latency, refusals, origin requests per
//! feed, each node's memory (at 200 and 800 calls, at the end, peak) and CPU per 1,000 calls
//! (`-- service N` makes N calls, for memory over a longer run).
//! Needs `haproxy` on the PATH.
//!
//! Run: `cargo bench --bench fleet` (`-- service` for the service alone)

mod origin;

use std::process::Stdio;
use std::time::{Duration, Instant};

use origin::redis::{OwnRedis, free_port};
use origin::rss_bin::rss_tokio;
use origin::{Policy, RetryAfter, TestServer, host, self_inflicted};
use serde_json::Value;

/// Runs `rss fetch` in a fresh cache dir, with `store` as the gate store if any; feeds ok.
async fn fetch(store: Option<&str>, urls: Vec<String>) -> usize {
    let cache = tempfile::tempdir().expect("temp dir");
    let mut cmd = rss_tokio();
    if let Some(s) = store {
        cmd.env("RSS_GATE_STORE", s);
    }
    cmd.env("RSS_CACHE_DIR", cache.path())
        .args(["fetch", "--no-cache", "--content", "none", "-q"])
        .args(urls)
        .stderr(Stdio::null());
    let out = cmd.output().await.expect("run rss");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("rss printed JSON");
    doc["feeds"]
        .as_array()
        .map_or(0, |f| f.iter().filter(|x| x["status"] == "ok").count())
}

async fn three_machines(store: Option<&str>, mode: &str) {
    let srv: TestServer = host(Policy::strict(Duration::from_secs(1), RetryAfter::None)).await;
    let started = Instant::now();
    let runs: Vec<_> = (0..3)
        .map(|p| {
            let urls: Vec<String> = (0..8).map(|i| srv.url(&format!("/p{p}-{i}"))).collect();
            let store = store.map(str::to_owned);
            tokio::spawn(async move { fetch(store.as_deref(), urls).await })
        })
        .collect();
    let mut ok = 0;
    for r in runs {
        ok += r.await.unwrap();
    }
    let wall = started.elapsed();
    let hits = srv.hits();
    let refusals = hits.iter().filter(|h| h.status == 429).count();
    println!(
        "3 machines x 8 feeds, 1 req/s   {mode:<12} ok {ok:>2}/24 refusals {refusals:>2} self-inflicted {:>2} requests {:>3} wall {:>6.2}s allowance 23.0s ratio {:.2}x",
        self_inflicted(&srv, None),
        hits.len(),
        wall.as_secs_f64(),
        wall.as_secs_f64() / 23.0
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let only_service = std::env::args().any(|a| a == "service");
    if only_service {
        service().await;
        return;
    }
    let server = OwnRedis::start("redis-server", free_port());
    let url = server.url();
    three_machines(Some(&url), "redis").await;
    three_machines(None, "file stores").await;
    println!("  target (redis): 24/24, <= 1 refusal, 0 self-inflicted, ratio <= 1.3");

    let hosts: Vec<TestServer> =
        futures::future::join_all((0..100).map(|_| host(Policy::lenient(50)))).await;
    let urls: Vec<String> = hosts.iter().map(|h| h.url("/h")).collect();
    let mut best = [Duration::MAX; 2];
    for _ in 0..3 {
        for (k, store) in [Some(url.as_str()), None].into_iter().enumerate() {
            let started = Instant::now();
            let ok = fetch(store, urls.clone()).await;
            assert_eq!(ok, 100);
            best[k] = best[k].min(started.elapsed());
        }
    }
    println!(
        "happy path: 100 hosts, 50 ms    redis {:.3}s, file store {:.3}s: {:+.1} ms per fetch",
        best[0].as_secs_f64(),
        best[1].as_secs_f64(),
        (best[0].as_secs_f64() - best[1].as_secs_f64()) * 1e3 / 100.0
    );
    drop(server);
    service().await;
}

const CLIENTS: usize = 40;
/// Calls of a run, unless `-- service N` says otherwise.
const CALLS: usize = 800;

fn calls() -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "service")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|&n| n >= CLIENTS)
        .unwrap_or(CALLS)
}
const HOSTS: usize = 20;
const STRICT: usize = 2;
const FEEDS_PER_HOST: usize = 5;
const TOKEN: &str = "bench-token";

/// A node of the service: `rss mcp --http` with a cache and state of its own.
struct Node {
    child: tokio::process::Child,
    addr: String,
    _dirs: tempfile::TempDir,
}

impl Node {
    async fn start(redis: Option<&str>, lb: Option<&str>) -> Node {
        use tokio::io::AsyncBufReadExt;
        let dirs = tempfile::tempdir().expect("temp dir");
        let mut cmd = rss_tokio();
        cmd.args(["mcp", "--http", "127.0.0.1:0", "--allow-private-networks"])
            .env("RSS_CACHE_DIR", dirs.path().join("cache"))
            .env("RSS_STATE_DIR", dirs.path().join("state"))
            .env("RSS_MCP_TOKEN", TOKEN)
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(lb) = lb {
            cmd.args(["--allowed-host", lb]);
        }
        if let Some(r) = redis {
            cmd.env("RSS_GATE_STORE", r);
        }
        let mut child = cmd.spawn().expect("spawn rss mcp --http");
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let mut addr = String::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(at) = line.find("http://") {
                addr = line[at + 7..].trim().trim_end_matches("/mcp").to_owned();
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Node {
            child,
            addr,
            _dirs: dirs,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id().expect("pid")
    }
}

/// The CPU time (user + system) process `pid` used so far, seconds.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // Fields 14 and 15 of the line (utime, stime), counted after the command's `)`.
    (ticks(11) + ticks(12)) / 100.0
}

/// The peak resident memory of process `pid`, MiB.
fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// One call's outcome: how long it took, whether it answered ok, whether its host is strict.
struct Done {
    took: Duration,
    ok: bool,
    strict: bool,
}

/// A client: session-free (each call one request of the 2026-07-28 revision) or old-style
/// (an rmcp session).
enum Caller {
    Free(reqwest::Client, String),
    Session(rmcp::service::RunningService<rmcp::service::RoleClient, ()>),
}

impl Caller {
    async fn new(base: &str, session_free: bool) -> Caller {
        if session_free {
            return Caller::Free(reqwest::Client::new(), format!("{base}/mcp"));
        }
        use rmcp::ServiceExt;
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
        config.auth_header = Some(TOKEN.to_owned());
        let transport = StreamableHttpClientTransport::with_client(reqwest::Client::new(), config);
        Caller::Session(().serve(transport).await.expect("initialize"))
    }

    async fn fetch(&self, url: &str) -> bool {
        let args = serde_json::json!({"url": url, "content_format": "none"});
        match self {
            Caller::Session(c) => {
                let call = rmcp::model::CallToolRequestParams::new("fetch_feed")
                    .with_arguments(args.as_object().unwrap().clone());
                c.call_tool(call)
                    .await
                    .is_ok_and(|r| r.is_error != Some(true))
            }
            Caller::Free(http, mcp) => {
                let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "fetch_feed", "arguments": args, "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {}}}});
                let Ok(r) = http
                    .post(mcp)
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2026-07-28")
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", "fetch_feed")
                    .body(body.to_string())
                    .send()
                    .await
                else {
                    return false;
                };
                let text = r.text().await.unwrap_or_default();
                text.lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
                    .find(|v| v.get("id").is_some())
                    .is_some_and(|v| v["result"]["isError"] != true && v.get("result").is_some())
            }
        }
    }
}

/// One run of the service scenario: `nodes` behind `base` (HAProxy, or the node itself).
async fn service_run(label: &str, base: &str, nodes: &[Node], hosts: &[TestServer]) {
    let mut callers = Vec::new();
    for c in 0..CLIENTS {
        callers.push(Caller::new(base, c % 2 == 0).await);
    }
    let cpu_before: f64 = nodes.iter().map(|n| cpu_secs(n.pid())).sum();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let calls = calls();
    // Each node's memory once 200 and 800 calls are answered.
    let marks = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(usize, Vec<f64>)>::new()));
    let pids: Vec<u32> = nodes.iter().map(Node::pid).collect();
    let started = Instant::now();
    let per_client = calls / CLIENTS;
    let tasks: Vec<_> = callers
        .into_iter()
        .enumerate()
        .map(|(c, caller)| {
            let urls: Vec<(String, bool)> = (0..per_client)
                .map(|k| {
                    let n = c + k * CLIENTS;
                    let h = n % HOSTS;
                    let f = (n / HOSTS) % FEEDS_PER_HOST;
                    (hosts[h].url(&format!("/f{f}.xml")), h < STRICT)
                })
                .collect();
            let (done, marks, pids) = (done.clone(), marks.clone(), pids.clone());
            tokio::spawn(async move {
                let mut out = Vec::new();
                for (url, strict) in urls {
                    let t = Instant::now();
                    let ok = caller.fetch(&url).await;
                    out.push(Done {
                        took: t.elapsed(),
                        ok,
                        strict,
                    });
                    let n = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    if n == 200 || n == 800 {
                        let mem = pids.iter().map(|&p| origin::rss_mib(p)).collect();
                        marks.lock().unwrap().push((n, mem));
                    }
                }
                if let Caller::Session(s) = caller {
                    let _ = s.cancel().await;
                }
                out
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("client task"));
    }
    let wall = started.elapsed();
    let cpu: f64 = nodes.iter().map(|n| cpu_secs(n.pid())).sum::<f64>() - cpu_before;
    let mem_end: Vec<f64> = pids.iter().map(|&p| origin::rss_mib(p)).collect();
    let peaks: Vec<f64> = pids.iter().map(|&p| peak_mib(p)).collect();
    let ok = all.iter().filter(|d| d.ok).count();
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        v.get(((v.len() as f64 * p) as usize).min(v.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    let mut every: Vec<Duration> = all.iter().map(|d| d.took).collect();
    let mut lenient: Vec<Duration> = all.iter().filter(|d| !d.strict).map(|d| d.took).collect();
    let strict_hosts: Vec<&TestServer> = hosts[..STRICT].iter().collect();
    let lenient_hosts: Vec<&TestServer> = hosts[STRICT..].iter().collect();
    let s = origin::seen(&strict_hosts, 0);
    let l = origin::seen(&lenient_hosts, 0);
    let self_inflicted: usize = hosts[..STRICT]
        .iter()
        .map(|h| self_inflicted(h, Some(Duration::from_secs(1))))
        .sum();
    let mib = |v: &[f64]| {
        v.iter()
            .map(|m| format!("{m:.1}"))
            .collect::<Vec<_>>()
            .join("/")
    };
    println!("{label}");
    println!(
        "  answered {ok}/{calls} in {:.1}s; latency p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms (lenient hosts: p50 {:.0}, p99 {:.0} ms)",
        wall.as_secs_f64(),
        pct(&mut every, 0.50),
        pct(&mut every, 0.95),
        pct(&mut every, 0.99),
        pct(&mut lenient, 0.50),
        pct(&mut lenient, 0.99),
    );
    println!(
        "  origin: lenient {} requests for {} feeds ({:.2} a feed), strict {} for {} ({:.2} a feed), {} refusals, {} self-inflicted",
        l.requests,
        (HOSTS - STRICT) * FEEDS_PER_HOST,
        l.requests as f64 / ((HOSTS - STRICT) * FEEDS_PER_HOST) as f64,
        s.requests,
        STRICT * FEEDS_PER_HOST,
        s.requests as f64 / (STRICT * FEEDS_PER_HOST) as f64,
        s.refusals + l.refusals,
        self_inflicted,
    );
    println!(
        "  memory per node (MiB): {}, at the end ({calls}) {}, peak {}; CPU {:.2} s per 1,000 calls ({} node{})",
        marks
            .lock()
            .unwrap()
            .iter()
            .map(|(n, m)| format!("at {n} calls {}", mib(m)))
            .collect::<Vec<_>>()
            .join(", "),
        mib(&mem_end),
        mib(&peaks),
        cpu * 1000.0 / calls as f64,
        nodes.len(),
        if nodes.len() == 1 { "" } else { "s, summed" },
    );
}

async fn service_hosts() -> Vec<TestServer> {
    let mut hosts = Vec::new();
    for i in 0..HOSTS {
        let policy = if i < STRICT {
            Policy {
                max_age: Some(60),
                ..Policy::strict(Duration::from_secs(1), RetryAfter::Seconds(1))
            }
        } else {
            Policy {
                max_age: Some(60),
                ..Policy::lenient(20)
            }
        };
        hosts.push(host(policy).await);
    }
    hosts
}

async fn service() {
    let Some(haproxy) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("haproxy"))
            .find(|b| b.is_file())
    }) else {
        println!("service: skipped (no haproxy on the PATH)");
        return;
    };
    println!(
        "service: {CLIENTS} clients (half session-free), {} fetch_feed calls, {} feeds on {HOSTS} hosts ({STRICT} at 1 req/s, 429 + Retry-After: 1), max-age=60",
        calls(),
        HOSTS * FEEDS_PER_HOST
    );
    // Three nodes on one Redis behind HAProxy.
    let redis = OwnRedis::start("redis-server", free_port());
    let lb = format!("127.0.0.1:{}", free_port());
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(Node::start(Some(&redis.url()), Some(&lb)).await);
    }
    let config = format!("{}/contrib/haproxy.cfg", env!("CARGO_MANIFEST_DIR"));
    let mut balancer = std::process::Command::new(&haproxy)
        .args(["-db", "-f", &config])
        .env("RSS_LB", &lb)
        .env("RSS_NODE1", &nodes[0].addr)
        .env("RSS_NODE2", &nodes[1].addr)
        .env("RSS_NODE3", &nodes[2].addr)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("haproxy");
    for _ in 0..250 {
        if std::net::TcpStream::connect(&lb).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let hosts = service_hosts().await;
    service_run(
        "three nodes behind HAProxy, one Redis",
        &format!("http://{lb}"),
        &nodes,
        &hosts,
    )
    .await;
    let _ = balancer.kill();
    let _ = balancer.wait();
    drop(nodes);
    drop(redis);
    // One node alone, its own file store.
    let node = Node::start(None, None).await;
    let hosts = service_hosts().await;
    let base = format!("http://{}", node.addr);
    service_run("one node alone", &base, std::slice::from_ref(&node), &hosts).await;
}
