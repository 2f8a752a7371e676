//! `rss article URL --content text --format json` as a whole process, against a loopback
//! server of our own that serves each page's bytes as `text/html` (no charset: `rss` reads
//! the page's own `<meta charset>`), as a user's run would: start-up, the gate, the fetch,
//! decoding, extraction, rendering and the JSON on stdout.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Output;

/// The `rss` binary: `$RSS_BIN`, else the repository's release build.
pub fn binary() -> Result<PathBuf, String> {
    let bin = std::env::var_os("RSS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/rss"));
    found(bin)
}

/// Another build to run beside it in the same run (`$RSS_BIN_BEFORE`: the code before a
/// change), when given.
pub fn before() -> Option<Result<PathBuf, String>> {
    std::env::var_os("RSS_BIN_BEFORE").map(|b| found(PathBuf::from(b)))
}

fn found(bin: PathBuf) -> Result<PathBuf, String> {
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "no {} (cargo build --release first)",
            bin.display()
        ))
    }
}

/// Serves `bodies[i]` at `/i` on a loopback port until the process ends.
fn serve(bodies: Arc<Vec<Vec<u8>>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let bodies = bodies.clone();
            std::thread::spawn(move || answer(stream, &bodies));
        }
    });
    port
}

fn answer(mut stream: TcpStream, bodies: &[Vec<u8>]) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    // The headers, to their blank line (bounded: a request has few).
    for _ in 0..200 {
        let mut h = String::new();
        match reader.read_line(&mut h) {
            Ok(0) | Err(_) => break,
            Ok(_) if h.trim().is_empty() => break,
            Ok(_) => {}
        }
    }
    let index = line
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.trim_start_matches('/').parse::<usize>().ok());
    let (status, body): (&str, &[u8]) = match index.and_then(|i| bodies.get(i)) {
        Some(b) => ("200 OK", b),
        None => ("404 Not Found", b""),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// Runs `rss article` of each build in `bins` on every page `runs` times, the builds' runs
/// alternating; for each build, each page's text from its first run and the median of its
/// runs' wall times.
pub fn run(bins: &[&Path], bodies: Vec<Vec<u8>>, runs: usize) -> Vec<Vec<Output>> {
    let n = bodies.len();
    let port = serve(Arc::new(bodies));
    let cache = std::env::temp_dir().join(format!("extract-compare-{}", std::process::id()));
    let mut out: Vec<Vec<Output>> = bins.iter().map(|_| Vec::with_capacity(n)).collect();
    for i in 0..n {
        let url = format!("http://127.0.0.1:{port}/{i}");
        let mut times: Vec<Vec<Duration>> = bins.iter().map(|_| Vec::new()).collect();
        let mut texts: Vec<String> = bins.iter().map(|_| String::new()).collect();
        for run in 0..runs.max(1) {
            for (b, bin) in bins.iter().enumerate() {
                let started = Instant::now();
                let o = Command::new(bin)
                    .args([
                        "article",
                        &url,
                        "--content",
                        "text",
                        "--format",
                        "json",
                        "--no-cache",
                    ])
                    .arg("--cache-dir")
                    .arg(&cache)
                    .arg("--no-host-state")
                    .env_remove("RSS_GATE_STORE")
                    .output()
                    .expect("spawn rss");
                times[b].push(started.elapsed());
                if run == 0 {
                    let v: serde_json::Value =
                        serde_json::from_slice(&o.stdout).unwrap_or_default();
                    texts[b] = v["articles"][0]["content"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned();
                }
            }
        }
        for (b, (mut t, text)) in times.into_iter().zip(texts).enumerate() {
            t.sort();
            out[b].push(Output {
                text,
                took: t[t.len() / 2],
            });
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    out
}
