//! The one error type, its stable codes, details and exit codes.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::model::ErrorObject;

mod code;
mod store;

pub use code::{ErrorCode, NetworkKind, exit};
pub use store::StoreError;

/// A boxed error source for failures that come from several libraries (XML, JSON).
pub type BoxSource = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Every failure `rss` reports.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad flags, arguments or environment.
    #[error("{message}")]
    Usage {
        /// What was wrong and how to fix it.
        message: String,
    },
    /// The config file does not parse, names an unknown key, or holds a bad value.
    #[error("{path}{}: {message}", at(*line, *column))]
    ConfigFile {
        /// The file.
        path: String,
        /// The line of the problem, from 1.
        line: Option<usize>,
        /// Its column, from 1.
        column: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// The origin wants credentials (`401`, or `403` with `WWW-Authenticate`).
    #[error("{url} asks for credentials (HTTP {status}{}): {}", challenge_words(scheme.as_deref(), realm.as_deref()), auth_hint(rule.as_deref()))]
    AuthRequired {
        /// The URL that asked.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The scheme it asked for (`Basic`, `Bearer`), if it said.
        scheme: Option<String>,
        /// The realm it named, if any.
        realm: Option<String>,
        /// The config rule whose credentials were sent and refused, if one was.
        rule: Option<String>,
    },
    /// A bot wall: a challenge page where a feed or an article was expected.
    #[error("{url} answered with a bot-wall page (HTTP {status}{}) instead of the document: rss does not solve challenges; ask the site for access, or read it another way", provider.as_deref().map(|p| format!(", {p}")).unwrap_or_default())]
    Blocked {
        /// The URL that answered.
        url: String,
        /// Its status.
        status: u16,
        /// Who put the wall up (`cloudflare`, …), when the response names it.
        provider: Option<String>,
    },
    /// An input that is not a usable URL or path.
    #[error("invalid URL {input:?}: {reason}")]
    InvalidUrl {
        /// The input as given.
        input: String,
        /// Why it was rejected.
        reason: String,
        /// The parser's error, when parsing failed.
        #[source]
        source: Option<url::ParseError>,
    },
    /// The HTTP stack failed.
    #[error("network error ({}) fetching {url}: {}", kind.as_str(), root_cause(source))]
    Network {
        /// The classified kind.
        kind: NetworkKind,
        /// The URL being fetched.
        url: String,
        /// The HTTP stack's error.
        #[source]
        source: reqwest::Error,
    },
    /// Redirects did not end.
    #[error("{message}")]
    Redirect {
        /// The chain that was followed.
        message: String,
        /// Hops followed.
        hops: usize,
    },
    /// The origin answered with an error status.
    #[error("HTTP {status} from {url}")]
    HttpStatus {
        /// The status code.
        status: u16,
        /// The URL that answered.
        url: String,
    },
    /// The origin refused (429) or the gate would wait too long.
    #[error("{}", rate_limited_message(*wait, *http_status))]
    RateLimited {
        /// How long the gate has learned to leave the host alone.
        wait: Duration,
        /// The origin's status, when the origin refused.
        http_status: Option<u16>,
        /// The raw Retry-After header, when the origin sent one.
        retry_after: Option<String>,
        /// The host key.
        host: String,
    },
    /// The body could not be read as a feed.
    #[error("{message}")]
    Parse {
        /// What was wrong.
        message: String,
        /// The parser's error, when there was one.
        #[source]
        source: Option<BoxSource>,
    },
    /// A body (or a local file, or standard input) larger than the cap.
    #[error("{what} exceeds the {limit}-byte limit")]
    TooLarge {
        /// What was being read.
        what: String,
        /// The cap in bytes.
        limit: u64,
    },
    /// An MCP result larger than its token budget.
    #[error(
        "the result would be about {estimated_tokens} tokens, over the budget of {budget_tokens}"
    )]
    OverBudget {
        /// Estimated tokens of the full result.
        estimated_tokens: usize,
        /// The budget.
        budget_tokens: usize,
        /// A `limit` that, given alone, makes the result fit (`None`: none does).
        suggested_limit: Option<usize>,
        /// A `max_content_chars` that, given alone, makes the result fit (`None`: none does).
        suggested_max_content_chars: Option<usize>,
        /// A `max_response_tokens` that fits the result as it is (`None`: none within the
        /// server's cap).
        suggested_max_response_tokens: Option<usize>,
    },
    /// An HTML page where a feed was expected.
    #[error("this is an HTML page, not a feed")]
    HtmlPage {
        /// The content type it was served as, if it said.
        content_type: Option<String>,
    },
    /// The page serves a feed, not an article.
    #[error("{url} serves a feed ({format}), not an article")]
    NotAnArticle {
        /// The page.
        url: String,
        /// rss, rdf, atom or json.
        format: String,
    },
    /// The page is not HTML.
    #[error("{url} serves {content_type}, not a web page")]
    UnsupportedContent {
        /// The page.
        url: String,
        /// What it serves (from the header, or from its first bytes).
        content_type: String,
    },
    /// The page has no readable article.
    #[error("{url} has no readable article{}", title.as_deref().map(|t| format!(" (the page is titled {t:?})")).unwrap_or_default())]
    NoReadableContent {
        /// The page.
        url: String,
        /// The page's title, if it has one.
        title: Option<String>,
    },
    /// Reading the page as an article was cut: by the page's own budget, or by the call's
    /// deadline while it was being extracted.
    #[error("{url} {}", match cut_by { ExtractionCut::Budget => format!("took more than the CPU time a page may take to read as an article (cut after {} ms)", elapsed.as_millis()), ExtractionCut::Call => format!("was still being read as an article when the call's time ran out (after {} ms)", elapsed.as_millis()), ExtractionCut::Queue => format!("was still waiting behind the call's other pages being read when the call's time ran out (after {} ms)", elapsed.as_millis()) })]
    ExtractionTimeout {
        /// The page.
        url: String,
        /// What cut it.
        cut_by: ExtractionCut,
        /// How long it had been read (for `Budget`, the CPU time it spent).
        elapsed: std::time::Duration,
    },
    /// The site's robots.txt disallows the page for us.
    #[error("{robots_url} disallows {url} for us ({reason})")]
    RobotsDisallowed {
        /// The page.
        url: String,
        /// The robots.txt consulted.
        robots_url: String,
        /// The rule that matched (`Disallow: /private`), if one did.
        rule: Option<String>,
        /// Why: the rule, or that robots.txt could not be read.
        reason: String,
    },
    /// A local file operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory it was done to (`details.path`).
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The MCP HTTP server could not listen on its address.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The requested item does not exist.
    #[error("no item of {feed_url} has the id, guid or URL {key:?}")]
    NotFound {
        /// The feed searched.
        feed_url: String,
        /// What was looked for.
        key: String,
    },
    /// A request to a loopback, private or other non-public address, refused.
    #[error("refused {input:?}: {reason}")]
    PrivateNetwork {
        /// The URL as given.
        input: String,
        /// Which address, and what kind.
        reason: String,
    },
    /// Another process kept a host's shared send slot busy past this call's limit (a
    /// stopped process, say).
    #[error(
        "another rss process has kept the send slot of {host} busy for {} s without letting go (is it stopped?)",
        waited.as_secs()
    )]
    SlotHeld {
        /// The host key.
        host: String,
        /// How long this call waited for it.
        waited: Duration,
    },
    /// The shared host-state store failed (`rss hosts`).
    #[error("host state: {0}")]
    HostStore(#[source] StoreError),
    /// The store of readers' delivery marks failed.
    #[error("reader state: {0}")]
    ReaderStore(#[source] StoreError),
    /// A delivery token was refused: nothing was recorded.
    #[error("{message}")]
    TokenRefused {
        /// Why, in one word: `not_a_token`, `altered`, `expired`, `unknown`, `other_client`.
        reason: &'static str,
        /// What happened and what to do.
        message: String,
    },
    /// A signal stopped the run.
    #[error("stopped by {signal} before the run finished")]
    Interrupted {
        /// `SIGINT` or `SIGTERM`.
        signal: &'static str,
    },
    /// The HTTP client could not be built (its TLS set-up failed).
    #[error("cannot build the HTTP client: {0}")]
    ClientSetup(#[source] reqwest::Error),
    /// A bug, or a failure of the machinery itself (a worker thread, the runtime).
    #[error("internal error: {message}{}", cause_suffix(source.as_deref()))]
    Internal {
        /// What went wrong.
        message: String,
        /// The typed cause, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

/// `":LINE:COLUMN"`, as far as known.
fn at(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

/// `", Basic realm \"x\""`: what the server asked for, if it said.
fn challenge_words(scheme: Option<&str>, realm: Option<&str>) -> String {
    match (scheme, realm) {
        (Some(s), Some(r)) => format!(", {s} realm {:?}", echo(r)),
        (Some(s), None) => format!(", {s}"),
        (None, Some(r)) => format!(", realm {:?}", echo(r)),
        (None, None) => String::new(),
    }
}

/// What to do about an `AUTH_REQUIRED`.
fn auth_hint(rule: Option<&str>) -> String {
    match rule {
        Some(r) => format!("the credentials of {r} were refused; check them (rss config check)"),
        None => {
            "add a [[site]] rule with auth for it to the config file (rss config path)".to_owned()
        }
    }
}

/// `": cause"` for a cause, or nothing.
fn cause_suffix(source: Option<&(dyn std::error::Error + Send + Sync)>) -> String {
    source.map(|s| format!(": {s}")).unwrap_or_default()
}

/// The innermost cause of an error chain: the part that says what really happened.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last: &dyn std::error::Error = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

fn rate_limited_message(wait: Duration, http_status: Option<u16>) -> String {
    let secs = wait.as_secs_f64().ceil() as u64;
    match http_status {
        Some(status) => format!("the host refused with HTTP {status}; retry in about {secs} s"),
        None => format!("the host is cooling down; retry in about {secs} s"),
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A usage error with this message.
    pub fn usage(message: impl Into<String>) -> Self {
        Error::Usage {
            message: message.into(),
        }
    }

    /// A parse error with no underlying source.
    pub fn parse(message: impl Into<String>) -> Self {
        Error::Parse {
            message: message.into(),
            source: None,
        }
    }

    /// An internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal {
            message: message.into(),
            source: None,
        }
    }

    /// An internal error while `doing`, caused by `source` (kept typed).
    pub fn internal_from(
        doing: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Internal {
            message: doing.into(),
            source: Some(Box::new(source)),
        }
    }

    /// An I/O error on `path`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Usage { .. } | Error::ConfigFile { .. } | Error::TokenRefused { .. } => {
                ErrorCode::Usage
            }
            Error::AuthRequired { .. } => ErrorCode::AuthRequired,
            Error::Blocked { .. } => ErrorCode::Blocked,
            Error::InvalidUrl { .. } | Error::PrivateNetwork { .. } => ErrorCode::InvalidUrl,
            Error::Network { .. } | Error::Redirect { .. } | Error::SlotHeld { .. } => {
                ErrorCode::Network
            }
            Error::HttpStatus { .. } => ErrorCode::FeedFetchFailed,
            Error::RateLimited { .. } => ErrorCode::RateLimited,
            Error::Parse { .. } | Error::HtmlPage { .. } => ErrorCode::FeedParseFailed,
            Error::TooLarge { .. } | Error::OverBudget { .. } => ErrorCode::ResponseTooLarge,
            Error::Io { .. }
            | Error::Listen { .. }
            | Error::HostStore(_)
            | Error::ReaderStore(_) => ErrorCode::Io,
            Error::NotFound { .. } => ErrorCode::NotFound,
            Error::NotAnArticle { .. } => ErrorCode::NotAnArticle,
            Error::UnsupportedContent { .. } => ErrorCode::UnsupportedContent,
            Error::NoReadableContent { .. } => ErrorCode::NoReadableContent,
            Error::ExtractionTimeout { .. } => ErrorCode::ExtractionTimeout,
            Error::RobotsDisallowed { .. } => ErrorCode::RobotsDisallowed,
            Error::Interrupted { .. } => ErrorCode::Interrupted,
            Error::Internal { .. } | Error::ClientSetup(_) => ErrorCode::Internal,
        }
    }

    /// Machine-readable specifics of this error.
    pub fn details(&self) -> Map<String, Value> {
        let value = match self {
            Error::InvalidUrl { input, .. } => json!({ "input": input }),
            Error::ConfigFile {
                path, line, column, ..
            } => json!({ "path": path, "line": line, "column": column }),
            Error::AuthRequired {
                url,
                status,
                scheme,
                realm,
                rule,
            } => json!({
                "url": url,
                "http_status": status,
                "scheme": scheme,
                "realm": realm,
                "rule": rule,
                "hint": auth_hint(rule.as_deref()),
            }),
            Error::Blocked {
                url,
                status,
                provider,
            } => json!({ "url": url, "http_status": status, "provider": provider }),
            Error::PrivateNetwork { input, .. } => {
                json!({ "input": input, "private_network": true })
            }
            Error::HtmlPage { content_type } => json!({
                "content_type": content_type.as_deref().unwrap_or("text/html"),
            }),
            Error::NotFound { feed_url, key } => json!({ "feed_url": feed_url, "id": key }),
            Error::Network { kind, url, .. } => json!({ "kind": kind.as_str(), "url": url }),
            Error::Redirect { hops, .. } => json!({ "kind": "redirect", "hops": hops }),
            Error::SlotHeld { host, waited } => json!({
                "kind": "timeout",
                "host": host,
                "waited_ms": waited.as_millis() as u64,
            }),
            Error::HttpStatus { status, url } => json!({ "http_status": status, "url": url }),
            Error::RateLimited {
                wait,
                http_status,
                retry_after,
                host,
            } => json!({
                "retry_after_seconds": wait.as_secs_f64().ceil() as u64,
                "retry_after_ms": wait.as_nanos().div_ceil(1_000_000) as u64,
                "http_status": http_status,
                "retry_after": retry_after,
                "host": host,
            }),
            Error::TooLarge { limit, .. } => json!({ "limit_bytes": limit }),
            Error::NotAnArticle { format, .. } => json!({ "format": format }),
            Error::UnsupportedContent { content_type, .. } => {
                json!({ "content_type": content_type })
            }
            Error::NoReadableContent { title, .. } => {
                json!({ "title": title, "readerable": false })
            }
            Error::ExtractionTimeout {
                url,
                cut_by,
                elapsed,
            } => json!({
                "url": url,
                "cut_by": cut_by.as_str(),
                "elapsed_ms": elapsed.as_millis() as u64,
            }),
            Error::RobotsDisallowed {
                robots_url, rule, ..
            } => json!({ "robots_url": robots_url, "rule": rule }),
            Error::OverBudget {
                estimated_tokens,
                budget_tokens,
                suggested_limit,
                suggested_max_content_chars,
                suggested_max_response_tokens,
            } => json!({
                "estimated_tokens": estimated_tokens,
                "budget_tokens": budget_tokens,
                "suggested_limit": suggested_limit,
                "suggested_max_content_chars": suggested_max_content_chars,
                "suggested_max_response_tokens": suggested_max_response_tokens,
            }),
            Error::Io { path, source, .. } => json!({
                "path": path.display().to_string(),
                "os_error": source.kind().to_string(),
            }),
            Error::Listen { addr, source } => json!({
                "address": addr.to_string(),
                "os_error": source.kind().to_string(),
            }),
            Error::Usage { .. }
            | Error::Parse { .. }
            | Error::Internal { .. }
            | Error::ClientSetup(_)
            | Error::HostStore(_)
            | Error::ReaderStore(_) => json!({}),
            Error::TokenRefused { reason, .. } => json!({ "reason": reason }),
            Error::Interrupted { signal } => json!({ "signal": signal }),
        };
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    /// This error as a page's error object (`rss article`): named by its `url`, and an
    /// HTTP error status is a page's (`PAGE_FETCH_FAILED`), not a feed's.
    pub fn to_page_object(&self, url: Option<&str>) -> crate::model::PageError {
        let mut obj: crate::model::PageError = self.to_object(url).into();
        if self.code() == ErrorCode::FeedFetchFailed {
            obj.code = ErrorCode::PageFetchFailed.as_str().to_owned();
        }
        obj
    }

    /// This error as the contract's error object; every echoed input is cut to
    /// [`ECHO_MAX_CHARS`] (a 10 MB URL never comes back three times).
    pub fn to_object(&self, feed_url: Option<&str>) -> ErrorObject {
        let mut details = self.details();
        for v in details.values_mut() {
            if let Value::String(s) = v {
                if let std::borrow::Cow::Owned(masked) = crate::redact::text(s) {
                    *s = masked;
                }
                if s.len() > ECHO_MAX_CHARS {
                    *s = echo(s);
                }
            }
        }
        let message = crate::redact::text(&self.to_string()).into_owned();
        ErrorObject {
            feed_url: feed_url.map(|u| echo(&crate::redact::text(u))),
            code: self.code().as_str().to_owned(),
            message: if message.len() > 4 * ECHO_MAX_CHARS {
                clip(&message, 4 * ECHO_MAX_CHARS)
            } else {
                message
            },
            details,
        }
    }
}

/// The longest input echoed back in an error or a result, in characters.
pub const ECHO_MAX_CHARS: usize = 256;

/// What cut an article's extraction (`details.cut_by` of `EXTRACTION_TIMEOUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractionCut {
    /// The page used up the time one page may take (`"budget"`): it is too heavy to read.
    Budget,
    /// The call's deadline came while the page was being extracted (`"call"`).
    Call,
    /// The call's deadline came while the page waited for a place among its call's other
    /// pages being read (`"queue"`).
    Queue,
}

impl ExtractionCut {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractionCut::Budget => "budget",
            ExtractionCut::Call => "call",
            ExtractionCut::Queue => "queue",
        }
    }
}

