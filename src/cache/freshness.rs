//! How long a response says it stays fresh (RFC 9111): `Cache-Control: max-age` (or
//! `s-maxage` is ignored: we are a private cache), else `Expires` minus `Date`, less `Age`;
//! `no-store`, `no-cache` and `must-revalidate` as the server says. Unparsable values are
//! ignored, never an error.
//!
//! A feed's declared schedule (RSS `<ttl>`, `sy:updatePeriod` / `sy:updateFrequency`)
//! counts as freshness too: a copy is fresh until the later of what the server and the feed
//! say ([`Basis::until`]), capped by `--max-freshness`, and never under `no-cache`.

use std::time::{Duration, SystemTime};

use reqwest::header::{self, HeaderMap};
use serde::{Deserialize, Serialize};

use crate::model::FreshBy;

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

/// What a feed says of its own schedule, kept with its cached copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Declared {
    /// How often it says it changes, in seconds.
    pub seconds: u64,
    /// Which element said so (`Ttl` or `SyUpdatePeriod`).
    pub by: FreshBy,
}

/// What a copy's freshness is made of: the response that brought (or last confirmed) it,
/// what the server said, and what the feed declares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Basis {
    /// When that response arrived, Unix ms.
    pub received_ms: u64,
    /// Until when (Unix ms) the server said the copy stays fresh; `None`: it said nothing.
    pub server_until_ms: Option<u64>,
    /// The server's freshness came from `Expires`, not `max-age`.
    pub from_expires: bool,
    /// The server said `no-cache`: the copy is never fresh, whatever the feed declares.
    pub no_cache: bool,
    /// The feed's declared schedule, when it has one.
    pub declared: Option<Declared>,
}

impl Basis {
    /// Until when (Unix ms) the copy is fresh and which rule says so: the later of the
    /// server's freshness and the feed's declared schedule (the server's on a tie), capped
    /// at `cap` after the response. `None` when neither says anything, or under `no-cache`.
    pub fn until(&self, cap: Duration) -> Option<(u64, FreshBy)> {
        if self.no_cache {
            return None;
        }
        let server = self.server_until_ms.map(|u| {
            let by = if self.from_expires {
                FreshBy::Expires
            } else {
                FreshBy::CacheControl
            };
            (u, by)
        });
        let declared = self.declared.map(|d| {
            let span = d.seconds.saturating_mul(1000);
            (self.received_ms.saturating_add(span), d.by)
        });
        let (until, by) = match (server, declared) {
            (Some(s), Some(d)) if d.0 > s.0 => d,
            (Some(s), _) => s,
            (None, d) => d?,
        };
        let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
        let capped = self.received_ms.saturating_add(cap_ms);
        Some(if until > capped {
            (capped, FreshBy::MaxFreshness)
        } else {
            (until, by)
        })
    }
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
    fn the_later_of_the_server_and_the_feed_wins_capped_and_never_under_no_cache() {
        let hour = Duration::from_secs(3600);
        let ttl = |seconds| {
            Some(Declared {
                seconds,
                by: FreshBy::Ttl,
            })
        };
        let b = Basis {
            received_ms: 1_000_000,
            server_until_ms: Some(1_060_000),
            declared: ttl(600),
            ..Basis::default()
        };
        assert_eq!(b.until(hour), Some((1_600_000, FreshBy::Ttl)));
        // The server's is later: it wins; on a tie too.
        let longer = Basis {
            server_until_ms: Some(1_900_000),
            ..b
        };
        assert_eq!(longer.until(hour), Some((1_900_000, FreshBy::CacheControl)));
        let tie = Basis {
            server_until_ms: Some(1_600_000),
            from_expires: true,
            ..b
        };
        assert_eq!(tie.until(hour), Some((1_600_000, FreshBy::Expires)));
        // A day of `<ttl>` under a one-hour cap is the cap's.
        let day = Basis {
            declared: ttl(86_400),
            ..b
        };
        assert_eq!(day.until(hour), Some((4_600_000, FreshBy::MaxFreshness)));
        assert_eq!(
            day.until(Duration::ZERO),
            Some((1_000_000, FreshBy::MaxFreshness))
        );
        // The server's `no-cache` is the last word; nothing said is no freshness.
        let no_cache = Basis {
            no_cache: true,
            ..b
        };
        assert_eq!(no_cache.until(hour), None);
        assert_eq!(Basis::default().until(hour), None);
        let declared_only = Basis {
            server_until_ms: None,
            declared: Some(Declared {
                seconds: u64::MAX,
                by: FreshBy::SyUpdatePeriod,
            }),
            ..b
        };
        assert_eq!(
            declared_only.until(Duration::MAX),
            Some((u64::MAX, FreshBy::SyUpdatePeriod))
        );
    }

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
