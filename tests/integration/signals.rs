//! Signals and a misbehaving MCP peer: `SIGTERM`/`SIGINT` end runs cleanly and quickly, and
//! lines that are not JSON-RPC get JSON-RPC errors instead of silence.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::helpers::*;

fn send_signal(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_and_sigterm_stop_a_long_fetch_within_two_seconds() {
    for (sig, code) in [("INT", 130), ("TERM", 143)] {
        let srv = TestServer::start(|_| Reply::Stall).await;
        let cache = tempfile::tempdir().unwrap();
        let mut child = rss_std(cache.path())
            .args(["fetch", "--no-cache", &srv.url("/a"), &srv.url("/b")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until("the server sees the request", || srv.count() >= 1).await;
        send_signal(&child, sig);
        let (exit, took) = exit_within(&mut child, Duration::from_secs(10));
        assert_eq!(exit, Some(code), "SIG{sig}");
        assert!(took < Duration::from_secs(2), "SIG{sig} took {took:?}");
        let out = child.wait_with_output().unwrap();
        assert!(out.stdout.is_empty());
        assert_eq!(json(&out.stderr)["code"], "INTERRUPTED");
        // Nothing new was sent after the signal.
        assert_eq!(srv.count(), 1);
    }
}

/// A raw line-level MCP session over the child's stdio.
struct Raw {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    _cache: tempfile::TempDir,
}

impl Raw {
    fn start() -> Raw {
        let cache = tempfile::tempdir().unwrap();
        let mut child = rss_std(cache.path())
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Raw {
            child,
            out,
            _cache: cache,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn reply(&mut self) -> Value {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn initialize(&mut self) {
        self.send(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        self.send(b"\n");
        assert_eq!(self.reply()["id"], 0);
        self.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    }
}

#[test]
fn malformed_lines_get_json_rpc_errors_and_the_server_stays_up() {
    let mut s = Raw::start();
    s.initialize();
    s.send(b"{this is not json\n");
    let r = s.reply();
    assert_eq!(r["error"]["code"], -32700);
    assert!(r["id"].is_null());
    s.send(&[0xff, 0xfe, 0x00, b'\n']);
    assert_eq!(s.reply()["error"]["code"], -32700);
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":\"nonsense\"}\n");
    let r = s.reply();
    assert_eq!(r["id"], 42);
    assert_eq!(r["error"]["code"], -32600);
    let mut garbage = vec![b'z'; 10 * 1024 * 1024];
    garbage.push(b'\n');
    s.send(&garbage);
    let r = s.reply();
    assert!(
        r["error"]["code"] == -32600 || r["error"]["code"] == -32700,
        "{r}"
    );
    // Still serving.
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}\n");
    let r = s.reply();
    assert_eq!(r["id"], 9);
    assert!(r["result"]["tools"].as_array().unwrap().len() >= 4);
    send_signal(&s.child, "TERM");
    let (code, _) = exit_within(&mut s.child, Duration::from_secs(10));
    assert_eq!(code, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_mcp_server_cancelling_its_calls() {
    let srv = TestServer::start(|_| Reply::Stall).await;
    let mut s = Raw::start();
    s.initialize();
    let call = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"fetch_feed\",\"arguments\":{{\"url\":\"{}\"}}}}}}\n",
        srv.url("/stall")
    );
    s.send(call.as_bytes());
    wait_until("the server sees the request", || srv.count() >= 1).await;
    send_signal(&s.child, "TERM");
    let (code, took) = exit_within(&mut s.child, Duration::from_secs(10));
    assert_eq!(code, Some(0));
    assert!(took < Duration::from_secs(2), "{took:?}");
    // The stalled request's connection was dropped, not left open.
    wait_until("the connection is dropped", || srv.hits()[0].client_hung_up).await;
}
