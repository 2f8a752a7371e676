//! Hostile pages against the article path, measured from outside with the binary:
//!
//! 1. An ordinary page read by `rss mcp` while heavy pages (two per core, each as heavy as
//!    the shape bounds let a page be, and pages nested 12,000 and 30,000 deep) are being
//!    read by other calls on the same server: the ordinary call's time beside them and
//!    alone.
//! 2. `rss fetch --articles` over a feed of 4 items and of 48 items, each item's page 4 MiB
//!    on a host of its own: the peak memory of each run, and the difference in pages' worth
//!    (the window of pages in flight bounds it), over several runs.
//! 3. The worst shapes found, each page read by `rss article` in a process of its own: its
//!    peak memory beside its size and its shape's measures, the CPU time it took beside the
//!    page's budget, and its answer.
//!
//! 4. The CPU budget: each worst shape read in process within budgets far shorter than a
//!    page's, the CPU time each read spent beside its budget.
//!
//! Prints figures; asserts nothing. Run: `cargo bench --bench hostile` (`-- beside`,
//! `-- window`, `-- shapes` or `-- budget` runs one part).

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

/// What a process took: wall time, CPU time (user and system), peak resident memory (MiB),
/// and what it printed.
struct Usage {
    wall: Duration,
    cpu: Duration,
    peak_mib: f64,
    stdout: Vec<u8>,
}

/// Runs `cmd` to its end and reads what it took from `wait4`.
fn run_measured(mut cmd: Command) -> Usage {
    use std::io::Read;
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_end(&mut stdout)
        .expect("read stdout");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 writes only the status and the rusage it is given, for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4");
    // Reaped by wait4 above; the handle has nothing left to wait for.
    std::mem::forget(child);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Usage {
        wall: started.elapsed(),
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        peak_mib: usage.ru_maxrss as f64 / 1024.0,
        stdout,
    }
}

/// Runs `cmd` to its end; its wall time and peak resident memory (MiB).
fn measure(cmd: Command) -> (Duration, f64) {
    let u = run_measured(cmd);
    (u.wall, u.peak_mib)
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
    let runs = 5;
    let mut peaks: Vec<Vec<f64>> = Vec::new();
    for n in [4usize, 48] {
        let path = dir.path().join(format!("feed-{n}.xml"));
        std::fs::write(&path, feed(n)).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let mut these = Vec::new();
        let mut walls = Vec::new();
        for _ in 0..runs {
            let mut cmd = rss_blocking();
            cmd.env("RSS_CACHE_DIR", cache.path())
                .args(["fetch", "--articles", "--no-cache", "--content", "none"])
                .arg(&path);
            let (wall, peak) = tokio::task::spawn_blocking(move || measure(cmd))
                .await
                .unwrap();
            these.push(peak);
            walls.push(wall.as_secs_f64() * 1e3);
        }
        let list: Vec<String> = these.iter().map(|p| format!("{p:.0}")).collect();
        println!(
            "fetch --articles, {n:>2} items of 4 MiB on {n:>2} hosts: {:>6.0} ms (fastest), peak MiB of {runs} runs: {}",
            walls.iter().copied().fold(f64::MAX, f64::min),
            list.join(", ")
        );
        peaks.push(these);
    }
    let base = peaks[0].iter().copied().fold(f64::MAX, f64::min);
    let worths: Vec<String> = peaks[1]
        .iter()
        .map(|p| format!("{:.1}", (p - base) / 4.0))
        .collect();
    println!(
        "  48 items' peak over 4 items' (lowest), in pages' worth, each run: {} (bounded by the window of {} pages in flight)",
        worths.join(", "),
        8
    );
}

/// A paragraph of ordinary words, `n` bytes or a little more.
fn words(n: usize) -> String {
    let mut s = String::with_capacity(n + PARAGRAPH.len());
    while s.len() < n {
        s.push_str(PARAGRAPH);
    }
    s.truncate(s[..n].rfind(' ').unwrap_or(n));
    s
}

