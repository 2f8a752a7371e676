//! One page end to end: `rss article` on a loopback page (the largest of the readability
//! test pages) beside the extraction crate's bare work on the same page, each in its own
//! process so their peak memory can be read. Prints figures; asserts nothing.
//!
//! Run: `cargo bench --bench article` (from the repository root, beside `../shared/`).

mod origin;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use origin::rss_bin::rss_blocking;
use origin::{Reply, TestServer};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/readability-pages/pages")
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

/// `--bare FILE`: the crate's extraction of FILE alone, in this process.
fn bare(path: &str) {
    let html = String::from_utf8_lossy(&std::fs::read(path).unwrap()).into_owned();
    let mut r =
        dom_smoothie::Readability::new(html.as_str(), Some("http://fakehost/page.html"), None)
            .expect("readability");
    let a = r.parse().expect("an article");
    println!("{}", a.content.len());
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--bare") {
        return bare(&args[i + 1]);
    }
    let dir = corpus();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        println!("skipped: no corpus at {}", dir.display());
        return;
    };
    let largest = entries
        .flatten()
        .map(|e| e.path().join("source.html"))
        .filter(|p| p.exists())
        .max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .expect("a page");
    let body = std::fs::read(&largest).unwrap();
    let size = body.len();
    let srv = TestServer::start(move |_| Reply::ok(body.clone(), "text/html; charset=utf-8")).await;
    let url = srv.url("/page.html");
    let me = std::env::current_exe().unwrap();
    let (mut best_rss, mut best_bare) = ((Duration::MAX, 0.0f64), (Duration::MAX, 0.0f64));
    for _ in 0..5 {
        let cache = tempfile::tempdir().unwrap();
        let mut cmd = rss_blocking();
        cmd.env("RSS_CACHE_DIR", cache.path()).args([
            "article",
            "--no-cache",
            "--content",
            "markdown",
            &url,
        ]);
        let (rss_wall, rss_mem) = tokio::task::spawn_blocking(move || measure(cmd))
            .await
            .unwrap();
        let mut cmd = Command::new(&me);
        cmd.arg("--bare").arg(&largest);
        let (bare_wall, bare_mem) = tokio::task::spawn_blocking(move || measure(cmd))
            .await
            .unwrap();
        if rss_wall < best_rss.0 {
            best_rss = (rss_wall, rss_mem);
        }
        if bare_wall < best_bare.0 {
            best_bare = (bare_wall, bare_mem);
        }
    }
    println!(
        "page {} ({:.1} MB), best of 5:",
        largest
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy(),
        size as f64 / 1e6
    );
    println!(
        "  rss article (fetch over loopback, extract, metadata, markdown, JSON): {:>6.1} ms, peak {:>5.1} MiB",
        best_rss.0.as_secs_f64() * 1e3,
        best_rss.1
    );
    println!(
        "  dom_smoothie alone (read the file, extract):                        {:>6.1} ms, peak {:>5.1} MiB",
        best_bare.0.as_secs_f64() * 1e3,
        best_bare.1
    );
    println!(
        "  ratio: {:.2}x the time, {:.2}x the memory",
        best_rss.0.as_secs_f64() / best_bare.0.as_secs_f64(),
        best_rss.1 / best_bare.1
    );
}
