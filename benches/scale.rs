//! Thousands of feeds in one run, with the cache on: what a feed costs as the cache grows.
//! For 100, 1,000 and 10,000 feeds over loopback hosts (20 ms latency, 20 feeds a host at
//! most), one `rss fetch --concurrency 32` into a fresh cache, then the same again into the
//! now-full cache; prints the wall time against the best possible (Σ latency / concurrency,
//! or one host's serial share when that is longer), CPU seconds and syscalls per feed (the
//! syscalls from a second, identical run under `strace -f -c`, when strace is installed).
//! Then 2,000 feeds over 500 hosts of which 25 allow one request per second. Asserts
//! nothing.
//!
//! Run: `cargo bench --bench scale` (optionally `100`, `1000`, `10000`, `mixed`).

mod origin;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use origin::rss_bin::rss_blocking;
use origin::{Policy, RetryAfter, TestServer, host};

const LATENCY_MS: u64 = 20;
const CONCURRENCY: usize = 32;

/// CPU seconds (user, system) the waited-for children of this process have used so far,
/// from `/proc/self/stat` (in clock ticks of 1/100 s, Linux's USER_HZ).
fn children_cpu() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // Fields 16 and 17 of the file (cutime, cstime); `rest` starts at field 3.
    (ticks(13) / 100.0, ticks(14) / 100.0)
}

/// Runs one fetch to its end: wall time, user and system CPU seconds.
fn run_measured(cache: &Path, list: &Path) -> (Duration, f64, f64) {
    let (u0, s0) = children_cpu();
    let started = Instant::now();
    let _ = fetch_cmd(cache, list).status().unwrap();
    let (u1, s1) = children_cpu();
    (started.elapsed(), u1 - u0, s1 - s0)
}

fn fetch_cmd(cache: &Path, list: &Path) -> std::process::Command {
    let mut cmd = match std::env::var("BENCH_PERF") {
        Ok(out) => {
            let mut c = std::process::Command::new("perf");
            c.args([
                "record",
                "--call-graph",
                "dwarf,16384",
                "-F",
                "499",
                "-o",
                &out,
                "--",
            ])
            .arg(env!("CARGO_BIN_EXE_rss"));
            c
        }
        Err(_) => rss_blocking(),
    };
    cmd.env("RSS_CACHE_DIR", cache)
        .args(["fetch", "--content", "none", "-q", "--format", "ndjson"])
        .args(["--concurrency", &CONCURRENCY.to_string()])
        .arg("--input")
        .arg(list)
        .args(
            std::env::var("BENCH_ARGS")
                .ok()
                .iter()
                .flat_map(|a| a.split_whitespace()),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Syscalls of one run under `strace -f -c`: the total and each call's count, or `None`
/// without strace.
fn syscalls(cache: &Path, list: &Path) -> Option<(u64, Vec<(String, u64)>)> {
    let out = tempfile::NamedTempFile::new().ok()?;
    let cmd = fetch_cmd(cache, list);
    let mut traced = std::process::Command::new("strace");
    traced
        .args(["-f", "-c", "-o"])
        .arg(out.path())
        .arg(cmd.get_program());
    traced.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => traced.env(k, v),
            None => traced.env_remove(k),
        };
    }
    let status = traced
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    if !status.success() && status.code() != Some(3) {
        return None;
    }
    let text = std::fs::read_to_string(out.path()).ok()?;
    if std::env::var_os("BENCH_STRACE").is_some() {
        println!("{text}");
    }
    // Rows "% time  seconds  usecs/call  calls  [errors]  name"; the last is the total.
    let mut each = Vec::new();
    let mut total = None;
    for l in text.lines() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.len() < 5 || cols[0].parse::<f64>().is_err() {
            continue;
        }
        let name = cols[cols.len() - 1];
        let calls: Option<u64> = cols[3].parse().ok();
        match (name, calls) {
            ("total", Some(c)) => total = Some(c),
            (_, Some(c)) => each.push((name.to_owned(), c)),
            _ => {}
        }
    }
    each.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
    Some((total?, each))
}

/// Prints a syscall count as so many per feed, the largest kinds first.
fn print_syscalls(label: &str, n: usize, calls: Option<(u64, Vec<(String, u64)>)>) {
    match calls {
        Some((total, each)) => {
            let top: Vec<String> = each
                .iter()
                .take(12)
                .map(|(name, c)| format!("{name} {:.1}", *c as f64 / n as f64))
                .collect();
            println!(
                "{label}: {:.0} syscalls per feed ({})",
                total as f64 / n as f64,
                top.join(", ")
            );
        }
        None => println!("{label}: syscalls not counted (no strace)"),
    }
}

fn write_list(urls: &[String]) -> tempfile::NamedTempFile {
    let list = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(list.path(), urls.join("\n")).unwrap();
    list
}

