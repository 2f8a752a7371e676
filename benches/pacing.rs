//! Pacing and caching against a simulated multi-host loopback origin, through the real
//! `rss` binary. Prints figures per scenario; asserts nothing.
//!
//! Run: `cargo bench --bench pacing` (optionally a scenario name: `mixed`, `happy`, `heavy`,
//! `revalidate`, `date_403`, `polling`, `silent`)

mod origin;

use std::time::{Duration, Instant};

use origin::rss_bin::rss_blocking;
use origin::{Policy, Reply, RetryAfter, TestServer, host, report, seen};
use serde_json::Value;

fn rss(args: &[String], env: &[(&str, &str)]) -> (Value, Duration) {
    // Each run has a cache (and host state) of its own unless it names one.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = rss_blocking();
    cmd.args(args).env("RSS_CACHE_DIR", dir.path());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().expect("run rss");
    let wall = started.elapsed();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "rss printed no JSON: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (doc, wall)
}

fn fetch_args(urls: &[String], extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "fetch".into(),
        "--content".into(),
        "none".into(),
        "-q".into(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a.extend(urls.iter().cloned());
    a
}

fn count(doc: &Value, status: &str) -> usize {
    doc["feeds"]
        .as_array()
        .map_or(0, |f| f.iter().filter(|x| x["status"] == status).count())
}

fn dropped(doc: &Value) -> usize {
    doc["feeds"].as_array().map_or(0, |f| {
        f.iter()
            .filter(|x| {
                x["status"] == "error"
                    && !(x["error"]["code"] == "RATE_LIMITED"
                        && x["error"]["details"]["retry_after_seconds"].is_u64())
            })
            .count()
    })
}

async fn mixed_batch() {
    let strict = host(Policy::strict(
        Duration::from_secs(1),
        RetryAfter::Seconds(1),
    ))
    .await;
    let lenient: Vec<TestServer> =
        futures::future::join_all((0..6).map(|_| host(Policy::lenient(100)))).await;
    let mut urls: Vec<String> = (0..16).map(|i| strict.url(&format!("/s{i}"))).collect();
    for (h, l) in lenient.iter().enumerate() {
        urls.extend((0..4).map(|i| l.url(&format!("/l{h}-{i}"))));
    }
    let (doc, wall) =
        tokio::task::spawn_blocking(move || rss(&fetch_args(&urls, &["--no-cache"]), &[]))
            .await
            .unwrap();
    let mut hosts: Vec<&TestServer> = vec![&strict];
    hosts.extend(lenient.iter());
    let s = seen(&hosts, 0);
    report(
        "mixed batch",
        count(&doc, "ok"),
        40,
        &s,
        wall,
        Duration::from_secs(15),
    );
    println!("  targets: 40 ok, <= 2 refusals, ratio <= 1.25");
}

async fn happy_path() {
    let hosts: Vec<TestServer> =
        futures::future::join_all((0..20).map(|_| host(Policy::lenient(50)))).await;
    let urls: Vec<String> = (0..100)
        .map(|i| hosts[i % 20].url(&format!("/h{i}")))
        .collect();
    let all: Vec<&TestServer> = hosts.iter().collect();
    let mut best = [Duration::MAX; 2];
    let mut one_run = None;
    for _ in 0..3 {
        for (k, env) in [vec![], vec![("RSS_HOST_CONCURRENCY", "64")]]
            .into_iter()
            .enumerate()
        {
            let u = urls.clone();
            let before = seen(&all, 0);
            let (doc, wall) =
                tokio::task::spawn_blocking(move || rss(&fetch_args(&u, &["--no-cache"]), &env))
                    .await
                    .unwrap();
            assert_eq!(count(&doc, "ok"), 100);
            best[k] = best[k].min(wall);
            if k == 0 {
                let after = seen(&all, 0);
                one_run = Some(origin::Seen {
                    requests: after.requests - before.requests,
                    refusals: after.refusals - before.refusals,
                    body_bytes: 0,
                });
            }
        }
    }
    let s = one_run.expect("at least one run");
    let lb = Duration::from_millis(50 * 100 / 8);
    report("happy path (gate on)", 100, 100, &s, best[0], lb);
    println!(
        "  same run with RSS_HOST_CONCURRENCY=64: {:.3}s; the gate adds {:+.1}% (target <= 5%)",
        best[1].as_secs_f64(),
        (best[0].as_secs_f64() / best[1].as_secs_f64() - 1.0) * 100.0
    );
}

async fn heavy_day() {
    let strict = host(Policy::strict(Duration::from_secs(20), RetryAfter::None)).await;
    let urls: Vec<String> = (0..6).map(|i| strict.url(&format!("/d{i}"))).collect();
    let (doc, wall) = tokio::task::spawn_blocking(move || {
        rss(
            &fetch_args(&urls, &["--no-cache"]),
            &[("RSS_MAX_GATE_WAIT_SECS", "30")],
        )
    })
    .await
    .unwrap();
    let s = seen(&[&strict], 0);
    report(
        "heavy day",
        count(&doc, "ok"),
        6,
        &s,
        wall,
        Duration::from_secs(20),
    );
    println!(
        "  dropped silently: {} (each feed ok or RATE_LIMITED with a wait); requests <= 8; wall <= 35 s",
        dropped(&doc)
    );
}

/// Six feeds on a host allowing one request per 2 s that answers `403` with `Retry-After`
/// as an HTTP-date (whole seconds, so a date 2 s ahead may say 1.x s), side by side with
/// `--no-host-state`.
async fn date_403() {
    for (mode, extra) in [
        ("shared state", vec![]),
        ("--no-host-state", vec!["--no-host-state"]),
    ] {
        let mut policy = Policy::strict(Duration::from_secs(2), RetryAfter::Date(2));
        policy.refusal = 403;
        let strict = host(policy).await;
        let urls: Vec<String> = (0..6).map(|i| strict.url(&format!("/d{i}"))).collect();
        let mut args = vec!["--no-cache"];
        args.extend(extra);
        let (doc, wall) = tokio::task::spawn_blocking(move || rss(&fetch_args(&urls, &args), &[]))
            .await
            .unwrap();
        let s = seen(&[&strict], 0);
        if std::env::var_os("BENCH_DEBUG").is_some() {
            for f in doc["feeds"].as_array().unwrap() {
                println!(
                    "  {} {} attempts {} wait {} {}",
                    f["feed_url"],
                    f["status"],
                    f["attempts"],
                    f["gate_wait_ms"],
                    f["error"]["message"]
                );
            }
            let t0 = strict.hits()[0].arrived;
            for h in strict.hits() {
                println!(
                    "  {:>7.3}s {} {}",
                    (h.arrived - t0).as_secs_f64(),
                    h.status,
                    h.path
                );
            }
        }
        report(
            &format!("date_403 ({mode})"),
            count(&doc, "ok"),
            6,
            &s,
            wall,
            Duration::from_secs(10),
        );
    }
    println!("  target: 6/6 ok, no self-inflicted refusal, ratio <= 1.2");
}

/// An agent polling 4 feeds every 2 s for 40 s (one `rss mcp` server, as an agent keeps
/// it), against hosts that say `Cache-Control: max-age=30`: requests sent under the default
/// `fresh` policy, side by side with `revalidate`.
async fn polling() {
    use rmcp::ServiceExt;
    for policy in ["fresh", "revalidate"] {
        let hosts: Vec<TestServer> = futures::future::join_all((0..4).map(|_| {
            TestServer::start(|_| {
                Reply::xml(origin::feed_body(2_000))
                    .header("Cache-Control", "max-age=30")
                    .header("ETag", "\"v1\"")
            })
        }))
        .await;
        let urls: Vec<String> = hosts.iter().map(|h| h.url("/feed")).collect();
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = origin::rss_bin::rss_tokio();
        cmd.env("RSS_CACHE_DIR", dir.path())
            .arg("mcp")
            .stderr(std::process::Stdio::null());
        let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn rss mcp");
        let client = ().serve(transport).await.expect("initialize");
        let started = Instant::now();
        let mut polls = 0;
        while started.elapsed() < Duration::from_secs(40) {
            let args =
                serde_json::json!({"urls": urls, "content_format": "none", "cache_policy": policy});
            let _ = client
                .call_tool(
                    rmcp::model::CallToolRequestParams::new("fetch_feed")
                        .with_arguments(args.as_object().unwrap().clone()),
                )
                .await;
            polls += 1;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        let requests: usize = hosts.iter().map(|h| h.count()).sum();
        println!(
            "polling 4 feeds every 2 s for 40 s, max-age=30, --cache-policy {policy:<10}: {polls} polls, {requests} requests"
        );
        let _ = client.cancel().await;
    }
    println!("  fresh asks each host once per 30 s; revalidate on every poll");
}

async fn revalidate() {
    let body_len = 200_000;
    let mut policy = Policy::lenient(5);
    policy.etag = true;
    policy.body = origin::feed_body(body_len);
    let body_len = policy.body.len();
    let hosts: Vec<TestServer> =
        futures::future::join_all((0..10).map(|_| host(policy.clone()))).await;
    let urls: Vec<String> = (0..100)
        .map(|i| hosts[i % 10].url(&format!("/r{i}")))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap().to_owned();
    let all: Vec<&TestServer> = hosts.iter().collect();
    let mut walls = Vec::new();
    let mut last = (0, 0);
    for (run, extra) in [(1, vec![]), (2, vec![]), (3, vec!["--max-age", "1h"])] {
        let before = seen(&all, body_len);
        let mut args = vec!["--cache-dir", cache.as_str()];
        args.extend(extra);
        let a = fetch_args(&urls, &args);
        let (doc, wall) = tokio::task::spawn_blocking(move || rss(&a, &[]))
            .await
            .unwrap();
        let after = seen(&all, body_len);
        walls.push(wall);
        last = (
            after.requests - before.requests,
            (after.body_bytes - before.body_bytes) as usize,
        );
        println!(
            "revalidate run {run}: wall {:.2}s, requests {:>3}, body bytes {:>9}, ok {:>3}, not_modified {:>3}, from cache {:>3}",
            wall.as_secs_f64(),
            last.0,
            last.1,
            count(&doc, "ok"),
            count(&doc, "not_modified"),
            doc["feeds"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["from_cache"] == true)
                .count()
        );
    }
    println!(
        "  second run / first run wall: {:.2}x; the --max-age run made {} requests (target 0)",
        walls[1].as_secs_f64() / walls[0].as_secs_f64(),
        last.0
    );
}

/// A host admitting one request per `window(admitted so far)`, counted from the last
/// admitted arrival, refusing with `429` and no `Retry-After` otherwise.
async fn silent_host(window: impl Fn(usize) -> Duration + Send + Sync + 'static) -> TestServer {
    let last = std::sync::Mutex::new((None::<Instant>, 0usize));
    TestServer::start(move |req| {
        let mut last = last.lock().unwrap();
        let (at, admitted) = *last;
        if at.is_none_or(|t| req.arrived.duration_since(t) >= window(admitted)) {
            *last = (Some(req.arrived), admitted + 1);
            Reply::xml(origin::feed_body(2_000))
        } else {
            Reply::status(429)
        }
    })
    .await
}

/// Refusals the gate's ladder (2, 4, 8 … s gaps after the first admitted request) needs to
/// find a window of `w` on first contact: the first contact, and each rung shorter than `w`.
fn ladder_needs(w: Duration) -> usize {
    let mut rung = Duration::from_secs(2);
    let mut n = 1;
    while rung < w {
        n += 1;
        rung *= 2;
    }
    n
}

/// Silent hosts (issue 36): one request per N seconds, `429` with no `Retry-After`, against
/// an oracle that knows the window (its n-th request goes (n−1)·N after the first). Time is
/// the span between the first and the last admitted arrival at the origin.
async fn silent() {
    let scenarios: [(&str, u64, u64, usize, usize, u64); 4] = [
        ("1 req / 2 s, 12 feeds", 2, 2, 1, 12, 60),
        ("1 req / 8 s, 8 feeds, budget 150 s", 8, 8, 1, 8, 150),
        ("1 req / 2 s, 3 processes x 4 feeds", 2, 2, 3, 4, 60),
        ("2 s widening to 6 s, 7 feeds", 2, 6, 1, 7, 120),
    ];
    for (name, first, then, procs, feeds, budget) in scenarios {
        let srv = silent_host(move |admitted| {
            Duration::from_secs(if admitted < 4 { first } else { then })
        })
        .await;
        let dir = tempfile::tempdir().expect("temp dir");
        let started = Instant::now();
        let runs: Vec<_> = (0..procs)
            .map(|p| {
                let urls: Vec<String> =
                    (0..feeds).map(|i| srv.url(&format!("/p{p}-{i}"))).collect();
                let cache = dir.path().to_str().unwrap().to_owned();
                let budget = budget.to_string();
                tokio::task::spawn_blocking(move || {
                    rss(
                        &fetch_args(
                            &urls,
                            &[
                                "--no-cache",
                                "--cache-dir",
                                &cache,
                                "--max-gate-wait",
                                &budget,
                            ],
                        ),
                        &[],
                    )
                })
            })
            .collect();
        let mut ok = 0;
        for r in runs {
            ok += count(&r.await.unwrap().0, "ok");
        }
        let wall = started.elapsed();
        let hits = srv.hits();
        let refusals = hits.iter().filter(|h| h.status == 429).count();
        let admitted: Vec<Instant> = hits
            .iter()
            .filter(|h| h.status == 200)
            .map(|h| h.arrived)
            .collect();
        let span = admitted
            .last()
            .zip(admitted.first())
            .map_or(Duration::ZERO, |(l, f)| *l - *f);
        let total = procs * feeds;
        let oracle: Duration = (1..total)
            .map(|n| Duration::from_secs(if n < 4 { first } else { then }))
            .sum();
        let needs = ladder_needs(Duration::from_secs(first))
            + usize::from(then != first) * (ladder_needs(Duration::from_secs(then)) - 1).max(1);
        println!(
            "silent {name:<36} ok {ok:>2}/{total:<2} refusals {refusals} (the ladder needs {needs}) requests {:>2} span {:>6.2}s oracle {:>5.1}s ratio {:.2}x, whole run {:.2}s",
            hits.len(),
            span.as_secs_f64(),
            oracle.as_secs_f64(),
            span.as_secs_f64() / oracle.as_secs_f64(),
            wall.as_secs_f64(),
        );
    }
    println!(
        "  targets: every feed, refusals at most what the ladder needs; ratio <= 1.25 (2 s), <= 1.3 (8 s)"
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let run = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    if run("mixed") {
        mixed_batch().await;
    }
    if run("happy") {
        happy_path().await;
    }
    if run("heavy") {
        heavy_day().await;
    }
    if run("revalidate") {
        revalidate().await;
    }
    if run("date_403") {
        date_403().await;
    }
    if run("polling") {
        polling().await;
    }
    if run("silent") {
        silent().await;
    }
}