/// The worst shapes found, each near the default 20 MiB body limit or the shape bounds:
/// their name and page.
fn shapes() -> Vec<(&'static str, String)> {
    let run = words(16_000);
    // Text runs of 16 KB (the longest read in one piece) parted by `<br>`, to `size`.
    let text = |size: usize| {
        let mut s = String::new();
        while s.len() < size {
            s.push_str(&run);
            s.push_str("<br>");
        }
        s
    };
    let nested = |open: &str, close: &str, n: usize, inner: &str| {
        format!(
            "<html><body>{}{inner}{}</body></html>",
            open.repeat(n),
            close.repeat(n)
        )
    };
    let paragraphs = |n: usize, each: usize| -> String {
        let p = format!("<p>{}</p>", words(each));
        p.repeat(n)
    };
    let mut out = vec![
        (
            "120 nested <span>, 8,000 paragraphs (1.98 MB)",
            nested("<span>", "</span>", 120, &paragraphs(8_000, 240)),
        ),
        (
            "120 nested <font>, 8,000 paragraphs (1.98 MB)",
            nested("<font>", "</font>", 120, &paragraphs(8_000, 240)),
        ),
        (
            "127 nested <div>, 100 paragraphs of 195 KB of text",
            nested(
                "<div>",
                "</div>",
                127,
                &(0..100)
                    .map(|_| format!("<p>{}</p>", text(195_000)))
                    .collect::<String>(),
            ),
        ),
        (
            "127 nested <span>, 19.5 MB of text",
            nested("<span>", "</span>", 127, &text(19_500_000)),
        ),
        (
            "127 nested <div>, 76 paragraphs under 256 KB attributes",
            nested(
                "<div>",
                "</div>",
                127,
                &(0..76)
                    .map(|_| format!("<p title=\"{}\">{PARAGRAPH}</p>", "a".repeat(255 << 10)))
                    .collect::<String>(),
            ),
        ),
        ("10 tags of 30,000 attributes each (2.2 MB)", {
            let names: Vec<String> = (0..30_000).map(|i| format!("a{i}")).collect();
            let tag = format!("<p {}>{PARAGRAPH}</p>", names.join(" "));
            format!(
                "<html><body>{}{}</body></html>",
                tag.repeat(10),
                paragraphs(90, 240)
            )
        }),
        (
            "126 nested <div>, 49,000 elements below",
            nested(
                "<div>",
                "</div>",
                126,
                &"<div>x words here</div>".repeat(49_000),
            ),
        ),
        (
            "49,000 links in paragraphs",
            format!(
                "<html><body>{}</body></html>",
                "<p>see <a href=\"/a\">the next story</a> here</p>".repeat(24_500)
            ),
        ),
        (
            "40 nested tables, 10,000 cells",
            nested(
                "<table><tr><td>",
                "</td></tr></table>",
                40,
                &format!(
                    "<table>{}</table>",
                    "<tr><td>cell words</td><td>more words</td></tr>".repeat(5_000)
                ),
            ),
        ),
        (
            "19.5 MB of stray `<` in text",
            format!("<html><body><p>{}</p></body></html>", {
                let r = "a < b ".repeat(16_000 / 6);
                let mut s = String::new();
                while s.len() < 19_500_000 {
                    s.push_str(&r);
                    s.push_str("<br>");
                }
                s
            }),
        ),
        (
            "19.5 MB of JSON-LD",
            format!(
                "<html><head><script type=\"application/ld+json\">[{}{{}}]</script></head><body>{}</body></html>",
                "{\"@type\":\"Thing\",\"name\":\"x\"},".repeat(19_500_000 / 30),
                paragraphs(30, 240)
            ),
        ),
        (
            "19.5 MB of plain paragraphs",
            paragraphs(19_500_000 / 250, 240),
        ),
        (
            "4 MiB of plain paragraphs",
            paragraphs((4 << 20) / 250, 240),
        ),
    ];
    out.push((
        "an ordinary story (30 paragraphs)",
        String::from_utf8(ordinary()).unwrap(),
    ));
    out
}