/// Cache directories are kept until the benchmark ends: deleting thousands of files makes
/// the next run's file creations slow (ext4 scans past recently deleted inodes), which is
/// the file system's cost of the benchmark, not of `rss`.
async fn scale(n: usize, keep: &mut Vec<tempfile::TempDir>) {
    let per_host = 20usize;
    let nhosts = n.div_ceil(per_host);
    let hosts: Vec<TestServer> =
        futures::future::join_all((0..nhosts).map(|_| host(Policy::lenient(LATENCY_MS)))).await;
    let urls: Vec<String> = (0..n)
        .map(|i| hosts[i % nhosts].url(&format!("/f{i}")))
        .collect();
    let list = write_list(&urls);
    let best = Duration::from_millis(
        (n as u64 * LATENCY_MS / CONCURRENCY as u64).max(per_host as u64 * LATENCY_MS),
    );
    let cache = tempfile::tempdir().unwrap();
    for pass in ["empty cache", "full cache"] {
        let (cache_path, list_path) = (cache.path().to_owned(), list.path().to_owned());
        let (wall, user, sys) =
            tokio::task::spawn_blocking(move || run_measured(&cache_path, &list_path))
                .await
                .unwrap();
        let cpu = user + sys;
        println!(
            "{n:>6} feeds / {nhosts:>4} hosts, {pass:<11}: wall {:>6.2}s best {:>5.2}s ratio {:>4.2}x  cpu {:>6.2}s (user {:.2}s, sys {:.2}s) = {:>6.0} us/feed",
            wall.as_secs_f64(),
            best.as_secs_f64(),
            wall.as_secs_f64() / best.as_secs_f64(),
            cpu,
            user,
            sys,
            cpu * 1e6 / n as f64,
        );
    }
    let (cache_path, list_path) = (cache.path().to_owned(), list.path().to_owned());
    let calls = tokio::task::spawn_blocking(move || syscalls(&cache_path, &list_path))
        .await
        .unwrap();
    print_syscalls(&format!("{n:>6} feeds, full cache, under strace"), n, calls);
    keep.push(cache);
}

/// 2,000 feeds over 500 hosts, 25 of which allow one request a second (429 with
/// `Retry-After: 1` past it).
async fn mixed(keep: &mut Vec<tempfile::TempDir>) {
    let lenient: Vec<TestServer> =
        futures::future::join_all((0..475).map(|_| host(Policy::lenient(LATENCY_MS)))).await;
    let strict: Vec<TestServer> = futures::future::join_all((0..25).map(|_| {
        host(Policy::strict(
            Duration::from_secs(1),
            RetryAfter::Seconds(1),
        ))
    }))
    .await;
    let all: Vec<&TestServer> = lenient.iter().chain(strict.iter()).collect();
    let urls: Vec<String> = (0..2000)
        .map(|i| all[i % all.len()].url(&format!("/m{i}")))
        .collect();
    let list = write_list(&urls);
    // Each strict host has 4 feeds: 3 s at one a second, at best; the rest is latency.
    let best = Duration::from_millis((2000 * LATENCY_MS / CONCURRENCY as u64).max(3000));
    let cache = tempfile::tempdir().unwrap();
    let (cache_path, list_path) = (cache.path().to_owned(), list.path().to_owned());
    let started_at = Instant::now();
    let (wall, user, sys) =
        tokio::task::spawn_blocking(move || run_measured(&cache_path, &list_path))
            .await
            .unwrap();
    let cpu = user + sys;
    if std::env::var_os("BENCH_DEBUG").is_some() {
        let last = |hs: &[TestServer]| {
            hs.iter()
                .flat_map(|h| h.hits())
                .map(|h| h.arrived)
                .max()
                .unwrap()
        };
        let first = lenient
            .iter()
            .chain(strict.iter())
            .flat_map(|h| h.hits())
            .map(|h| h.arrived)
            .min()
            .unwrap();
        println!(
            "  first request {:.2}s after start; last lenient {:.2}s, last strict {:.2}s after it",
            (first - started_at).as_secs_f64(),
            (last(&lenient) - first).as_secs_f64(),
            (last(&strict) - first).as_secs_f64()
        );
        for h in strict.iter().take(2) {
            let t: Vec<String> = h
                .hits()
                .iter()
                .map(|x| format!("{:.2}:{}", (x.arrived - first).as_secs_f64(), x.status))
                .collect();
            println!("  strict host: {}", t.join(" "));
        }
    }
    let refusals: usize = strict
        .iter()
        .map(|h| h.hits().iter().filter(|x| x.status == 429).count())
        .sum();
    println!(
        "  2000 feeds / 500 hosts (25 strict): wall {:.2}s best {:.2}s ratio {:.2}x cpu {:.2}s (user {:.2}s, sys {:.2}s) refusals {refusals}  (targets: ratio <= 1.5, cpu <= 2.5 s)",
        wall.as_secs_f64(),
        best.as_secs_f64(),
        wall.as_secs_f64() / best.as_secs_f64(),
        cpu,
        user,
        sys
    );
    if std::env::var_os("BENCH_NO_STRACE").is_none() {
        // The same run again into a new cache, under strace (strace slows it; only the
        // counts are read).
        let cache2 = tempfile::tempdir().unwrap();
        let (cache_path, list_path) = (cache2.path().to_owned(), list.path().to_owned());
        let calls = tokio::task::spawn_blocking(move || syscalls(&cache_path, &list_path))
            .await
            .unwrap();
        print_syscalls("  2000 feeds / 500 hosts, under strace", 2000, calls);
        keep.push(cache2);
    }
    keep.push(cache);
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let mut keep = Vec::new();
    if run("mixed") {
        mixed(&mut keep).await;
    }
    for n in [100, 1000, 10000] {
        if run(&n.to_string()) {
            scale(n, &mut keep).await;
        }
    }
}