/// `s` as echoed back: cut to [`ECHO_MAX_CHARS`] characters, saying how much was cut.
pub fn echo(s: &str) -> String {
    clip(s, ECHO_MAX_CHARS)
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_owned(),
        Some((at, _)) => format!(
            "{}… ({} more characters)",
            &s[..at],
            s[at..].chars().count()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limited_details_carry_both_wait_forms() {
        let err = Error::RateLimited {
            wait: Duration::from_millis(2500),
            http_status: Some(429),
            retry_after: Some("3".into()),
            host: "example.com:443".into(),
        };
        let d = err.details();
        assert_eq!(err.code().as_str(), "RATE_LIMITED");
        assert_eq!(d["retry_after_seconds"], 3);
        assert_eq!(d["retry_after_ms"], 2500);
        assert_eq!(d["http_status"], 429);
        assert_eq!(d["retry_after"], "3");
    }

    #[test]
    fn a_huge_input_is_echoed_cut_to_a_few_hundred_characters() {
        let input = "x".repeat(10_000_000);
        let err = Error::InvalidUrl {
            input: input.clone(),
            reason: "the scheme is not supported".into(),
            source: None,
        };
        let obj = err.to_object(Some(&input));
        let size = serde_json::to_string(&obj).unwrap().len();
        assert!(size < 3_000, "{size}");
        assert!(obj.feed_url.unwrap().ends_with("(9999744 more characters)"));
        assert_eq!(echo("short"), "short");
    }

    #[test]
    fn no_error_object_repeats_a_urls_password() {
        let input = "ftp://me:hunter2@example.com/feed";
        let err = Error::InvalidUrl {
            input: input.into(),
            reason: format!("cannot read {input}"),
            source: None,
        };
        let shown = serde_json::to_string(&err.to_object(Some(input))).unwrap();
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("me:***@example.com"), "{shown}");
        let auth = Error::AuthRequired {
            url: "https://example.com/feed".into(),
            status: 401,
            scheme: Some("Basic".into()),
            realm: Some("Private".into()),
            rule: None,
        };
        assert_eq!(auth.code().as_str(), "AUTH_REQUIRED");
        assert_eq!(auth.details()["realm"], "Private");
        assert!(auth.to_string().contains("[[site]]"));
    }

    #[test]
    fn every_code_string_is_distinct_and_upper_snake() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::all() {
            let s = code.as_str();
            assert!(seen.insert(s), "duplicate {s}");
            assert!(s.chars().all(|c| c.is_ascii_uppercase() || c == '_'));
        }
    }
}