/// Each worst shape read by `rss article` in a process of its own.
async fn worst_shapes() {
    println!(
        "\n{:<58} {:>8} {:>9} {:>8} {:>9} {:>8}  answer",
        "page", "size MB", "peak MiB", "× size", "CPU s", "wall s"
    );
    for (name, page) in shapes() {
        let size = page.len();
        let body = page.into_bytes();
        let srv = TestServer::start(move |req| match req.path.as_str() {
            "/robots.txt" => Reply::status(404),
            _ => Reply::ok(body.clone(), "text/html; charset=utf-8"),
        })
        .await;
        let cache = tempfile::tempdir().unwrap();
        let mut cmd = rss_blocking();
        cmd.env("RSS_CACHE_DIR", cache.path()).args([
            "article",
            "--no-cache",
            "--content",
            "markdown",
            "--format",
            "json",
            &srv.url("/page"),
        ]);
        let u = tokio::task::spawn_blocking(move || run_measured(cmd))
            .await
            .unwrap();
        let v: Value = serde_json::from_slice(&u.stdout).unwrap_or_default();
        let a = &v["articles"][0];
        let answer = match a["error"]["code"].as_str() {
            Some(code) => format!(
                "{code} {}",
                a["error"]["details"]
                    .get("elapsed_ms")
                    .map(|e| format!("elapsed_ms {e}"))
                    .unwrap_or_default()
            ),
            None => format!(
                "{} ({} words)",
                a["status"].as_str().unwrap_or("?"),
                a["word_count"]
            ),
        };
        println!(
            "{name:<58} {:>8.2} {:>9.1} {:>8.1} {:>9.2} {:>8.2}  {answer}",
            size as f64 / 1e6,
            u.peak_mib,
            u.peak_mib * 1048576.0 / size as f64,
            u.cpu.as_secs_f64(),
            u.wall.as_secs_f64(),
        );
    }
}

/// The CPU budget checked where the time goes: each worst shape read in this process within
/// budgets far shorter than a page's 10 s, the CPU time each read spent beside its budget.
/// What a cut read spends past its budget is the longest stretch of work between two checks
/// (a stage that cannot be stopped inside); the same stretch past the 10 s budget is the
/// overrun a page can have.
fn budget_overrun() {
    let url = url::Url::parse("http://127.0.0.1/page").unwrap();
    println!(
        "\n{:<58} {:>9} {:>9} {:>8} {:>11}  answer",
        "page, read within a shorter budget", "budget ms", "spent ms", "× budget", "elapsed_ms"
    );
    let mut longest = Duration::ZERO;
    for (name, page) in shapes() {
        for budget in [Duration::from_millis(100), Duration::from_millis(1000)] {
            let (answer, spent, said) = rss::internals::article_within(&page, &url, budget);
            if answer == "EXTRACTION_TIMEOUT" {
                longest = longest.max(spent.saturating_sub(budget));
            }
            println!(
                "{name:<58} {:>9} {:>9.0} {:>8.2} {:>11}  {answer}",
                budget.as_millis(),
                spent.as_secs_f64() * 1e3,
                spent.as_secs_f64() / budget.as_secs_f64(),
                said.map_or("-".to_owned(), |s| s.to_string()),
            );
        }
    }
    println!(
        "  longest stretch past a budget: {:.0} ms, {:.0}% of a page's 10 s budget",
        longest.as_secs_f64() * 1e3,
        longest.as_secs_f64() / 10.0 * 100.0
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let parts: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |p: &str| parts.is_empty() || parts.iter().any(|a| a == p);
    if wants("beside") {
        beside_heavy_pages().await;
    }
    if wants("window") {
        window_of_pages().await;
    }
    if wants("shapes") {
        worst_shapes().await;
    }
    if wants("budget") {
        tokio::task::spawn_blocking(budget_overrun).await.unwrap();
    }
}
