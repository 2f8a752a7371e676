//! A `[[site]]` rule as checked: what it matches, how specific that is, and what it sets.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use url::Url;

use super::secret::SecretSlot;
use crate::config::KeyMode;

/// What a rule matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Matcher {
    /// URLs starting with this (a parsed http(s) URL, so scheme and host are normalised
    /// and the path has at least `/`: `https://example.com` never matches
    /// `https://example.com.evil.org/`).
    UrlPrefix(String),
    /// This host (lowercased, no trailing dot), on this port only when one is given.
    Host {
        /// The host name or address.
        host: String,
        /// The port, if the rule names one.
        port: Option<u16>,
    },
    /// This domain and every subdomain of it.
    Site(String),
}

/// Whether `url` starts with `prefix` at a boundary: a prefix that ends a path segment, a
/// query or a parameter (`/`, `?`, `&`, `=`) matches whatever follows; any other must be
/// followed by the end, `/`, `?` or `#` (`…/private` is `…/private/x`, never
/// `…/private-evil/`).
fn prefix_matches(prefix: &str, url: &str) -> bool {
    let Some(rest) = url.strip_prefix(prefix) else {
        return false;
    };
    prefix.ends_with(['/', '?', '&', '=']) || rest.is_empty() || rest.starts_with(['/', '?', '#'])
}

impl Matcher {
    /// Whether `url` (its credentials set aside) is one this rule is for.
    pub fn matches(&self, url: &Url) -> bool {
        let host = || {
            url.host_str()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
        };
        match self {
            Matcher::UrlPrefix(prefix) => {
                if url.username().is_empty() && url.password().is_none() {
                    prefix_matches(prefix, url.as_str())
                } else {
                    prefix_matches(prefix, crate::redact::split_userinfo(url).0.as_str())
                }
            }
            Matcher::Host { host: h, port } => {
                host().is_some_and(|u| u == *h)
                    && port.is_none_or(|p| url.port_or_known_default() == Some(p))
            }
            Matcher::Site(site) => host().is_some_and(|u| {
                u == *site
                    || (u.len() > site.len()
                        && u.ends_with(site.as_str())
                        && u.as_bytes()[u.len() - site.len() - 1] == b'.')
            }),
        }
    }

    /// How specific the match is: a URL prefix over a host over a site; then the longer
    /// prefix, a host with its port, the longer domain. The greatest wins.
    pub fn rank(&self) -> (u8, usize) {
        match self {
            Matcher::UrlPrefix(p) => (3, p.len()),
            Matcher::Host { port, .. } => (2, usize::from(port.is_some())),
            Matcher::Site(s) => (1, s.len()),
        }
    }

    /// The matcher as written in the file (`host = "example.com"`).
    pub fn describe(&self) -> String {
        match self {
            Matcher::UrlPrefix(p) => format!("url_prefix = {p:?}"),
            Matcher::Host { host, port: None } => format!("host = {host:?}"),
            Matcher::Host {
                host,
                port: Some(p),
            } => format!("host = \"{host}:{p}\""),
            Matcher::Site(s) => format!("site = {s:?}"),
        }
    }

    /// `url_prefix`, `host` or `site`.
    pub fn kind(&self) -> &'static str {
        match self {
            Matcher::UrlPrefix(_) => "url_prefix",
            Matcher::Host { .. } => "host",
            Matcher::Site(_) => "site",
        }
    }

    /// The value as written, normalised.
    pub fn value(&self) -> String {
        match self {
            Matcher::UrlPrefix(p) | Matcher::Site(p) => p.clone(),
            Matcher::Host { host, port: None } => host.clone(),
            Matcher::Host {
                host,
                port: Some(p),
            } => format!("{host}:{p}"),
        }
    }
}

/// A configured header's value.
#[derive(Debug, Clone)]
pub enum HeaderSource {
    /// Sent as written.
    Plain(HeaderValue),
    /// A secret, sent marked sensitive.
    Secret(SecretSlot),
}

/// One configured header.
#[derive(Debug, Clone)]
pub struct RuleHeader {
    /// Its name.
    pub name: HeaderName,
    /// Its value.
    pub value: HeaderSource,
}

/// A rule's credentials.
#[derive(Debug, Clone)]
pub enum Auth {
    /// HTTP Basic.
    Basic {
        /// The user name.
        user: String,
        /// The password.
        password: SecretSlot,
    },
    /// `Authorization: Bearer …`.
    Bearer(SecretSlot),
}

