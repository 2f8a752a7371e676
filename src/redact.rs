//! What is never printed: a [`Secret`] (its `Debug` and `Display` are `***`), and the
//! credentials of a URL (`https://user:pass@host/` is echoed as `https://user:***@host/`,
//! a URL with only a user name as `https://***@host/`: such a name is often a token).

use std::borrow::Cow;

use url::Url;

/// What a redacted part of a URL or a secret prints as.
pub const MASK: &str = "***";

/// A secret value (a password, a token, a header carrying a key): readable only through
/// [`Secret::expose`], printed as `***` by `Debug` and `Display`, so no `{:?}` of a
/// structure holding one (a log line, an error, a panic message) can show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(MASK)
    }
}

/// A URL's own credentials (`https://user:pass@host/`), percent-decoded: Basic auth for the
/// URL's origin only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlCredentials {
    /// The user name.
    pub user: String,
    /// The password (`None`: the URL names a user only).
    pub password: Option<Secret>,
}

/// `url` without its credentials, and the credentials it had.
pub fn split_userinfo(url: &Url) -> (Url, Option<UrlCredentials>) {
    if url.username().is_empty() && url.password().is_none() {
        return (url.clone(), None);
    }
    let decode = |s: &str| percent_encoding_decode(s);
    let creds = UrlCredentials {
        user: decode(url.username()),
        password: url.password().map(|p| Secret::new(decode(p))),
    };
    let mut bare = url.clone();
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    (bare, Some(creds))
}

fn percent_encoding_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `url` as it may be printed: its password as `***` (a URL with a user name only: the
/// name as `***`).
pub fn url(url: &Url) -> String {
    if url.username().is_empty() && url.password().is_none() {
        return url.to_string();
    }
    text(url.as_str()).into_owned()
}

/// `s` with the credentials of every `scheme://user:pass@host` in it masked: the one pass
/// every echoed input, message and detail goes through, for text that may not even parse
/// as a URL.
pub fn text(s: &str) -> Cow<'_, str> {
    match authorities(s) {
        Cow::Borrowed(b) => without_slashes(b),
        Cow::Owned(o) => Cow::Owned(without_slashes(&o).into_owned()),
    }
}

