//! The shared HTTP client: every network send of the process goes through [`Client::get`],
//! which takes the host's gate permit, sends a conditional GET within the size and time
//! limits, tells the gate what happened, and re-enters the gate once after a refusal.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderValue};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use url::Url;

use crate::config::Config;
use crate::error::{Error, NetworkKind, Result};
use crate::gate::{Gate, HostKey, Outcome, Permit, Throttled};

/// What the `Accept` header asks for when fetching feeds.
pub const ACCEPT_FEEDS: &str = "application/rss+xml, application/atom+xml, application/feed+json, \
     application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5";
/// What the `Accept` header asks for when fetching a page for discovery.
pub const ACCEPT_PAGES: &str = "text/html, application/xhtml+xml, application/rss+xml, \
     application/atom+xml, application/feed+json, application/xml;q=0.9, */*;q=0.5";

/// Validators from a cached copy, sent as `If-None-Match` / `If-Modified-Since`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The cached `ETag`.
    pub etag: Option<String>,
    /// The cached `Last-Modified`.
    pub last_modified: Option<String>,
}

/// One GET to make.
#[derive(Debug, Clone)]
pub struct GetRequest {
    /// The URL.
    pub url: Url,
    /// Conditional-request validators, if a cached copy exists.
    pub validators: Option<Validators>,
    /// No send may start after this instant (the call's gate budget).
    pub deadline: Instant,
    /// The `Accept` header.
    pub accept: &'static str,
}

/// A response that was read completely.
#[derive(Debug, Clone)]
pub struct Response {
    /// The URL that answered, after redirects.
    pub final_url: Url,
    /// `true` for `304 Not Modified` (then `body` is empty).
    pub not_modified: bool,
    /// The decoded body.
    pub body: Vec<u8>,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The `ETag` header.
    pub etag: Option<String>,
    /// The `Last-Modified` header.
    pub last_modified: Option<String>,
}

/// A GET's result with what it cost.
#[derive(Debug)]
pub struct Exchange {
    /// The response, or why there is none.
    pub result: Result<Response>,
    /// Sends made (a refused send and its retry count 2; each redirect hop counts).
    pub attempts: u32,
    /// Time spent waiting on the gate.
    pub gate_wait: Duration,
}

/// The one HTTP client of a process: a connection pool, the gate and the global cap on
/// sends in flight.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    proxied: reqwest::Client,
    direct: reqwest::Client,
    gate: Gate,
    sends: Semaphore,
    max_body_bytes: u64,
    max_redirects: usize,
}

impl Client {
    /// Builds the client from resolved configuration.
    pub fn new(config: &Config) -> Result<Client> {
        let build = |direct: bool| {
            let mut builder = reqwest::Client::builder()
                .user_agent(config.user_agent.clone())
                .redirect(reqwest::redirect::Policy::none())
                .retry(reqwest::retry::never())
                .connect_timeout(config.timeout)
                .timeout(config.timeout)
                .pool_idle_timeout(Duration::from_secs(30));
            if direct {
                builder = builder.no_proxy();
            }
            builder
                .build()
                .map_err(|e| Error::internal(format!("cannot build the HTTP client: {e}")))
        };
        Ok(Client {
            inner: Arc::new(Inner {
                proxied: build(false)?,
                direct: build(true)?,
                gate: Gate::new(config.gate),
                sends: Semaphore::new(config.concurrency.max(1)),
                max_body_bytes: config.max_body_bytes,
                max_redirects: config.max_redirects,
            }),
        })
    }

    /// The gate every send goes through.
    pub fn gate(&self) -> &Gate {
        &self.inner.gate
    }

