//! Quotas servers announce before they refuse: the IETF draft fields `RateLimit`
//! (`"name";r=REMAINING;t=SECONDS`) and `RateLimit-Policy` (`"name";q=QUOTA;w=WINDOW`),
//! read as HTTP structured fields with [sfv](https://crates.io/crates/sfv), several policies
//! allowed; and the vendor forms `X-RateLimit-*`, `X-Rate-Limit-*` and the older drafts'
//! `RateLimit-Limit` / `-Remaining` / `-Reset` (a reset larger than 10⁹ is Unix seconds,
//! else seconds from now). A field that does not parse is ignored (logged at `-v`), never an
//! error. The binding quota is the one with the fewest requests left.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use reqwest::header::HeaderMap;

use crate::date::MAX_SPAN;

/// What a response says is left of the host's allowance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Requests left before `reset_in`.
    pub remaining: u64,
    /// When the allowance refills, from the response's arrival.
    pub reset_in: Duration,
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn int(v: &sfv::BareItem) -> Option<i64> {
    v.as_integer().map(i64::from).or_else(|| {
        v.as_decimal()
            .map(f64::from)
            .filter(|d| d.is_finite())
            .map(|d| d.ceil() as i64)
    })
}

/// The IETF draft fields: every `RateLimit` item with `r` (and `t`, or the window `w` of
/// the policy of the same name).
fn draft(headers: &HeaderMap) -> Vec<Quota> {
    let parse = |name: &str| -> Option<sfv::List> {
        let value = header(headers, name)?;
        match sfv::Parser::new(value).parse::<sfv::List>() {
            Ok(list) => Some(list),
            Err(e) => {
                tracing::info!(field = name, value, "ignoring a malformed field: {e}");
                None
            }
        }
    };
    let items = |list: &sfv::List| -> Vec<(String, sfv::Parameters)> {
        list.iter()
            .filter_map(|e| match e {
                sfv::ListEntry::Item(i) => Some((
                    i.bare_item
                        .as_string()
                        .map(|s| s.as_str().to_owned())
                        .or_else(|| i.bare_item.as_token().map(|t| t.as_str().to_owned()))
                        .unwrap_or_default(),
                    i.params.clone(),
                )),
                sfv::ListEntry::InnerList(_) => None,
            })
            .collect()
    };
    let param = |p: &sfv::Parameters, k: &str| {
        p.iter()
            .find(|(key, _)| key.as_str() == k)
            .and_then(|(_, v)| int(v))
    };
    let policies: Vec<(String, sfv::Parameters)> = parse("ratelimit-policy")
        .map(|l| items(&l))
        .unwrap_or_default();
    let Some(limits) = parse("ratelimit") else {
        return Vec::new();
    };
    items(&limits)
        .into_iter()
        .filter_map(|(name, p)| {
            let remaining = param(&p, "r")?;
            let reset = param(&p, "t").or_else(|| {
                policies
                    .iter()
                    .find(|(n, _)| *n == name)
                    .and_then(|(_, pp)| param(pp, "w"))
            })?;
            Some(Quota {
                remaining: u64::try_from(remaining).ok()?,
                reset_in: Duration::from_secs(u64::try_from(reset).ok()?).min(MAX_SPAN),
            })
        })
        .collect()
}

/// A vendor form: `PREFIX-Remaining` with `PREFIX-Reset`.
fn vendor(headers: &HeaderMap, prefix: &str, now: SystemTime) -> Option<Quota> {
    let number = |suffix: &str| -> Option<u64> {
        let name = format!("{prefix}-{suffix}");
        let v = header(headers, &name)?;
        match v.parse::<f64>() {
            Ok(n) if n.is_finite() && n >= 0.0 => Some(n.ceil() as u64),
            _ => {
                tracing::info!(field = name, value = v, "ignoring a malformed field");
                None
            }
        }
    };
    let remaining = number("remaining").or_else(|| {
        // `Used` with `Limit` says as much.
        Some(number("limit")?.saturating_sub(number("used")?))
    })?;
    let reset = number("reset")?;
    let reset_in = if reset > 1_000_000_000 {
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Duration::from_secs(reset.saturating_sub(now))
    } else {
        Duration::from_secs(reset)
    }
    .min(MAX_SPAN);
    Some(Quota {
        remaining,
        reset_in,
    })
}