/// `s` with every `scheme:user:pass@host…` written without `//` masked after its scheme
/// (`user:S3CR3T@127.0.0.1/feed`, which parses as the scheme `user`, is echoed as
/// `user:***@127.0.0.1/feed`): an input that was meant as a URL with credentials.
fn without_slashes(s: &str) -> Cow<'_, str> {
    if !s.contains('@') {
        return Cow::Borrowed(s);
    }
    let is_delimiter = |c: char| c.is_whitespace() || matches!(c, '"' | '`' | '<' | '>' | '\'');
    let mut out = String::with_capacity(s.len());
    let mut changed = false;
    let mut rest = s;
    while !rest.is_empty() {
        let end = rest.find(is_delimiter).unwrap_or(rest.len());
        let token = &rest[..end];
        match masked_token(token) {
            Some(masked) => {
                out.push_str(&masked);
                changed = true;
            }
            None => out.push_str(token),
        }
        let delimiter_len = rest[end..].chars().next().map_or(0, char::len_utf8);
        out.push_str(&rest[end..end + delimiter_len]);
        rest = &rest[end + delimiter_len..];
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// `token` masked when it is `scheme:userinfo@rest` with no `/` before the `@`.
fn masked_token(token: &str) -> Option<String> {
    let colon = token.find(':')?;
    let scheme = &token[..colon];
    let scheme_like = scheme.len() <= 32
        && scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'));
    let after = &token[colon + 1..];
    if !scheme_like || after.starts_with("//") {
        return None;
    }
    let before_path = &after[..after.find('/').unwrap_or(after.len())];
    let at = before_path.rfind('@')?;
    if &before_path[..at] == MASK {
        return None;
    }
    Some(format!("{scheme}:{MASK}{}", &after[at..]))
}

/// The `scheme://user:pass@host` pass of [`text`].
fn authorities(s: &str) -> Cow<'_, str> {
    if !s.contains("://") || !s.contains('@') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let start = at + 3;
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        // The authority ends where a path, query, fragment or the surrounding text begins.
        let end = after
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '\\' | '"' | '<' | '>' | '`') || c.is_whitespace()
            })
            .unwrap_or(after.len());
        let authority = &after[..end];
        match authority.rfind('@') {
            Some(userinfo_end) => {
                let userinfo = &authority[..userinfo_end];
                match userinfo.find(':') {
                    Some(colon) => {
                        out.push_str(&userinfo[..colon]);
                        out.push(':');
                        out.push_str(MASK);
                    }
                    None => out.push_str(MASK),
                }
                out.push_str(&authority[userinfo_end..]);
                changed = true;
            }
            None => out.push_str(authority),
        }
        rest = &after[end..];
    }
    if !changed {
        return Cow::Borrowed(s);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_url_is_echoed_with_its_password_masked() {
        let u = Url::parse("https://alice:s3cr%40t@feeds.example.com/feed?x=1").unwrap();
        assert_eq!(url(&u), "https://alice:***@feeds.example.com/feed?x=1");
        let (bare, creds) = split_userinfo(&u);
        assert_eq!(bare.as_str(), "https://feeds.example.com/feed?x=1");
        let creds = creds.unwrap();
        assert_eq!(creds.user, "alice");
        assert_eq!(creds.password.unwrap().expose(), "s3cr@t");
        let token = Url::parse("https://ghp_TOKEN@example.com/").unwrap();
        assert_eq!(url(&token), "https://***@example.com/");
        assert_eq!(
            text("failed: https://u:p@a.example/x and http://v:q@b.example"),
            "failed: https://u:***@a.example/x and http://v:***@b.example"
        );
        assert_eq!(
            text("no credentials in https://a.example/@x"),
            "no credentials in https://a.example/@x"
        );
        // Meant as a URL with credentials, written without `//`.
        assert_eq!(
            text("invalid URL \"user:S3CR3T@127.0.0.1:9/feed\": the scheme"),
            "invalid URL \"user:***@127.0.0.1:9/feed\": the scheme"
        );
        assert_eq!(text("user:S3CR3T@h/x"), "user:***@h/x");
        assert_eq!(
            text("at 12:30@home, joe@example.com"),
            "at 12:30@home, joe@example.com"
        );
        assert_eq!(text("see a:b/c@d"), "see a:b/c@d");
    }

    #[test]
    fn a_secret_prints_as_three_stars_however_it_is_formatted() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
        assert_eq!(s.expose(), "hunter2");
    }

    /// A password unlikely to occur anywhere else in a generated URL.
    fn password() -> impl Strategy<Value = String> {
        "PW[A-Za-z0-9!$&'()*+,;=._~%:-]{6,20}"
    }

    proptest! {
        #![proptest_config(ProptestConfig { rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift, ..ProptestConfig::default() })]

        #[test]
        fn no_password_survives_redaction(
            scheme in "(http|https|redis|ftp)",
            user in "[a-z0-9._~-]{0,8}",
            pass in password(),
            host in "[a-z]{1,8}(\\.[a-z]{2,5}){0,2}",
            port in proptest::option::of(1u16..),
            path in "(/[A-Za-z0-9@:._~%-]{0,10}){0,3}",
            prefix in "[ -~]{0,12}",
        ) {
            let port = port.map(|p| format!(":{p}")).unwrap_or_default();
            let raw = format!("{scheme}://{user}:{pass}@{host}{port}{path}");
            let masked = text(&raw).into_owned();
            prop_assert!(!masked.contains(&pass), "{masked}");
            prop_assert!(masked.contains(MASK));
            let in_prose = format!("{prefix} {raw} (HTTP 401)");
            let masked = text(&in_prose).into_owned();
            prop_assert!(!masked.contains(&pass), "{masked}");
            if let Ok(u) = Url::parse(&raw) {
                let shown = url(&u);
                prop_assert!(!shown.contains(&pass), "{shown}");
                let (bare, _) = split_userinfo(&u);
                prop_assert!(bare.password().is_none() && bare.username().is_empty());
            }
        }

        #[test]
        fn a_secret_never_formats_as_itself(value in ".{1,40}") {
            let s = Secret::new(value.clone());
            prop_assert_eq!(format!("{s:?}"), MASK);
            prop_assert_eq!(format!("{s}"), MASK);
            prop_assert_eq!(s.expose(), value.as_str());
        }
    }
}
