//! A simulated multi-host origin for the benchmarks: each host is a loopback server with a
//! policy (latency, allowance per window, refusal status, Retry-After form, ETags), and
//! counts what it saw.

#![allow(dead_code)]

#[path = "../../tests/common/redis.rs"]
pub mod redis;
#[path = "../../tests/common/rss.rs"]
pub mod rss_bin;
#[path = "../../tests/common/server.rs"]
pub mod server;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

pub use server::{Reply, TestServer};

/// How a host answers when over its allowance.
#[derive(Debug, Clone, Copy)]
pub enum RetryAfter {
    None,
    Seconds(u64),
    Date(u64),
}

/// A host's behaviour.
#[derive(Debug, Clone)]
pub struct Policy {
    pub latency: Duration,
    /// At most this many successful requests per window; `None` is unlimited.
    pub allow: Option<(usize, Duration)>,
    pub refusal: u16,
    pub retry_after: RetryAfter,
    /// Serve an ETag and answer `304` to a matching `If-None-Match`.
    pub etag: bool,
    pub body: Vec<u8>,
    /// Send `Cache-Control: max-age=N` with each feed.
    pub max_age: Option<u64>,
}

impl Policy {
    pub fn lenient(latency_ms: u64) -> Policy {
        Policy {
            latency: Duration::from_millis(latency_ms),
            allow: None,
            refusal: 429,
            retry_after: RetryAfter::None,
            etag: false,
            body: feed_body(2_000),
            max_age: None,
        }
    }

    pub fn strict(per: Duration, retry_after: RetryAfter) -> Policy {
        Policy {
            allow: Some((1, per)),
            retry_after,
            ..Policy::lenient(0)
        }
    }
}

/// A small valid feed padded to about `size` bytes.
pub fn feed_body(size: usize) -> Vec<u8> {
    let mut s = String::from(
        "<rss version=\"2.0\"><channel><title>Bench host</title><link>https://h.example/</link>",
    );
    let mut i = 0;
    while s.len() < size {
        s.push_str(&format!(
            "<item><title>Item {i}</title><link>https://h.example/{i}</link><description>{}</description></item>",
            "lorem ipsum dolor sit amet ".repeat(8)
        ));
        i += 1;
    }
    s.push_str("</channel></rss>");
    s.into_bytes()
}

/// Starts a host with `policy`.
pub async fn host(policy: Policy) -> TestServer {
    let recent: Mutex<VecDeque<Instant>> = Mutex::new(VecDeque::new());
    TestServer::start(move |req| {
        let now = Instant::now();
        if let Some((n, window)) = policy.allow {
            let mut r = recent.lock().unwrap();
            while r.front().is_some_and(|t| now.duration_since(*t) >= window) {
                r.pop_front();
            }
            if r.len() >= n {
                let mut reply = Reply::status(policy.refusal).delay(policy.latency);
                match policy.retry_after {
                    RetryAfter::None => {}
                    RetryAfter::Seconds(s) => reply = reply.header("Retry-After", &s.to_string()),
                    RetryAfter::Date(s) => {
                        let at = SystemTime::now() + Duration::from_secs(s);
                        reply = reply.header("Retry-After", &httpdate::fmt_http_date(at));
                    }
                }
                return reply;
            }
            r.push_back(now);
        }
        if policy.etag && req.header("if-none-match") == Some("\"same\"") {
            return Reply::status(304)
                .header("ETag", "\"same\"")
                .delay(policy.latency);
        }
        let mut reply = Reply::xml(policy.body.clone()).delay(policy.latency);
        if policy.etag {
            reply = reply.header("ETag", "\"same\"");
        }
        if let Some(secs) = policy.max_age {
            reply = reply.header("Cache-Control", &format!("max-age={secs}"));
        }
        reply
    })
    .await
}

/// What a host saw.
pub struct Seen {
    pub requests: usize,
    pub refusals: usize,
    pub body_bytes: u64,
}

pub fn seen(hosts: &[&TestServer], body_len: usize) -> Seen {
    let mut s = Seen {
        requests: 0,
        refusals: 0,
        body_bytes: 0,
    };
    for h in hosts {
        for hit in h.hits() {
            s.requests += 1;
            if matches!(hit.status, 429 | 403) {
                s.refusals += 1;
            }
            if hit.status == 200 {
                s.body_bytes += body_len as u64;
            }
        }
    }
    s
}

/// Refusals the client had the information to avoid: a refused request that arrived while
/// another request to the host was in flight; before the end of a `Retry-After` the host
/// had already given (`retry_after` is what this host sends), or, within two minutes of it,
/// sooner than that `Retry-After` after the last admitted request; or at a gap after the
/// last admitted request no wider than a gap the host had already refused.
pub fn self_inflicted(host: &TestServer, retry_after: Option<Duration>) -> usize {
    let mut hits = host.hits();
    hits.sort_by_key(|h| h.arrived);
    let mut count = 0;
    let mut last_admitted: Option<Instant> = None;
    let mut widest_refused: Option<Duration> = None;
    let mut window_until: Option<Instant> = None;
    let mut spacing_known: Option<(Duration, Instant)> = None;
    for (i, hit) in hits.iter().enumerate() {
        let refused = matches!(hit.status, 429 | 403);
        let gap = last_admitted.map(|t| hit.arrived.duration_since(t));
        if refused {
            let overlapping = hits[..i]
                .iter()
                .any(|h| h.finished.is_some_and(|f| f > hit.arrived));
            let inside_window = window_until.is_some_and(|w| hit.arrived < w);
            let known_gap = matches!((gap, widest_refused), (Some(g), Some(w)) if g <= w);
            let known_spacing = matches!((gap, spacing_known), (Some(g), Some((ra, since)))
                if g < ra && hit.arrived.duration_since(since) < Duration::from_secs(120));
            if overlapping || inside_window || known_gap || known_spacing {
                count += 1;
            }
            if let Some(g) = gap {
                widest_refused = Some(widest_refused.map_or(g, |w| w.max(g)));
            }
            if let (Some(ra), Some(done)) = (retry_after, hit.finished) {
                window_until = Some(done + ra);
                spacing_known = Some((ra, done));
            }
        } else {
            last_admitted = Some(hit.arrived);
        }
    }
    count
}

/// Prints one scenario's figures.
pub fn report(
    name: &str,
    ok: usize,
    total: usize,
    seen: &Seen,
    wall: Duration,
    lower_bound: Duration,
) {
    println!(
        "{name:<28} ok {ok:>3}/{total:<3} refusals {:>3} requests {:>4} wall {:>7.2}s lower bound {:>6.2}s ratio {:>5.2}x",
        seen.refusals,
        seen.requests,
        wall.as_secs_f64(),
        lower_bound.as_secs_f64(),
        wall.as_secs_f64() / lower_bound.as_secs_f64().max(1e-9)
    );
}

/// The resident memory of process `pid`, MiB (0 when it cannot be read).
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}
