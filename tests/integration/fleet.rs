//! A fleet as a team runs it (issue 37): three `rss mcp --http` nodes on one Redis behind
//! HAProxy (`contrib/haproxy.cfg`, as shipped), driven by session-free clients of the
//! official Python SDK. Any node answers any request (a cursor walk across nodes, a
//! delivery acknowledged on another node), the origin sees one fetch per feed and no
//! self-inflicted refusal, `/readyz` follows Redis going and coming back, and a node
//! drained by SIGTERM answers its call in flight and exits 0. One test, one fleet: the
//! phases share the servers, the destructive ones last.
//!
//! Needs `.ci/run`'s components: `RSS_TEST_PYTHON` (the SDK), `RSS_TEST_REDIS_SERVER`,
//! `RSS_TEST_HAPROXY`; `RSS_TEST_PROMTOOL` also checks every node's `/metrics`.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use crate::helpers::redis::{OwnRedis, free_port};
use crate::helpers::server::Request;
use crate::helpers::*;

const TOKEN: &str = "fleet-token-71c2";

/// A node: `rss mcp --http 127.0.0.1:0` with a cache and state of its own (as on a machine
/// of its own), its store the fleet's Redis; killed when dropped.
struct Node {
    child: tokio::process::Child,
    addr: String,
    _dirs: tempfile::TempDir,
}

