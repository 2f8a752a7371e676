//! The counters and histograms the operations record, for an operator's Prometheus, through
//! one kept crate (`prometheus-client`, its Prometheus 0.0.4 text encoder). No business logic
//! reads them: code records with the functions here, and `render` writes them out.
//!
//! Every label takes values from a fixed set (no URL, no host), so the series are bounded:
//! the README lists each and what an operator reads from it. The registry is one per process,
//! as what it counts is: the process's requests, calls and stores.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The `Content-Type` of what [`render`] writes.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TierLabel {
    tier: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StoreLabel {
    store: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabel {
    tool: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabel {
    event: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabel {
    version: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every series of the process.
struct Metrics {
    registry: Registry,
    upstream: Family<ResultLabel, Counter>,
    refusals: Family<StatusLabel, Counter>,
    cache_fresh: Family<TierLabel, Counter>,
    shared_cache: Family<EventLabel, Counter>,
    gate_rate_limited: Counter,
    gate_wait: Histogram,
    hosts_warm: Gauge,
    store_errors: Family<StoreLabel, Counter>,
    store_fallbacks: Counter,
    extractions: Family<ResultLabel, Counter>,
    extraction_time: Histogram,
    calls: Family<CallLabel, Counter>,
    call_time: Histograms<ToolLabel>,
    calls_in_flight: Gauge,
    sessions: Gauge,
    acks: Family<ResultLabel, Counter>,
    http_refused: Family<ReasonLabel, Counter>,
}

/// Gate waits and call durations, seconds: from none to past the 60 s a call may take.
const WAIT_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0,
];
/// Extractions, seconds: most pages take milliseconds, a page is cut at 10 s of CPU.
const EXTRACTION_BUCKETS: [f64; 11] = [
    0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

fn call_histogram() -> Histogram {
    Histogram::new(WAIT_BUCKETS)
}

impl Metrics {
    fn new() -> Metrics {
        let m = Metrics {
            registry: Registry::default(),
            upstream: Family::default(),
            refusals: Family::default(),
            cache_fresh: Family::default(),
            shared_cache: Family::default(),
            gate_rate_limited: Counter::default(),
            gate_wait: Histogram::new(WAIT_BUCKETS),
            hosts_warm: Gauge::default(),
            store_errors: Family::default(),
            store_fallbacks: Counter::default(),
            extractions: Family::default(),
            extraction_time: Histogram::new(EXTRACTION_BUCKETS),
            calls: Family::default(),
            call_time: Family::new_with_constructor(call_histogram),
            calls_in_flight: Gauge::default(),
            sessions: Gauge::default(),
            acks: Family::default(),
            http_refused: Family::default(),
        };
        let mut r = Registry::default();
        let info: Family<VersionLabel, Gauge> = Family::default();
        info.get_or_create(&VersionLabel {
            version: env!("CARGO_PKG_VERSION"),
        })
        .set(1);
        r.register("rss_build_info", "The running rss version (always 1)", info);
        r.register(
            "rss_upstream_requests",
            "Requests sent to origins, by result: 2xx, 304, 3xx, 4xx, 5xx, network_error",
            m.upstream.clone(),
        );
        r.register(
            "rss_upstream_refusals",
            "Refusals origins sent (429, 403, 503 as a throttle), each taught to the gate",
            m.refusals.clone(),
        );
        r.register(
            "rss_cache_fresh",
            "Answers served from a fresh cached copy with no request, by tier: local, shared",
            m.cache_fresh.clone(),
        );
        r.register(
            "rss_shared_cache",
            "The fleet's shared cache tier, by event: hit, stored, waited (for another node's fetch of the same URL)",
            m.shared_cache.clone(),
        );
        r.register(
            "rss_gate_rate_limited",
            "Requests the gate answered RATE_LIMITED itself, sending nothing",
            m.gate_rate_limited.clone(),
        );
        r.register(
            "rss_gate_wait_seconds",
            "Time a fetch waited for its host's turn before sending",
            m.gate_wait.clone(),
        );
        r.register(
            "rss_gate_hosts_warm",
            "Hosts that throttled lately and are paced with care (at the scrape)",
            m.hosts_warm.clone(),
        );
        r.register(
            "rss_store_errors",
            "Operations the shared store failed, by store: gate, records, cache",
            m.store_errors.clone(),
        );
        r.register(
            "rss_store_fallbacks",
            "Gate operations served by the local file store because Redis failed",
            m.store_fallbacks.clone(),
        );
        r.register(
            "rss_article_extractions",
            "Pages read as articles, by result: ok, timeout (EXTRACTION_TIMEOUT), error",
            m.extractions.clone(),
        );
        r.register(
            "rss_article_extraction_seconds",
            "Time an article's extraction took",
            m.extraction_time.clone(),
        );
        r.register(
            "rss_mcp_calls",
            "MCP tool calls answered, by tool and result: ok, error, cancelled",
            m.calls.clone(),
        );
        r.register(
            "rss_mcp_call_duration_seconds",
            "Time an MCP tool call took, by tool",
            m.call_time.clone(),
        );
        r.register(
            "rss_mcp_calls_in_flight",
            "MCP tool calls running now",
            m.calls_in_flight.clone(),
        );
        r.register(
            "rss_mcp_sessions",
            "Old-style (before 2026-07-28) MCP sessions open now (at the scrape)",
            m.sessions.clone(),
        );
        r.register(
            "rss_reader_acks",
            "Delivery acknowledgements, by result: ok, refused, error",
            m.acks.clone(),
        );
        r.register(
            "rss_http_refused",
            "HTTP requests refused before any work, by reason: token, sessions, draining",
            m.http_refused.clone(),
        );
        Metrics { registry: r, ..m }
    }
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// A request sent to an origin, and what came back: its status, or `None` for a network
/// error.
pub(crate) fn upstream(status: Option<u16>) {
    let result = match status {
        None => "network_error",
        Some(304) => "304",
        Some(200..=299) => "2xx",
        Some(300..=399) => "3xx",
        Some(400..=499) => "4xx",
        Some(_) => "5xx",
    };
    METRICS
        .upstream
        .get_or_create(&ResultLabel { result })
        .inc();
}

/// A refusal an origin sent (`429`, `403`, `503`), which the gate learns from.
pub(crate) fn refusal(status: u16) {
    let status = match status {
        429 => "429",
        403 => "403",
        503 => "503",
        _ => "other",
    };
    METRICS
        .refusals
        .get_or_create(&StatusLabel { status })
        .inc();
}

/// An answer served from a fresh copy with no request: `shared` when the fleet's tier had it.
pub(crate) fn cache_fresh(shared: bool) {
    let tier = if shared { "shared" } else { "local" };
    METRICS.cache_fresh.get_or_create(&TierLabel { tier }).inc();
}

/// An event of the fleet's shared cache tier: `hit`, `stored`, `waited`.
pub(crate) fn shared_cache(event: &'static str) {
    METRICS
        .shared_cache
        .get_or_create(&EventLabel { event })
        .inc();
}

/// The gate answered `RATE_LIMITED` itself.
pub(crate) fn gate_rate_limited() {
    METRICS.gate_rate_limited.inc();
}

/// A fetch waited this long for its host's turn before sending.
pub(crate) fn gate_wait(waited: Duration) {
    METRICS.gate_wait.observe(waited.as_secs_f64());
}

/// A shared store's operation failed: `gate`, `records` or `cache`.
pub(crate) fn store_error(store: &'static str) {
    METRICS
        .store_errors
        .get_or_create(&StoreLabel { store })
        .inc();
}

/// A gate operation was served by the local file store because Redis failed.
pub(crate) fn store_fallback() {
    METRICS.store_fallbacks.inc();
}

/// An article's extraction ended: `ok`, `timeout` or `error`, after `took`.
pub(crate) fn extraction(result: &'static str, took: Duration) {
    METRICS
        .extractions
        .get_or_create(&ResultLabel { result })
        .inc();
    METRICS.extraction_time.observe(took.as_secs_f64());
}

/// An acknowledgement: `ok`, `refused` (a token refused) or `error`.
pub(crate) fn ack(result: &'static str) {
    METRICS.acks.get_or_create(&ResultLabel { result }).inc();
}

/// An HTTP request refused before any work: `token`, `sessions` or `draining`.
pub(crate) fn http_refused(reason: &'static str) {
    METRICS
        .http_refused
        .get_or_create(&ReasonLabel { reason })
        .inc();
}

/// A tool call running: counted in flight until dropped, then by its result and duration.
pub(crate) struct Call {
    tool: &'static str,
    started: std::time::Instant,
    result: &'static str,
}

impl Call {
    /// A call of `tool` (one of the server's tool names, else `unknown`) starting now.
    pub(crate) fn start(tool: &'static str) -> Call {
        METRICS.calls_in_flight.inc();
        Call {
            tool,
            started: std::time::Instant::now(),
            result: "cancelled",
        }
    }

    /// How it ended: `ok` or `error` (a call dropped before this was cancelled).
    pub(crate) fn finish(mut self, error: bool) {
        self.result = if error { "error" } else { "ok" };
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        METRICS.calls_in_flight.dec();
        METRICS
            .calls
            .get_or_create(&CallLabel {
                tool: self.tool,
                result: self.result,
            })
            .inc();
        METRICS
            .call_time
            .get_or_create(&ToolLabel { tool: self.tool })
            .observe(self.started.elapsed().as_secs_f64());
    }
}

/// What is read at the scrape rather than counted.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sampled {
    /// Hosts the gate holds warm now.
    pub hosts_warm: usize,
    /// Old-style MCP sessions open now.
    pub sessions: usize,
}

/// Every series in the Prometheus text format (0.0.4), with `now`'s sampled values.
pub(crate) fn render(now: Sampled) -> String {
    let m = &*METRICS;
    m.hosts_warm
        .set(i64::try_from(now.hosts_warm).unwrap_or(i64::MAX));
    m.sessions
        .set(i64::try_from(now.sessions).unwrap_or(i64::MAX));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &m.registry);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_written_with_its_help_and_type() {
        upstream(Some(200));
        upstream(Some(304));
        upstream(None);
        refusal(429);
        cache_fresh(true);
        gate_wait(Duration::from_millis(1500));
        Call::start("fetch_feed").finish(false);
        drop(Call::start("get_item"));
        let text = render(Sampled {
            hosts_warm: 2,
            sessions: 3,
        });
        for name in [
            "rss_build_info",
            "rss_upstream_requests_total",
            "rss_upstream_refusals_total",
            "rss_cache_fresh_total",
            "rss_gate_wait_seconds",
            "rss_gate_hosts_warm",
            "rss_mcp_calls_total",
            "rss_mcp_call_duration_seconds",
            "rss_mcp_calls_in_flight",
            "rss_mcp_sessions",
        ] {
            assert!(text.contains(&format!("# TYPE {name} ")), "{name}:\n{text}");
        }
        assert!(text.contains(r#"rss_upstream_requests_total{result="network_error"}"#));
        assert!(text.contains(r#"rss_mcp_calls_total{tool="get_item",result="cancelled"}"#));
        assert!(text.contains("rss_gate_hosts_warm 2"));
        assert!(text.contains("rss_mcp_sessions 3"));
        assert!(text.contains(r#"rss_gate_wait_seconds_bucket{le="2.5"}"#));
    }
}
