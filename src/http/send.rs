//! One send on the wire: the conditional GET, its outcome told to the gate (and published
//! to the shared host state), redirects and refusals handed back to the caller.

use std::time::SystemTime;

use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap, HeaderValue};
use url::Url;

use super::classify::{network_error, parse_retry_after};
use super::walls;
use super::{Client, GetRequest, Response};
use crate::error::{Error, Result};
use crate::gate::{Outcome, Permit};
use crate::hosts::Notes;
use crate::payload::Payload;

pub(super) enum Hop {
    Done(Box<Response>),
    Redirect(Url),
}

pub(super) enum Sent {
    Hop(Hop),
    Refused {
        status: StatusCode,
        retry_after_raw: Option<String>,
    },
}

/// Whether this response is the host asking to be left alone: `429`, `403`, or a `503`
/// that says when to come back (a throttle in practice).
pub(super) fn is_refusal(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::FORBIDDEN
        || (status == StatusCode::SERVICE_UNAVAILABLE && headers.contains_key(header::RETRY_AFTER))
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Reads the body, stopping (and dropping the connection) as soon as it passes `cap`, or
/// as soon as its first bytes show it is something `refuse` will not read.
async fn read_capped(
    mut resp: reqwest::Response,
    url: &Url,
    cap: u64,
    refuse: Option<super::Refuse>,
    content_type: Option<&str>,
) -> Result<Payload> {
    let refused = |ct: String| Error::UnsupportedContent {
        url: url.to_string(),
        content_type: ct,
    };
    if let Some(ct) = refuse.and_then(|r| r(content_type, &[])) {
        return Err(refused(ct));
    }
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(Error::TooLarge {
            what: "the response body".to_owned(),
            limit: cap,
        });
    }
    let mut body = Payload::default();
    let mut sniffed = refuse.is_none();
    while let Some(chunk) = resp.chunk().await.map_err(|e| network_error(url, e))? {
        if body.len() as u64 + chunk.len() as u64 > cap {
            return Err(Error::TooLarge {
                what: "the response body".to_owned(),
                limit: cap,
            });
        }
        if !sniffed {
            sniffed = true;
            if let Some(ct) = refuse.and_then(|r| r(content_type, &chunk)) {
                return Err(refused(ct));
            }
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl Client {
    /// Tells the gate (and the shared state) how the send ended.
    async fn ended(
        &self,
        permit: &mut Permit,
        outcome: Outcome,
        status: Option<StatusCode>,
        notes: &mut Notes,
    ) {
        let before = self.gate().state_of(permit.host());
        let event = permit.record(outcome, status.map(|s| s.as_u16()));
        self.publish(permit.host(), before, event, notes).await;
    }

    /// Like [`Client::ended`] for a response, then what it said of the host's quota (unless
    /// a refusal said when to come back: its Retry-After wins).
    async fn answered(
        &self,
        permit: &mut Permit,
        outcome: Outcome,
        status: StatusCode,
        quota: Option<super::quota::Quota>,
        notes: &mut Notes,
    ) {
        let refused_with_date = matches!(
            outcome,
            Outcome::Refused {
                retry_after: Some(_)
            }
        );
        self.ended(permit, outcome, Some(status), notes).await;
        if let Some(q) = quota.filter(|_| !refused_with_date) {
            self.quota(permit, q, notes).await;
        }
    }

    /// Tells the gate (and the shared state) what a response said of the host's quota.
    async fn quota(&self, permit: &Permit, q: super::quota::Quota, notes: &mut Notes) {
        let before = self.gate().state_of(permit.host());
        let reset = tokio::time::Instant::now() + q.reset_in;
        let event = self.gate().learn_quota(permit.host(), q.remaining, reset);
        tracing::debug!(host = %permit.host(), remaining = q.remaining, reset_in = ?q.reset_in, "announced quota");
        self.publish(permit.host(), before, event, notes).await;
    }

    /// Sends one GET and reads its answer; the caller holds every slot it needs.
    pub(super) async fn send_once(
        &self,
        permit: &mut Permit,
        url: &Url,
        req: &GetRequest<'_>,
        notes: &mut Notes,
        plan: &super::site::Plan<'_>,
    ) -> Result<Sent> {
        let client = self.pool_for(&plan.route).await?;
        let mut builder = client
            .get(url.clone())
            .header(header::ACCEPT, HeaderValue::from_static(req.accept));
        for (name, value) in &plan.headers {
            builder = builder.header(name, value.clone());
        }
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
        // Counted from its start: a send cancelled in flight still spaces the next one.
        let before = self.gate().state_of(permit.host());
        let start = permit.start_send();
        self.publish(permit.host(), before, start, notes).await;
        if let Some(gap) = plan.rule.and_then(|r| r.min_interval) {
            // The owner's floor on this host's spacing, counted from this send's start.
            let before = self.gate().state_of(permit.host());
            let hold = self
                .gate()
                .hold(permit.host(), tokio::time::Instant::now() + gap);
            self.publish(permit.host(), before, hold, notes).await;
        }

        let resp = match builder.send().await {
            Ok(resp) => resp,
            Err(e) => {
                self.ended(permit, Outcome::Failed, None, notes).await;
                return Err(network_error(url, e));
            }
        };
        let status = resp.status();
        let headers = resp.headers().clone();
        // What the host says is left of its quota counts for the next send, whatever the
        // status; a refusal's Retry-After wins over it.
        let quota = super::quota::read(&headers, SystemTime::now());

        if walls::wants_credentials(status, &headers) {
            // Not a throttle: the host answered, and asking again without credentials
            // would only be refused again.
            self.answered(permit, Outcome::Success, status, quota, notes)
                .await;
            let (scheme, realm) = walls::challenge(&headers);
            return Err(Error::AuthRequired {
                url: url.to_string(),
                status: status.as_u16(),
                scheme,
                realm,
                rule: plan.credentials.clone(),
            });
        }
        let retry_after_given = headers.contains_key(header::RETRY_AFTER);
        let mut resp = resp;
        let walled = if walls::is_challenge(&headers) {
            true
        } else if walls::walls_with(status) && !retry_after_given {
            let first = resp.chunk().await.ok().flatten().unwrap_or_default();
            walls::looks_html(
                header_str(&headers, header::CONTENT_TYPE).as_deref(),
                &first,
            )
        } else {
            false
        };
        if walled {
            // Learned as before (a 403 or 429 still cools the host), but never retried
            // and never read as the document.
            let outcome = if is_refusal(status, &headers) {
                Outcome::Refused { retry_after: None }
            } else {
                Outcome::Success
            };
            self.answered(permit, outcome, status, quota, notes).await;
            tracing::debug!(%url, %status, "bot wall");
            return Err(Error::Blocked {
                url: url.to_string(),
                status: status.as_u16(),
                provider: walls::provider(&headers).map(str::to_owned),
            });
        }

        if is_refusal(status, &headers) {
            let raw = header_str(&headers, header::RETRY_AFTER);
            let retry_after = raw
                .as_deref()
                .and_then(|r| parse_retry_after(r, SystemTime::now()));
            self.answered(
                permit,
                Outcome::Refused { retry_after },
                status,
                quota,
                notes,
            )
            .await;
            tracing::debug!(%url, %status, ?retry_after, "host refused");
            return Ok(Sent::Refused {
                status,
                retry_after_raw: raw,
            });
        }
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            self.answered(permit, Outcome::Success, status, quota, notes)
                .await;
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
            // Its scheme, address and robots.txt are checked before it is sent (`hops.rs`).
            return Ok(Sent::Hop(Hop::Redirect(next)));
        }
        let final_url = resp.url().clone();
        let meta = |body: Payload, not_modified: bool| Response {
            final_url: final_url.clone(),
            not_modified,
            body,
            content_type: header_str(&headers, header::CONTENT_TYPE),
            etag: header_str(&headers, header::ETAG),
            last_modified: header_str(&headers, header::LAST_MODIFIED),
            received_ms: crate::cache::now_ms(),
            freshness: crate::cache::freshness::read(&headers, SystemTime::now()),
            credentialed: plan.credentials.is_some(),
            lineage: super::Lineage::none(),
        };
        if status == StatusCode::NOT_MODIFIED {
            self.answered(permit, Outcome::Success, status, quota, notes)
                .await;
            return Ok(Sent::Hop(Hop::Done(Box::new(meta(
                Payload::default(),
                true,
            )))));
        }
        if !status.is_success() {
            self.answered(permit, Outcome::Success, status, quota, notes)
                .await;
            return Err(Error::HttpStatus {
                status: status.as_u16(),
                url: url.to_string(),
            });
        }
        let content_type = header_str(&headers, header::CONTENT_TYPE);
        let body = read_capped(
            resp,
            url,
            self.inner.max_body_bytes,
            req.refuse,
            content_type.as_deref(),
        )
        .await;
        // The host answered; a body the caller refused is no failure of the host's.
        let outcome = match &body {
            Ok(_) | Err(Error::UnsupportedContent { .. }) => Outcome::Success,
            Err(_) => Outcome::Failed,
        };
        self.answered(permit, outcome, status, quota, notes).await;
        Ok(Sent::Hop(Hop::Done(Box::new(meta(body?, false)))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