    /// A deadline `MAX_GATE_WAIT` from now: the budget of one call.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.inner.gate.params().max_gate_wait
    }

    /// Fetches `req.url`, following redirects, with every send gated.
    pub async fn get(&self, req: GetRequest) -> Exchange {
        let mut ex = Exchange {
            result: Err(Error::internal("no send was made")),
            attempts: 0,
            gate_wait: Duration::ZERO,
        };
        ex.result = self
            .get_inner(&req, &mut ex.attempts, &mut ex.gate_wait)
            .await;
        ex
    }

    async fn get_inner(
        &self,
        req: &GetRequest,
        attempts: &mut u32,
        gate_wait: &mut Duration,
    ) -> Result<Response> {
        let mut url = req.url.clone();
        let mut chain: Vec<Url> = vec![url.clone()];
        loop {
            let key = HostKey::from_url(&url).ok_or_else(|| Error::InvalidUrl {
                input: url.to_string(),
                reason: "the URL has no host".into(),
                source: None,
            })?;
            let mut permit = self
                .inner
                .gate
                .acquire(&key, req.deadline)
                .await
                .map_err(|t| gate_refusal(t, None, None))?;
            *gate_wait += permit.waited();
            let hop = self
                .send_with_one_retry(&mut permit, &url, req, attempts, gate_wait)
                .await?;
            drop(permit);
            match hop {
                Hop::Done(resp) => return Ok(resp),
                Hop::Redirect(next) => {
                    if chain.contains(&next) {
                        chain.push(next);
                        return Err(Error::Redirect {
                            message: format!("redirect loop: {}", join_chain(&chain)),
                            hops: chain.len() - 1,
                        });
                    }
                    chain.push(next.clone());
                    if chain.len() - 1 > self.inner.max_redirects {
                        return Err(Error::Redirect {
                            message: format!(
                                "more than {} redirects: {}",
                                self.inner.max_redirects,
                                join_chain(&chain)
                            ),
                            hops: chain.len() - 1,
                        });
                    }
                    url = next;
                }
            }
        }
    }

    async fn send_with_one_retry(
        &self,
        permit: &mut Permit,
        url: &Url,
        req: &GetRequest,
        attempts: &mut u32,
        gate_wait: &mut Duration,
    ) -> Result<Hop> {
        let mut refused_once = false;
        loop {
            *attempts += 1;
            match self.send_once(permit, url, req).await? {
                Sent::Hop(hop) => return Ok(hop),
                Sent::Refused {
                    status,
                    retry_after_raw,
                } => {
                    // A 403 that persists is a block, not a window; 429 and 503 ask for a wait.
                    let asks_for_wait = status != StatusCode::FORBIDDEN;
                    if !refused_once {
                        refused_once = true;
                        match permit.pace(req.deadline).await {
                            Ok(slept) => {
                                *gate_wait += slept;
                                continue;
                            }
                            Err(t) if asks_for_wait => {
                                return Err(gate_refusal(t, Some(status), retry_after_raw));
                            }
                            Err(_) => {}
                        }
                    }
                    if asks_for_wait {
                        return Err(Error::RateLimited {
                            wait: permit.pacing(),
                            http_status: Some(status.as_u16()),
                            retry_after: retry_after_raw,
                            host: permit.host().to_string(),
                        });
                    }
                    return Err(Error::HttpStatus {
                        status: status.as_u16(),
                        url: url.to_string(),
                    });
                }
            }
        }
    }

    async fn send_once(&self, permit: &Permit, url: &Url, req: &GetRequest) -> Result<Sent> {
        let _slot = self
            .inner
            .sends
            .acquire()
            .await
            .map_err(|_| Error::internal("send slots closed"))?;
        let client = if is_loopback(url) {
            &self.inner.direct
        } else {
            &self.inner.proxied
        };
        let mut builder = client
            .get(url.clone())
            .header(header::ACCEPT, HeaderValue::from_static(req.accept));
        if let Some(v) = &req.validators {
            if let Some(etag) = v
                .etag
                .as_deref()
                .and_then(|e| HeaderValue::from_str(e).ok())
            {
                builder = builder.header(header::IF_NONE_MATCH, etag);
            }
            if let Some(lm) = v
                .last_modified
                .as_deref()
                .and_then(|e| HeaderValue::from_str(e).ok())
            {
                builder = builder.header(header::IF_MODIFIED_SINCE, lm);
            }
        }
        let resp = match builder.send().await {
            Ok(resp) => resp,
            Err(e) => {
                permit.record(Outcome::Failed);
                return Err(network_error(url, e));
            }
        };
        let status = resp.status();
        let headers = resp.headers().clone();

        if is_refusal(status, &headers) {
            let raw = header_str(&headers, header::RETRY_AFTER);
            let retry_after = raw
                .as_deref()
                .and_then(|r| parse_retry_after(r, SystemTime::now()));
            permit.record(Outcome::Refused { retry_after });
            tracing::debug!(%url, %status, ?retry_after, "host refused");
            return Ok(Sent::Refused {
                status,
                retry_after_raw: raw,
            });
        }
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            permit.record(Outcome::Success);
            let Some(location) = header_str(&headers, header::LOCATION) else {
                return Err(Error::HttpStatus {
                    status: status.as_u16(),
                    url: url.to_string(),
                });
            };
            let next = url.join(location.trim()).map_err(|e| Error::InvalidUrl {
                input: location.clone(),
                reason: format!("bad redirect Location from {url}"),
                source: Some(e),
            })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(Error::InvalidUrl {
                    input: next.to_string(),
                    reason: format!("redirect from {url} to a non-http(s) URL"),
                    source: None,
                });
            }
            return Ok(Sent::Hop(Hop::Redirect(next)));
        }
        let final_url = resp.url().clone();
        let meta = |body: Vec<u8>, not_modified: bool| Response {
            final_url: final_url.clone(),
            not_modified,
            body,
            content_type: header_str(&headers, header::CONTENT_TYPE),
            etag: header_str(&headers, header::ETAG),
            last_modified: header_str(&headers, header::LAST_MODIFIED),
        };
        if status == StatusCode::NOT_MODIFIED {
            permit.record(Outcome::Success);
            return Ok(Sent::Hop(Hop::Done(meta(Vec::new(), true))));
        }
        if !status.is_success() {
            permit.record(Outcome::Failed);
            return Err(Error::HttpStatus {
                status: status.as_u16(),
                url: url.to_string(),
            });
        }
        let body = read_capped(resp, url, self.inner.max_body_bytes).await;
        permit.record(if body.is_ok() {
            Outcome::Success
        } else {
            Outcome::Failed
        });
        Ok(Sent::Hop(Hop::Done(meta(body?, false))))
    }
}