/// Where a rule's requests go.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProxyChoice {
    /// Straight to the origin, whatever the environment's proxies say (`"none"`).
    Direct,
    /// Through this proxy.
    Via(Url),
}

/// One checked `[[site]]` rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its place among the file's rules, from 1.
    pub index: usize,
    /// The line its table starts on.
    pub line: usize,
    /// What it matches.
    pub matcher: Matcher,
    /// Headers sent to the URLs it matches.
    pub headers: Vec<RuleHeader>,
    /// Credentials sent to the URLs it matches.
    pub auth: Option<Auth>,
    /// The User-Agent for them.
    pub user_agent: Option<String>,
    /// Their proxy.
    pub proxy: Option<ProxyChoice>,
    /// What the gate keys them on.
    pub host_key: Option<KeyMode>,
    /// Requests in flight to the host at once.
    pub host_concurrency: Option<usize>,
    /// The least time between two requests' starts to the host.
    pub min_interval: Option<Duration>,
    /// Whether pages read from them honour robots.txt.
    pub respect_robots: Option<bool>,
    /// The longest their server's freshness is trusted.
    pub max_freshness: Option<Duration>,
}

impl Rule {
    /// The rule as people name it: `rule 2 (host = "example.com", line 14)`.
    pub fn describe(&self) -> String {
        format!(
            "config rule {} ({}, line {})",
            self.index,
            self.matcher.describe(),
            self.line
        )
    }

    /// Every secret the rule names, each with where it comes from.
    pub fn secrets(&self) -> impl Iterator<Item = &SecretSlot> {
        let auth = self.auth.iter().map(|a| match a {
            Auth::Basic { password, .. } => password,
            Auth::Bearer(s) => s,
        });
        let headers = self.headers.iter().filter_map(|h| match &h.value {
            HeaderSource::Secret(s) => Some(s),
            HeaderSource::Plain(_) => None,
        });
        auth.chain(headers)
    }

    /// What keeps the rule from being used: each secret that could not be read.
    pub fn problems(&self) -> Vec<String> {
        self.secrets()
            .filter_map(|s| s.value.as_ref().err().map(ToString::to_string))
            .collect()
    }

    /// Whether the rule sends credentials (auth, or a header holding a secret).
    pub fn carries_credentials(&self) -> bool {
        self.secrets().next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn each_matcher_keeps_to_its_own_scope() {
        let prefix = Matcher::UrlPrefix("https://example.com/private/".into());
        assert!(prefix.matches(&url("https://example.com/private/feed")));
        assert!(prefix.matches(&url("https://u:p@example.com/private/feed")));
        assert!(!prefix.matches(&url("https://example.com/public/feed")));
        assert!(!prefix.matches(&url("http://example.com/private/feed")));
        assert!(!prefix.matches(&url("https://example.com.evil.org/private/")));
        // Without a closing slash, a prefix still ends at a path segment's boundary.
        let bare = Matcher::UrlPrefix("https://example.com/private".into());
        assert!(bare.matches(&url("https://example.com/private")));
        assert!(bare.matches(&url("https://example.com/private/feed")));
        assert!(bare.matches(&url("https://example.com/private?x=1")));
        assert!(!bare.matches(&url("https://example.com/private-evil/feed")));
        assert!(!bare.matches(&url("https://example.com/privateer.xml")));
        let query = Matcher::UrlPrefix("https://example.com/feed?list=".into());
        assert!(query.matches(&url("https://example.com/feed?list=7")));
        let host = Matcher::Host {
            host: "example.com".into(),
            port: None,
        };
        assert!(host.matches(&url("http://EXAMPLE.com./x")));
        assert!(host.matches(&url("https://example.com:8443/x")));
        assert!(!host.matches(&url("https://a.example.com/x")));
        let port = Matcher::Host {
            host: "example.com".into(),
            port: Some(8443),
        };
        assert!(port.matches(&url("https://example.com:8443/x")));
        assert!(!port.matches(&url("https://example.com/x")));
        let site = Matcher::Site("example.com".into());
        assert!(site.matches(&url("https://example.com/")));
        assert!(site.matches(&url("https://a.b.example.com/")));
        assert!(!site.matches(&url("https://notexample.com/")));
        assert!(!site.matches(&url("https://example.com.evil.org/")));
        assert!(prefix.rank() > host.rank() && port.rank() > host.rank());
        assert!(host.rank() > site.rank());
    }
}
