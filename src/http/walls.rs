//! Answers that are not the document asked for: a server asking for credentials
//! (`AUTH_REQUIRED`: its `WWW-Authenticate` scheme and realm) and a bot wall (`BLOCKED`: a
//! challenge header, or an HTML page with `403`/`429`/`503` where a feed or an article
//! was expected, and who put it up when the response says).

use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap};

/// The longest realm or scheme kept from a header.
const MAX_WORD: usize = 200;

/// Whether the response asks for credentials: a `401`, or a `403` that says how to give
/// them.
pub(super) fn wants_credentials(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::UNAUTHORIZED
        || (status == StatusCode::FORBIDDEN && headers.contains_key(header::WWW_AUTHENTICATE))
}

/// The first challenge of `WWW-Authenticate`: its scheme and its realm, if it names one.
pub(super) fn challenge(headers: &HeaderMap) -> (Option<String>, Option<String>) {
    let Some(value) = headers
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
    else {
        return (None, None);
    };
    let (scheme, params) = value.split_once(' ').unwrap_or((value, ""));
    let scheme = scheme.trim_end_matches(',');
    let scheme = (!scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
    .then(|| scheme.chars().take(MAX_WORD).collect::<String>());
    (scheme, realm(params))
}

/// The `realm` parameter of a challenge (quoted or a token).
fn realm(params: &str) -> Option<String> {
    let lower = params.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find("realm") {
        let at = from + i;
        from = at + 5;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',' | b'\t');
        let rest = params[at + 5..].trim_start();
        let Some(rest) = rest.strip_prefix('=').filter(|_| before_ok) else {
            continue;
        };
        let rest = rest.trim_start();
        let value: String = if let Some(q) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = q.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => out.extend(chars.next()),
                    c => out.push(c),
                }
            }
            out
        } else {
            rest.split([',', ' ']).next().unwrap_or("").to_owned()
        };
        let value: String = value
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_WORD)
            .collect();
        return (!value.is_empty()).then_some(value);
    }
    None
}

fn header_has(headers: &HeaderMap, name: &str, needle: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains(needle))
}

/// Whether the response says outright that it is a challenge (`cf-mitigated: challenge`,
/// `x-vercel-mitigated: challenge`), whatever its status.
pub(super) fn is_challenge(headers: &HeaderMap) -> bool {
    header_has(headers, "cf-mitigated", "challenge")
        || header_has(headers, "x-vercel-mitigated", "challenge")
}

/// Whether a status with an HTML body is a wall where a document was expected.
pub(super) fn walls_with(status: StatusCode) -> bool {
    matches!(status.as_u16(), 403 | 429 | 503)
}

/// Who put the wall up, when the response names them.
pub(super) fn provider(headers: &HeaderMap) -> Option<&'static str> {
    let server = |s: &str| header_has(headers, "server", s);
    let cookie = |s: &str| header_has(headers, "set-cookie", s);
    let has = |name: &str| headers.contains_key(name);
    if has("cf-mitigated") || has("cf-ray") || server("cloudflare") {
        Some("cloudflare")
    } else if has("x-vercel-mitigated") || server("vercel") {
        Some("vercel")
    } else if has("x-datadome") || server("datadome") || cookie("datadome=") {
        Some("datadome")
    } else if has("x-sucuri-id") || server("sucuri") {
        Some("sucuri")
    } else if server("akamaighost") || has("akamai-grn") {
        Some("akamai")
    } else if has("x-iinfo") || cookie("incap_ses") || cookie("visid_incap") {
        Some("imperva")
    } else if server("ddos-guard") {
        Some("ddos-guard")
    } else if has("x-amzn-waf-action") {
        Some("aws-waf")
    } else if cookie("_px") || has("x-px-block") {
        Some("perimeterx")
    } else {
        None
    }
}

/// Whether a body is an HTML page: by its `Content-Type`, or, when that says nothing
/// useful, by its first bytes.
pub(super) fn looks_html(content_type: Option<&str>, first: &[u8]) -> bool {
    let mime = content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => return true,
        "" | "text/plain" | "application/octet-stream" => {}
        _ => return false,
    }
    let head = &first[..first.len().min(1024)];
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let text = text.trim_start_matches('\u{feff}').trim_start();
    text.starts_with("<!doctype html")
        || text.starts_with("<html")
        || text.contains("<head")
        || text.contains("<body")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::test_headers;

    #[test]
    fn a_challenge_gives_its_scheme_and_realm() {
        let h = test_headers(&[(
            "www-authenticate",
            "Basic realm=\"Private \\\"feeds\\\"\", charset=\"UTF-8\"",
        )]);
        assert_eq!(
            challenge(&h),
            (Some("Basic".into()), Some("Private \"feeds\"".into()))
        );
        let h = test_headers(&[(
            "www-authenticate",
            "Bearer error=\"invalid_token\", realm=api",
        )]);
        assert_eq!(challenge(&h), (Some("Bearer".into()), Some("api".into())));
        assert_eq!(challenge(&HeaderMap::new()), (None, None));
        assert!(wants_credentials(
            StatusCode::UNAUTHORIZED,
            &HeaderMap::new()
        ));
        assert!(!wants_credentials(StatusCode::FORBIDDEN, &HeaderMap::new()));
    }

    #[test]
    fn walls_are_told_by_their_headers_and_their_html() {
        let cf = test_headers(&[("cf-mitigated", "challenge"), ("server", "cloudflare")]);
        assert!(is_challenge(&cf));
        assert_eq!(provider(&cf), Some("cloudflare"));
        assert_eq!(
            provider(&test_headers(&[("x-datadome", "protected")])),
            Some("datadome")
        );
        assert_eq!(provider(&HeaderMap::new()), None);
        assert!(looks_html(Some("text/html; charset=utf-8"), b""));
        assert!(looks_html(
            None,
            b"\n  <!DOCTYPE html><title>Just a moment...</title>"
        ));
        assert!(!looks_html(Some("application/rss+xml"), b"<html>"));
        assert!(!looks_html(None, b"<?xml version=\"1.0\"?><rss/>"));
        assert!(walls_with(StatusCode::TOO_MANY_REQUESTS) && !walls_with(StatusCode::NOT_FOUND));
    }
}