impl Node {
    async fn start(redis: &str, lb: &str) -> Node {
        let dirs = tempfile::tempdir().unwrap();
        let mut cmd = rss_tokio();
        cmd.args(["mcp", "--http", "127.0.0.1:0", "--allow-private-networks"])
            .args(["--allowed-host", lb])
            .env("RSS_CACHE_DIR", dirs.path().join("cache"))
            .env("RSS_STATE_DIR", dirs.path().join("state"))
            .env("RSS_GATE_STORE", redis)
            .env("RSS_MCP_TOKEN", TOKEN);
        let (child, url) = spawn_listening(cmd).await;
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        Node {
            child,
            addr,
            _dirs: dirs,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `/readyz`: its status and text.
    async fn ready(&self) -> (u16, String) {
        match reqwest::get(self.url("/readyz")).await {
            Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
            Err(_) => (0, String::new()),
        }
    }

    async fn metrics(&self) -> String {
        let r = reqwest::Client::new()
            .get(self.url("/metrics"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200);
        r.text().await.unwrap()
    }

    /// `fetch_feed` calls this node answered.
    async fn fetch_calls(&self) -> u64 {
        sample(
            &self.metrics().await,
            r#"rss_mcp_calls_total{tool="fetch_feed",result="ok"}"#,
        )
    }
}

/// The value of the series `name` in a Prometheus text (0 when absent).
fn sample(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

/// HAProxy running `contrib/haproxy.cfg` for three nodes; killed when dropped.
struct Balancer(std::process::Child);

impl Balancer {
    fn start(bin: &str, lb: &str, nodes: &[Node]) -> Balancer {
        let config = format!("{}/contrib/haproxy.cfg", env!("CARGO_MANIFEST_DIR"));
        let mut cmd = std::process::Command::new(bin);
        cmd.args(["-db", "-f", &config])
            .env("RSS_LB", lb)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (i, n) in nodes.iter().enumerate() {
            cmd.env(format!("RSS_NODE{}", i + 1), &n.addr);
        }
        let checked = std::process::Command::new(bin)
            .args(["-c", "-f", &config])
            .envs(cmd.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .output()
            .unwrap();
        assert!(checked.status.success(), "haproxy -c: {checked:?}");
        Balancer(cmd.spawn().unwrap())
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn feed(name: &str, items: usize) -> String {
    let mut body = format!("<rss><channel><title>{name}</title>");
    for i in 0..items {
        body.push_str(&format!(
            "<item><title>{name} {i}</title><link>https://x.example/{name}/{i}</link>\
             <pubDate>Mon, 01 Jun 2026 {:02}:{:02}:00 GMT</pubDate></item>",
            23 - i / 60,
            59 - i % 60,
        ));
    }
    body.push_str("</channel></rss>");
    body
}

/// One session-free request (MCP 2026-07-28) calling `tool`: its HTTP status and, for a
/// `200`, the JSON-RPC answer.
async fn session_free(base: &str, tool: &str, args: Value) -> (u16, Option<Value>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": args, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}});
    let sent = reqwest::Client::new()
        .post(format!("{base}/mcp"))
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .body(body.to_string())
        .send()
        .await;
    let Ok(r) = sent else { return (0, None) };
    let status = r.status().as_u16();
    let text = r.text().await.unwrap_or_default();
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some());
    (status, answer)
}

/// `tests/fleet_client.py` running: its two answers come one line each, the second once
/// the test says `go`.
struct Python {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Python {
    fn start(args: &[&str]) -> Python {
        let python = std::env::var("RSS_TEST_PYTHON").unwrap();
        let script = format!("{}/tests/fleet_client.py", env!("CARGO_MANIFEST_DIR"));
        let mut child = tokio::process::Command::new(python)
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        Python { child, lines }
    }

    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
            .await
            .expect("the Python client answers within two minutes")
            .unwrap();
        match line {
            Some(l) => json(l.as_bytes()),
            None => {
                let mut err = String::new();
                use tokio::io::AsyncReadExt;
                let _ = self
                    .child
                    .stderr
                    .take()
                    .unwrap()
                    .read_to_string(&mut err)
                    .await;
                panic!("fleet_client.py ended: {err}");
            }
        }
    }

    async fn go(&mut self) {
        use tokio::io::AsyncWriteExt;
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// What it wrote on stderr (the SDK's warnings), once it has ended.
    async fn finish(self) -> String {
        let out = self.child.wait_with_output().await.unwrap();
        assert!(out.status.success(), "fleet_client.py: {out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// A host allowing one request a second, `429` with `Retry-After: 1` past it; it counts
/// what it refused.
fn strict_host() -> impl Fn(&Request) -> Reply + Send + Sync + 'static {
    let last: Arc<Mutex<Option<Instant>>> = Arc::default();
    move |req: &Request| {
        let mut last = last.lock().unwrap();
        if last.is_some_and(|t| req.arrived.duration_since(t) < Duration::from_secs(1)) {
            return Reply::status(429).header("Retry-After", "1");
        }
        *last = Some(req.arrived);
        Reply::xml(feed("strict", 2))
    }
}

/// An origin whose one feed is answered only when the test lets it: a call that is in
/// flight for as long as the test needs, and no longer.
struct Held {
    url: String,
    asked: Arc<tokio::sync::Notify>,
    release: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Held {
    async fn start() -> Held {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/held", listener.local_addr().unwrap());
        let asked = Arc::new(tokio::sync::Notify::new());
        let (release, released) = tokio::sync::oneshot::channel::<()>();
        let told = asked.clone();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            told.notify_one();
            let _ = released.await;
            let body = feed("held", 1);
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/rss+xml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        });
        Held {
            url,
            asked,
            release: Some(release),
        }
    }
}

fn env_or_skip(name: &str) -> Option<String> {
    let v = std::env::var(name).ok().filter(|v| !v.is_empty());
    if v.is_none() {
        eprintln!("skipped: {name} is not set (.ci/run sets it)");
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_nodes_behind_haproxy_answer_as_one_service() {
    let (Some(_), Some(redis_bin), Some(haproxy)) = (
        env_or_skip("RSS_TEST_PYTHON"),
        env_or_skip("RSS_TEST_REDIS_SERVER"),
        env_or_skip("RSS_TEST_HAPROXY"),
    ) else {
        return;
    };
    let cacheable = |body: String| Reply::xml(body).header("Cache-Control", "max-age=300");
    let origin = TestServer::with_routes(vec![
        ("/walk", cacheable(feed("walk", 60))),
        ("/reader", cacheable(feed("reader", 5))),
    ])
    .await;
    let mut held = Held::start().await;
    let strict = TestServer::start(strict_host()).await;
    let redis_port = free_port();
    let redis = OwnRedis::start(&redis_bin, redis_port);
    let lb = format!("127.0.0.1:{}", free_port());
    let mut nodes = Vec::new();
    for _ in 0..3 {
        nodes.push(Node::start(&redis.url(), &lb).await);
    }
    let _balancer = Balancer::start(&haproxy, &lb, &nodes);
    let lb_url = format!("http://{lb}/mcp");
    wait_for("HAProxy answers", || async {
        session_free(
            &format!("http://{lb}"),
            "get_schema",
            json!({"tool": "ack_delivery"}),
        )
        .await
        .0 == 200
    })
    .await;

    // A cursor walk whose pages land on every node returns every item once, from one fetch.
    let before: Vec<u64> = futures::future::join_all(nodes.iter().map(Node::fetch_calls)).await;
    let strict_urls: Vec<String> = (0..3).map(|i| strict.url(&format!("/s{i}"))).collect();
    let mut client = Python::start(&[
        &lb_url,
        TOKEN,
        &origin.url("/walk"),
        &origin.url("/reader"),
        &strict_urls.join(","),
    ]);
    let walk = client.answer().await;
    let ids: Vec<&str> = walk["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let unique: HashSet<&str> = ids.iter().copied().collect();
    assert_eq!(ids.len(), 60, "{walk}");
    assert_eq!(unique.len(), 60);
    let pages = walk["pages"].as_u64().unwrap();
    assert!(pages >= 3, "{pages} pages");
    let after: Vec<u64> = futures::future::join_all(nodes.iter().map(Node::fetch_calls)).await;
    let served: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(served.iter().sum::<u64>(), pages);
    assert!(served.iter().all(|&n| n >= 1), "pages per node: {served:?}");
    assert_eq!(origin.hits_for("/walk").len(), 1, "one fetch for the fleet");

    // A delivery made on one node is acknowledged on another; a strict host asked from all
    // three at once sees no refusal beyond its first contact; an old-style session works.
    client.go().await;
    let rest = client.answer().await;
    let stderr = client.finish().await;
    let d = &rest["delivery"];
    assert_eq!(d["delivered"], 5, "{rest}");
    assert_eq!(d["acknowledged"], 5);
    assert_eq!(d["unseen_after"], 0);
    assert_eq!(d["altered_refused"], true);
    assert_eq!(rest["strict"], json!(["ok", "ok", "ok"]), "{rest}");
    assert_eq!(rest["legacy_calls"], 2);
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
    let refusals = strict.hits().iter().filter(|h| h.status == 429).count();
    assert!(
        refusals <= 1,
        "{refusals} refusals: only the first contact may be refused"
    );

    // Every node's metrics pass promtool.
    if let Some(promtool) = env_or_skip("RSS_TEST_PROMTOOL") {
        for n in &nodes {
            let text = n.metrics().await;
            let mut check = tokio::process::Command::new(&promtool)
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            use tokio::io::AsyncWriteExt;
            check
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .await
                .unwrap();
            let out = check.wait_with_output().await.unwrap();
            assert!(out.status.success(), "promtool: {out:?}\n{text}");
        }
    }

    // Redis goes: every node turns unready, the fleet still answers; it comes back: ready.
    drop(redis);
    for n in &nodes {
        wait_for("a node without its store is unready", || async {
            n.ready().await == (503, "the shared store does not answer\n".to_owned())
        })
        .await;
    }
    let (status, _) = session_free(
        &format!("http://{lb}"),
        "get_schema",
        json!({"tool": "get_item"}),
    )
    .await;
    assert_eq!(status, 200, "the fleet answers while its store is down");
    let _redis = OwnRedis::start(&redis_bin, redis_port);
    for n in &nodes {
        wait_for("a node whose store is back is ready", || async {
            n.ready().await.0 == 200
        })
        .await;
    }

    // SIGTERM with a call in flight: unready at once, new requests refused (the balancer
    // sends them elsewhere), the call answered, exit 0.
    let node = nodes.pop().unwrap();
    let base = node.url("");
    let in_flight = {
        let base = base.clone();
        let url = held.url.clone();
        tokio::spawn(async move { session_free(&base, "fetch_feed", json!({"url": url})).await })
    };
    tokio::time::timeout(Duration::from_secs(30), held.asked.notified())
        .await
        .expect("the held feed is asked within 30 s");
    let pid = node.child.id().unwrap();
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    assert!(signalled.success());
    wait_for("the drained node is unready", || async {
        node.ready().await == (503, "draining\n".to_owned())
    })
    .await;
    assert!(
        !in_flight.is_finished(),
        "the call still runs while the node drains"
    );
    let (refused, _) = session_free(&base, "get_schema", json!({"tool": "get_item"})).await;
    assert_eq!(refused, 503);
    let (status, _) = session_free(
        &format!("http://{lb}"),
        "get_schema",
        json!({"tool": "get_item"}),
    )
    .await;
    assert_eq!(status, 200, "the balancer sends around the draining node");
    let _ = held.release.take().unwrap().send(());
    let (status, answer) = in_flight.await.unwrap();
    assert_eq!(status, 200);
    let answer = answer.expect("the call in flight is answered");
    let result = &answer["result"]["structuredContent"];
    assert_eq!(result["feeds"][0]["status"], "ok", "{answer}");
    let mut node = node;
    let exit = tokio::time::timeout(Duration::from_secs(15), node.child.wait())
        .await
        .expect("the node exits once its call is answered")
        .unwrap();
    assert_eq!(exit.code(), Some(0));
}

/// Polls `cond` every 50 ms until it holds (30 s at most).
async fn wait_for<F, Fut>(what: &str, cond: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond().await {
        assert!(Instant::now() < deadline, "{what} within 30 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
