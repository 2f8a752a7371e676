//! Reading failures: network errors classified into documented kinds, refusals turned
//! into `RATE_LIMITED`, and `Retry-After` in both its forms.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use url::Url;

use crate::error::{Error, NetworkKind};
use crate::gate::Throttled;

pub(super) fn gate_refusal(
    t: Throttled,
    http_status: Option<StatusCode>,
    retry_after: Option<String>,
) -> Error {
    crate::metrics::gate_rate_limited();
    Error::RateLimited {
        wait: t.wait,
        http_status: http_status.map(|s| s.as_u16()),
        retry_after,
        host: t.host.to_string(),
    }
}

pub(super) fn join_chain(chain: &[Url]) -> String {
    chain
        .iter()
        .map(Url::as_str)
        .collect::<Vec<_>>()
        .join(" -> ")
}

pub(super) fn network_error(url: &Url, e: reqwest::Error) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&e);
    while let Some(err) = source {
        if let Some(refused) = err.downcast_ref::<super::guard::PrivateAddress>() {
            return Error::PrivateNetwork {
                input: url.to_string(),
                reason: refused.to_string(),
            };
        }
        source = err.source();
    }
    Error::Network {
        kind: classify(&e),
        url: url.to_string(),
        source: e,
    }
}

/// The kind of a network failure, read from the typed error chain (never from message
/// text): the TLS library's error, hyper's, the OS error kind, then reqwest's own flags.
pub(super) fn classify(e: &reqwest::Error) -> NetworkKind {
    if e.is_timeout() {
        return NetworkKind::Timeout;
    }
    if e.is_dns() {
        return NetworkKind::Dns;
    }
    let mut io_kind = None;
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(err) = source {
        if err.is::<rustls::Error>() {
            return NetworkKind::Tls;
        }
        if let Some(h) = err.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return NetworkKind::Timeout;
            }
            if h.is_parse() || h.is_parse_status() || h.is_incomplete_message() {
                return if e.is_body() {
                    NetworkKind::Body
                } else {
                    NetworkKind::Protocol
                };
            }
        }
        // An I/O error wraps its cause without listing it as a source: look inside.
        let mut wrapped = err.downcast_ref::<std::io::Error>();
        while let Some(io) = wrapped {
            io_kind.get_or_insert(io.kind());
            let inner = io.get_ref();
            if inner.is_some_and(|i| i.is::<rustls::Error>()) {
                return NetworkKind::Tls;
            }
            wrapped = inner.and_then(|i| i.downcast_ref::<std::io::Error>());
        }
        source = err.source();
    }
    use std::io::ErrorKind as K;
    match io_kind {
        Some(K::TimedOut) => return NetworkKind::Timeout,
        Some(
            K::ConnectionRefused | K::HostUnreachable | K::NetworkUnreachable | K::AddrNotAvailable,
        ) => {
            return NetworkKind::Connect;
        }
        _ => {}
    }
    if e.is_body() || e.is_decode() {
        return NetworkKind::Body;
    }
    if e.is_redirect() {
        return NetworkKind::Redirect;
    }
    if e.is_connect() {
        // Connected, then the peer broke off before TLS or HTTP got going.
        return match io_kind {
            Some(K::ConnectionReset | K::ConnectionAborted | K::UnexpectedEof | K::BrokenPipe) => {
                NetworkKind::Protocol
            }
            _ => NetworkKind::Connect,
        };
    }
    match io_kind {
        Some(K::ConnectionReset | K::ConnectionAborted | K::UnexpectedEof | K::BrokenPipe) => {
            NetworkKind::Protocol
        }
        _ if e.is_request() => NetworkKind::Protocol,
        _ => NetworkKind::Other,
    }
}

/// Parses a `Retry-After` value: delta-seconds, or an HTTP-date relative to `now`. A past
/// or unparsable value is `None`.
///
/// An HTTP-date names a whole second: a server that says "now + 2 s" and formats it has
/// cut the fraction off, so the date can come out up to a second early. The wait is
/// rounded up to whole seconds, which gives back the server's own delta (a retry sent at
/// the bare date would be refused, and spacing by it would be too tight).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Some(span) = crate::date::delta_seconds(value) {
        return Some(span);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let ahead = at.duration_since(now).ok().filter(|d| !d.is_zero())?;
    let secs = ahead.as_secs() + u64::from(ahead.subsec_nanos() > 0);
    Some(Duration::from_secs(secs).min(crate::date::MAX_SPAN))
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
        // A date a server cut to the second: the fraction it lost is given back.
        let just_after = now + Duration::from_millis(240);
        assert_eq!(
            parse_retry_after(&later, just_after),
            Some(Duration::from_secs(90))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
        assert_eq!(parse_retry_after("", now), None);
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(crate::date::MAX_SPAN)
        );
        assert_eq!(
            parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now),
            Some(crate::date::MAX_SPAN)
        );
    }
}
