//! Hostile pages against the article path, measured from outside with the binary:
//!
//! 1. An ordinary page read by `rss mcp` while heavy pages (two per core, each as heavy as
//!    the shape bounds let a page be, and pages nested 12,000 and 30,000 deep) are being
//!    read by other calls on the same server: the ordinary call's time beside them and
//!    alone.
//! 2. `rss fetch --articles` over a feed of 4 items and of 48 items, each item's page 4 MiB
//!    on a host of its own: the peak memory of each run, and the difference in pages' worth
//!    (the window of pages in flight bounds it).
//!
//! Prints figures; asserts nothing. Run: `cargo bench --bench hostile`.

mod origin;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use origin::rss_bin::{rss_blocking, rss_tokio};
use origin::{Reply, TestServer};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

const PARAGRAPH: &str = "The keeper climbed the stairs of the lighthouse every evening at dusk, \
    trimmed the wick, polished the great lens and wrote the weather in the log before the \
    first ship of the night rounded the point and the long watch began again. ";

fn ordinary() -> Vec<u8> {
    let body: String = (0..30).map(|_| format!("<p>{PARAGRAPH}</p>")).collect();
    format!("<html><head><title>An ordinary story</title></head><body><article><h1>An ordinary story</h1>{body}</article></body></html>").into_bytes()
}

fn heavy(path: &str) -> Vec<u8> {
    match path {
        "/deep-12000" => format!(
            "<html><body>{}<p>{PARAGRAPH}</p></body></html>",
            "<div>".repeat(12_000)
        ),
        "/deep-30000" => format!(
            "<html><body>{}<p>{PARAGRAPH}</p>{}</body></html>",
            "<span>".repeat(30_000),
            "</span>".repeat(30_000)
        ),
        // As heavy as the bounds let a page be: nested just under the depth bound, with
        // just under the element bound below it.
        _ => format!(
            "<html><body>{}{}</body></html>",
            "<div>".repeat(126),
            "<div>x words here</div>".repeat(49_000)
        ),
    }
    .into_bytes()
}

async fn call(
    s: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    url: &str,
) -> (Duration, Value) {
    let started = Instant::now();
    let args = json!({"url": url, "content_format": "text", "cache_policy": "no-cache"});
    let r = s
        .call_tool(
            CallToolRequestParams::new("fetch_article")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .expect("answered");
    let v = r.structured_content.unwrap_or_default();
    (started.elapsed(), v)
}

fn status(v: &Value) -> String {
    let a = &v["articles"][0];
    match a["error"]["code"].as_str() {
        Some(code) => code.to_owned(),
        None => a["status"].as_str().unwrap_or("?").to_owned(),
    }
}

async fn beside_heavy_pages() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/robots.txt" => Reply::status(404),
        "/ordinary" => Reply::ok(ordinary(), "text/html"),
        p => Reply::ok(heavy(p), "text/html"),
    })
    .await;
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = rss_tokio();
    cmd.args(["mcp", "--cache-dir"]).arg(cache.path());
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rss mcp");
    let session = std::sync::Arc::new(().serve(transport).await.expect("initialize"));
    let (alone, v) = call(&session, &srv.url("/ordinary")).await;
    println!(
        "ordinary page alone:                      {:>7.0} ms ({})",
        alone.as_secs_f64() * 1e3,
        status(&v)
    );
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut paths: Vec<String> = (0..2 * cores).map(|i| format!("/bounded-{i}")).collect();
    paths.extend(["/deep-12000".to_owned(), "/deep-30000".to_owned()]);
    let mut heavy_calls = Vec::new();
    for p in &paths {
        let s = session.clone();
        let url = srv.url(p);
        heavy_calls.push(tokio::spawn(async move { call(&s, &url).await }));
    }
    // Let the heavy pages reach their threads first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (beside, v) = call(&session, &srv.url("/ordinary")).await;
    println!(
        "ordinary page beside {} heavy pages:       {:>7.0} ms ({})",
        paths.len(),
        beside.as_secs_f64() * 1e3,
        status(&v)
    );
    for (p, h) in paths.iter().zip(heavy_calls) {
        let (took, v) = h.await.unwrap();
        println!(
            "  heavy {p:<14} {:>7.0} ms ({})",
            took.as_secs_f64() * 1e3,
            status(&v)
        );
    }
}

/// Runs `cmd` to its end; its wall time and peak resident memory (MiB), from `wait4`.
fn measure(mut cmd: Command) -> (Duration, f64) {
    let started = Instant::now();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 writes only the status and the rusage it is given, for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    // Reaped by wait4 above; the handle has nothing left to wait for.
    std::mem::forget(child);
    (started.elapsed(), usage.ru_maxrss as f64 / 1024.0)
}

async fn window_of_pages() {
    const PAGE: usize = 4 << 20;
    let page: Vec<u8> = {
        let mut body = String::from("<html><body><article>");
        while body.len() < PAGE {
            body.push_str("<p>");
            body.push_str(PARAGRAPH);
            body.push_str("</p>");
        }
        body.push_str("</article></body></html>");
        body.into_bytes()
    };
    let mut hosts = Vec::new();
    for _ in 0..48 {
        let page = page.clone();
        hosts.push(
            TestServer::start(move |req| match req.path.as_str() {
                "/robots.txt" => Reply::status(404),
                _ => Reply::ok(page.clone(), "text/html"),
            })
            .await,
        );
    }
    let feed = |n: usize| -> String {
        let items: String = hosts[..n]
            .iter()
            .enumerate()
            .map(|(i, h)| {
                format!(
                    "<item><title>Story {i}</title><link>{}</link><guid>s{i}</guid></item>",
                    h.url("/story")
                )
            })
            .collect();
        format!("<rss version=\"2.0\"><channel><title>Heavy pages</title>{items}</channel></rss>")
    };
    let dir = tempfile::tempdir().unwrap();
    let mut peaks = Vec::new();
    for n in [4usize, 48] {
        let path = dir.path().join(format!("feed-{n}.xml"));
        std::fs::write(&path, feed(n)).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let mut best = (Duration::MAX, f64::MAX);
        for _ in 0..3 {
            let mut cmd = rss_blocking();
            cmd.env("RSS_CACHE_DIR", cache.path())
                .args(["fetch", "--articles", "--no-cache", "--content", "none"])
                .arg(&path);
            let (wall, peak) = tokio::task::spawn_blocking(move || measure(cmd))
                .await
                .unwrap();
            best = (best.0.min(wall), best.1.min(peak));
        }
        println!(
            "fetch --articles, {n:>2} items of 4 MiB on {n:>2} hosts: {:>6.0} ms, peak {:>6.1} MiB",
            best.0.as_secs_f64() * 1e3,
            best.1
        );
        peaks.push(best.1);
    }
    println!(
        "  48 items' peak over 4 items': {:.1} MiB = {:.1} pages' worth (bounded by the window of {} pages in flight)",
        peaks[1] - peaks[0],
        (peaks[1] - peaks[0]) / 4.0,
        8
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    beside_heavy_pages().await;
    window_of_pages().await;
}
