//! How long a response says it stays fresh (RFC 9111): `Cache-Control: max-age` (or
//! `s-maxage` is ignored: we are a private cache), else `Expires` minus `Date`, less `Age`;
//! `no-store`, `no-cache` and `must-revalidate` as the server says. Unparsable values are
//! ignored, never an error.

use std::time::{Duration, SystemTime};

use reqwest::header::{self, HeaderMap};

/// What a response says about its own freshness.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Freshness {
    /// How long from its arrival the response may be served without asking again, as the
    /// server says (`None`: it says nothing).
    pub lifetime: Option<Duration>,
    /// `no-store`: it must not be kept at all.
    pub no_store: bool,
    /// `no-cache`: every use asks the origin first.
    pub no_cache: bool,
    /// `must-revalidate`: once stale, never served without asking (not even when the
    /// origin fails).
    pub must_revalidate: bool,
    /// `private`: for one user only, which a private cache (ours) may keep (RFC 9111
    /// §5.2.2.7); the entry is listed as `private`.
    pub private: bool,
    /// The response carries `Cache-Control` or `Expires` at all. A `304` that carries
    /// neither leaves the stored response's freshness as it was (RFC 9111 §4.3.4).
    pub stated: bool,
    /// The lifetime came from `Expires`, a fixed instant (not from `max-age`, a span from
    /// the response).
    pub from_expires: bool,
}

fn header(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// Reads the freshness headers of a response that arrived at `now`.
pub fn read(headers: &HeaderMap, now: SystemTime) -> Freshness {
    let mut f = Freshness::default();
    let mut max_age = None;
    f.stated = headers.contains_key(header::CACHE_CONTROL) || headers.contains_key(header::EXPIRES);
    for cc in headers.get_all(header::CACHE_CONTROL) {
        let Ok(cc) = cc.to_str() else { continue };
        for directive in cc.split(',') {
            let (name, value) = match directive.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
                None => (directive.trim(), None),
            };
            match name.to_ascii_lowercase().as_str() {
                "no-store" => f.no_store = true,
                "no-cache" => f.no_cache = true,
                "private" => f.private = true,
                "must-revalidate" | "proxy-revalidate" => f.must_revalidate = true,
                "max-age" => {
                    if let Some(span) = value.and_then(crate::date::delta_seconds) {
                        max_age = Some(span);
                    }
                }
                _ => {}
            }
        }
    }
    let age = header(headers, header::AGE)
        .and_then(crate::date::delta_seconds)
        .unwrap_or_default();
    f.from_expires = max_age.is_none() && headers.contains_key(header::EXPIRES);
    let lifetime = max_age.or_else(|| {
        let expires = httpdate::parse_http_date(header(headers, header::EXPIRES)?).ok();
        let date = header(headers, header::DATE)
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .unwrap_or(now);
        // An `Expires` that does not parse (often "0" or "-1") means already stale.
        Some(expires.map_or(Duration::ZERO, |e| {
            e.duration_since(date).unwrap_or(Duration::ZERO)
        }))
    });
    f.lifetime = lifetime.map(|l| l.saturating_sub(age));
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::test_headers as headers;

    #[test]
    fn max_age_wins_and_age_is_taken_off() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let f = read(
            &headers(&[("cache-control", "public, max-age=300"), ("age", "100")]),
            now,
        );
        assert_eq!(f.lifetime, Some(Duration::from_secs(200)));
        let date = httpdate::fmt_http_date(now);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(60));
        let f = read(
            &headers(&[("expires", &later), ("date", &date), ("age", "10")]),
            now,
        );
        assert_eq!(f.lifetime, Some(Duration::from_secs(50)));
        let f = read(
            &headers(&[("cache-control", "max-age=60"), ("expires", &later)]),
            now,
        );
        assert_eq!(f.lifetime, Some(Duration::from_secs(60)));
    }

    #[test]
    fn no_store_no_cache_and_bad_values_are_read_as_the_server_means_them() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let f = read(&headers(&[("cache-control", "no-store")]), now);
        assert!(f.no_store);
        let f = read(&headers(&[("cache-control", "No-Cache, max-age=60")]), now);
        assert!(f.no_cache);
        assert_eq!(
            read(&headers(&[("expires", "0")]), now).lifetime,
            Some(Duration::ZERO)
        );
        assert_eq!(
            read(&headers(&[("cache-control", "max-age=soon")]), now).lifetime,
            None
        );
        assert_eq!(read(&HeaderMap::new(), now), Freshness::default());
    }

    #[test]
    fn issue_27_a_huge_max_age_or_age_is_capped() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let f = read(
            &headers(&[("cache-control", "max-age=18446744073709551616")]),
            now,
        );
        assert_eq!(f.lifetime, Some(crate::date::MAX_SPAN));
        let f = read(
            &headers(&[
                ("cache-control", "max-age=60"),
                ("age", "99999999999999999999"),
            ]),
            now,
        );
        assert_eq!(f.lifetime, Some(Duration::ZERO));
    }
}