/// The binding quota a response announces, if it announces one.
pub fn read(headers: &HeaderMap, now: SystemTime) -> Option<Quota> {
    let mut all = draft(headers);
    for prefix in ["x-ratelimit", "x-rate-limit", "ratelimit"] {
        all.extend(vendor(headers, prefix, now));
    }
    // The fewest left binds; with none left, the latest refill.
    all.into_iter()
        .min_by_key(|q| (q.remaining, std::cmp::Reverse(q.reset_in)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::test_headers as headers;

    fn q(remaining: u64, secs: u64) -> Option<Quota> {
        Some(Quota {
            remaining,
            reset_in: Duration::from_secs(secs),
        })
    }

    #[test]
    fn the_draft_fields_are_read_as_structured_fields() {
        let now = SystemTime::now();
        assert_eq!(
            read(&headers(&[("ratelimit", "\"default\";r=5;t=30")]), now),
            q(5, 30)
        );
        // Several policies: the one with the fewest left binds.
        let h = headers(&[("ratelimit", "\"burst\";r=9;t=1, \"day\";r=2;t=3600")]);
        assert_eq!(read(&h, now), q(2, 3600));
        // The window comes from the policy when the limit has no `t`.
        let h = headers(&[
            ("ratelimit-policy", "\"hour\";q=100;w=3600"),
            ("ratelimit", "\"hour\";r=0"),
        ]);
        assert_eq!(read(&h, now), q(0, 3600));
    }

    #[test]
    fn the_vendor_forms_read_epoch_and_delta_resets() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let h = headers(&[
            ("x-ratelimit-remaining", "7"),
            ("x-ratelimit-reset", "1800000042"),
        ]);
        assert_eq!(read(&h, now), q(7, 42));
        let h = headers(&[
            ("X-Rate-Limit-Remaining", "0"),
            ("X-Rate-Limit-Reset", "12"),
        ]);
        assert_eq!(read(&h, now), q(0, 12));
        let h = headers(&[("RateLimit-Remaining", "3"), ("RateLimit-Reset", "60")]);
        assert_eq!(read(&h, now), q(3, 60));
        // Reddit's form, with a fractional count.
        let h = headers(&[
            ("x-ratelimit-used", "10"),
            ("x-ratelimit-remaining", "89.0"),
            ("x-ratelimit-reset", "301"),
        ]);
        assert_eq!(read(&h, now), q(89, 301));
        let h = headers(&[
            ("x-ratelimit-limit", "60"),
            ("x-ratelimit-used", "60"),
            ("x-ratelimit-reset", "5"),
        ]);
        assert_eq!(read(&h, now), q(0, 5));
    }

    #[test]
    fn issue_27_an_absurd_reset_is_capped_before_any_sum() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        for h in [
            headers(&[
                ("x-ratelimit-remaining", "5"),
                ("x-ratelimit-reset", "1e300"),
            ]),
            headers(&[("ratelimit", "\"p\";r=5;t=999999999999999")]),
        ] {
            let q = read(&h, now).unwrap();
            assert_eq!(q.reset_in, MAX_SPAN, "{h:?}");
            let _ = tokio::time::Instant::now() + q.reset_in;
        }
    }

    #[test]
    fn malformed_or_partial_fields_are_ignored() {
        let now = SystemTime::now();
        for h in [
            headers(&[("ratelimit", "r=5;t=\"soon")]),
            headers(&[("ratelimit", "\"x\";t=30")]),
            headers(&[
                ("x-ratelimit-remaining", "lots"),
                ("x-ratelimit-reset", "30"),
            ]),
            headers(&[("x-ratelimit-remaining", "5")]),
            headers(&[("x-ratelimit-remaining", "-3"), ("x-ratelimit-reset", "30")]),
            HeaderMap::new(),
        ] {
            assert_eq!(read(&h, now), None, "{h:?}");
        }
    }
}