enum Hop {
    Done(Response),
    Redirect(Url),
}

enum Sent {
    Hop(Hop),
    Refused {
        status: StatusCode,
        retry_after_raw: Option<String>,
    },
}

/// Whether this response is the host asking to be left alone: `429`, `403`, or a `503`
/// that says when to come back.
fn is_refusal(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::FORBIDDEN
        || (status == StatusCode::SERVICE_UNAVAILABLE && headers.contains_key(header::RETRY_AFTER))
}

fn gate_refusal(
    t: Throttled,
    http_status: Option<StatusCode>,
    retry_after: Option<String>,
) -> Error {
    Error::RateLimited {
        wait: t.wait,
        http_status: http_status.map(|s| s.as_u16()),
        retry_after,
        host: t.host.to_string(),
    }
}

fn join_chain(chain: &[Url]) -> String {
    chain
        .iter()
        .map(Url::as_str)
        .collect::<Vec<_>>()
        .join(" -> ")
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// Reads the body, stopping (and dropping the connection) as soon as it passes `cap`.
async fn read_capped(mut resp: reqwest::Response, url: &Url, cap: u64) -> Result<Vec<u8>> {
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(Error::TooLarge { limit: cap });
    }
    let mut body = Vec::with_capacity(resp.content_length().unwrap_or(64 * 1024).min(cap) as usize);
    while let Some(chunk) = resp.chunk().await.map_err(|e| network_error(url, e))? {
        if body.len() as u64 + chunk.len() as u64 > cap {
            return Err(Error::TooLarge { limit: cap });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn network_error(url: &Url, e: reqwest::Error) -> Error {
    Error::Network {
        kind: classify(&e),
        url: url.to_string(),
        source: e,
    }
}

fn classify(e: &reqwest::Error) -> NetworkKind {
    if e.is_timeout() {
        return NetworkKind::Timeout;
    }
    if e.is_dns() {
        return NetworkKind::Dns;
    }
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(err) = source {
        chain.push_str(&err.to_string().to_ascii_lowercase());
        chain.push(' ');
        source = err.source();
    }
    if chain.contains("certificate") || chain.contains("tls") || chain.contains("handshake") {
        return NetworkKind::Tls;
    }
    if chain.contains("dns error") || chain.contains("failed to lookup") {
        return NetworkKind::Dns;
    }
    if e.is_connect() {
        return NetworkKind::Connect;
    }
    if e.is_body() || e.is_decode() {
        return NetworkKind::Body;
    }
    if e.is_redirect() {
        return NetworkKind::Redirect;
    }
    NetworkKind::Other
}

/// Parses a `Retry-After` value: delta-seconds, or an HTTP-date relative to `now`. A past
/// or unparsable value is `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(
            value.parse::<u64>().unwrap_or(u64::MAX),
        ));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    at.duration_since(now).ok().filter(|d| !d.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(90))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(parse_retry_after(&past, now), None);
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(Duration::from_secs(u64::MAX))
        );
    }

    #[test]
    fn refusals_are_429_403_and_503_with_retry_after() {
        let empty = HeaderMap::new();
        let mut with_ra = HeaderMap::new();
        with_ra.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        assert!(is_refusal(StatusCode::TOO_MANY_REQUESTS, &empty));
        assert!(is_refusal(StatusCode::FORBIDDEN, &empty));
        assert!(is_refusal(StatusCode::SERVICE_UNAVAILABLE, &with_ra));
        assert!(!is_refusal(StatusCode::SERVICE_UNAVAILABLE, &empty));
        assert!(!is_refusal(StatusCode::INTERNAL_SERVER_ERROR, &with_ra));
    }
}
