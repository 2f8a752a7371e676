//! The stable error codes of the contract, the kinds of network failure, and the process
//! exit codes.

/// The stable error codes of the contract: the one list. Each code's wire name and what it
/// tells a caller to do are written here once; `as_str`, `meaning` and `all` derive from it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::EnumIter,
    strum::IntoStaticStr,
    strum::EnumMessage,
)]
pub enum ErrorCode {
    /// Bad flags or arguments.
    #[strum(
        serialize = "USAGE_ERROR",
        message = "the arguments are wrong; fix them, do not retry as is"
    )]
    Usage,
    /// A URL that does not parse or whose scheme is not http(s) or file.
    #[strum(
        serialize = "INVALID_URL",
        message = "the input is not an http(s) URL or readable path"
    )]
    InvalidUrl,
    /// The network failed: timeout, connect, dns, tls, body, redirect.
    #[strum(
        serialize = "NETWORK_ERROR",
        message = "the host could not be reached or broke off (details.kind); retrying later may work"
    )]
    Network,
    /// The origin answered with an HTTP error status.
    #[strum(
        serialize = "FEED_FETCH_FAILED",
        message = "the origin answered with an error status (details.http_status); a 403 is a block, not a window"
    )]
    FeedFetchFailed,
    /// The origin says the feed is gone for good (`410 Gone`).
    #[strum(
        serialize = "FEED_GONE",
        message = "the publisher says the feed is gone for good (HTTP 410): take it off the list; asking again will not bring it back"
    )]
    FeedGone,
    /// The body is not a readable feed.
    #[strum(
        serialize = "FEED_PARSE_FAILED",
        message = "the body is not a feed; for a web page, call discover_feeds"
    )]
    FeedParseFailed,
    /// The origin (or the gate) asked us to wait.
    #[strum(
        serialize = "RATE_LIMITED",
        message = "the host asked to be left alone; wait details.retry_after_seconds before asking for it again"
    )]
    RateLimited,
    /// The origin wants credentials this run did not have (or refused the ones sent).
    #[strum(
        serialize = "AUTH_REQUIRED",
        message = "the URL needs credentials (details.scheme, details.realm): its owner adds a [[site]] rule with auth to the config file; retrying as is will not help"
    )]
    AuthRequired,
    /// A bot wall answered where a feed or an article was expected.
    #[strum(
        serialize = "BLOCKED",
        message = "a bot wall answered instead of the document (details.provider): rss does not solve challenges; do not retry soon"
    )]
    Blocked,
    /// A body over `--max-body-bytes`, or an MCP result over its token budget.
    #[strum(
        serialize = "RESPONSE_TOO_LARGE",
        message = "too big: call again with one of details.suggested_limit, suggested_max_content_chars or suggested_max_response_tokens"
    )]
    ResponseTooLarge,
    /// The page serves a feed, not an article.
    #[strum(
        serialize = "NOT_AN_ARTICLE",
        message = "the URL serves a feed, not an article; read it with fetch_feed"
    )]
    NotAnArticle,
    /// The page is not HTML (a PDF, an image, audio, video, ...).
    #[strum(
        serialize = "UNSUPPORTED_CONTENT",
        message = "the URL serves something other than a web page (details.content_type)"
    )]
    UnsupportedContent,
    /// The page has no readable article (an index page, a login wall).
    #[strum(
        serialize = "NO_READABLE_CONTENT",
        message = "the page has no readable article (details.title names the page)"
    )]
    NoReadableContent,
    /// Reading the page as an article took longer than it may: its own budget, or the
    /// call's deadline came while it was being extracted.
    #[strum(
        serialize = "EXTRACTION_TIMEOUT",
        message = "the page took too long to read as an article (details.cut_by: \"budget\" means the page itself is too heavy, do not retry; \"call\" means the call's time ran out, a longer timeout may work)"
    )]
    ExtractionTimeout,
    /// The site's robots.txt disallows the page for us.
    #[strum(
        serialize = "ROBOTS_DISALLOWED",
        message = "the site's robots.txt disallows reading this page (details.rule)"
    )]
    RobotsDisallowed,
    /// A page's origin answered with an HTTP error status.
    #[strum(
        serialize = "PAGE_FETCH_FAILED",
        message = "the page's origin answered with an error status (details.http_status)"
    )]
    PageFetchFailed,
    /// A local file could not be read or written.
    #[strum(
        serialize = "IO_ERROR",
        message = "a local file could not be read or written"
    )]
    Io,
    /// `rss show` found no such item.
    #[strum(
        serialize = "NOT_FOUND",
        message = "no such item; list current ids with fetch_feed"
    )]
    NotFound,
    /// The run was stopped by `SIGINT` or `SIGTERM` before it finished.
    #[strum(
        serialize = "INTERRUPTED",
        message = "the run was stopped by a signal before it finished"
    )]
    Interrupted,
    /// A bug in `rss`.
    #[strum(serialize = "INTERNAL_ERROR", message = "a bug in rss; report it")]
    Internal,
}

impl ErrorCode {
    /// Every code, in documentation order.
    pub fn all() -> impl Iterator<Item = ErrorCode> {
        <ErrorCode as strum::IntoEnumIterator>::iter()
    }

    /// The wire string of this code.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What this code tells a caller to do, in one line.
    pub fn meaning(self) -> &'static str {
        strum::EnumMessage::get_message(&self).unwrap_or("")
    }
}

/// What kind of network failure a `NETWORK_ERROR` is (`details.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkKind {
    /// Connect or body read exceeded `--timeout`.
    Timeout,
    /// The TCP connection could not be made.
    Connect,
    /// The host name did not resolve.
    Dns,
    /// The TLS handshake failed.
    Tls,
    /// The body broke off or could not be decoded.
    Body,
    /// Too many redirects, or a redirect loop.
    Redirect,
    /// The server did not speak valid HTTP: a reply that is not HTTP, bad headers, a bad
    /// `Content-Length`, or the connection closed or reset before a whole response head.
    Protocol,
    /// Anything else the HTTP stack reported (not expected; reported as a bug).
    Other,
}

impl NetworkKind {
    /// The wire string of this kind.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkKind::Timeout => "timeout",
            NetworkKind::Connect => "connect",
            NetworkKind::Dns => "dns",
            NetworkKind::Tls => "tls",
            NetworkKind::Body => "body",
            NetworkKind::Redirect => "redirect",
            NetworkKind::Protocol => "protocol",
            NetworkKind::Other => "other",
        }
    }
}

/// Process exit codes.
pub mod exit {
    /// Every feed succeeded.
    pub const OK: u8 = 0;
    /// A bug or an unexpected failure.
    pub const INTERNAL: u8 = 1;
    /// Bad usage; nothing was fetched.
    pub const USAGE: u8 = 2;
    /// Some feeds failed.
    pub const PARTIAL: u8 = 3;
    /// Every feed failed.
    pub const ALL_FAILED: u8 = 4;
    /// Stopped by `SIGINT` (128 + 2; `SIGTERM` gives 143).
    pub const INTERRUPTED: u8 = 130;
    /// Stopped by `SIGTERM` (128 + 15).
    pub const TERMINATED: u8 = 143;
}
