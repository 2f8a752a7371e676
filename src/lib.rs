//! `rss`: fetch RSS, Atom and JSON feeds on request and return clean, stable JSON, from a
//! CLI and an MCP server that share one core.
//!
//! - `model`    — the output contract (serde + schemars types, `SCHEMA_VERSION`)
//! - `error`    — the one error enum, stable codes, details, exit codes
//! - `config`   — runtime parameters and defaults; the one reader of `RSS_*` variables
//! - `settings` — the owner's config file: defaults, rules per site, secrets by reference
//! - `redact`   — what is never printed: secrets, and the passwords of URLs
//! - `gate`     — the per-host request gate: permits, pacing, learned cooldowns
//! - `hosts`    — learned host state shared beyond the process (file and Redis stores)
//! - `readers`  — readers' delivery marks, moved only by an acknowledgement
//! - `http`     — the shared client: gated conditional GETs within size and time limits
//! - `schedule` — running a batch: per-host queues, no head-of-line blocking
//! - `cache`    — the atomic file cache, its listing and clearing
//! - `feed`     — parsing, stable ids, content rendering, since/limit/sort
//! - `article`  — a page → its readable article and metadata; robots.txt rules
//! - `discover` — feed autodiscovery from an HTML page
//! - `html`     — the forgiving HTML tokenizer shared by rendering and discovery
//! - `urls`     — URL resolution and the schemes rendered content may link to
//! - `inputs`   — arguments, stdin, `--input`, `--opml`: merged, classified, de-duplicated
//! - `local`    — capped, time-limited local reads, and which files may be read
//! - `lockfile` — advisory lock files that exist only while held
//! - `durable`  — files flushed to disk before they are renamed into place
//! - `ops`      — the operations both front ends call (fetch, discover, show, cache, readers)
//! - `payload`  — a body in chunks, freed as a parser reads it
//! - `output`   — json / ndjson / text rendering, schema emission
//! - `cli`      — the clap surface and the one exit path
//! - `watch`    — watching feeds while someone listens: each feed's schedule, one check per feed
//! - `mcp`      — the MCP server (stdio and streamable HTTP): tools delegate to `ops`
//! - `metrics`  — the counters and histograms operations record, for Prometheus
//!
//! The public surface is what an embedding program uses, four modules: [`ops`] (build a
//! [`Context`] from a [`Config`], call [`ops::fetch_feeds`]), the [`model`] it returns,
//! [`error`] and [`config`], with the option types re-exported here; `main` is the command
//! line (which also reads the owner's config file of rules per site; an embedding program's
//! [`Context::new`] runs without one). `ARCHITECTURE.md` at the
//! repository's root is the map.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub(crate) mod article;
pub(crate) mod cache;
pub(crate) mod cli;
pub mod config;
pub(crate) mod date;
pub(crate) mod discover;
pub(crate) mod durable;
pub mod error;
pub(crate) mod feed;
pub(crate) mod gate;
pub(crate) mod hosts;
pub(crate) mod html;
pub(crate) mod http;
pub(crate) mod inputs;
pub(crate) mod local;
pub(crate) mod lockfile;
pub(crate) mod mcp;
pub(crate) mod metrics;
pub mod model;
pub mod ops;
pub(crate) mod output;
pub(crate) mod payload;
pub(crate) mod readers;
pub(crate) mod redact;
pub(crate) mod schedule;
pub(crate) mod settings;
pub(crate) mod shape;
pub(crate) mod stop;
pub(crate) mod sync;
pub(crate) mod text;
pub(crate) mod urls;
pub(crate) mod watch;

pub use cli::main;
pub use config::Config;
pub use error::{Error, ErrorCode, Result};
pub use feed::{ContentFormat, RenderOptions, Selection};
pub use hosts::StoreError;
pub use model::{FetchOutput, SCHEMA_VERSION};
pub use ops::Context;

/// What the tests, the benchmarks and the fuzz targets reach inside the crate. Not a stable
/// API: an embedding program uses [`ops`], [`model`], [`config`] and the re-exports above.
#[doc(hidden)]
pub mod internals {
    pub use crate::cache::{Cache, StoreRequest};
    pub use crate::config::parse_duration;
    pub use crate::discover::find_feeds;
    pub use crate::feed::{item_id, parse_since, process};
    pub use crate::settings::Settings;

    /// The words of `html` on one line (tags dropped, entities decoded), as the extraction
    /// benchmark scores them.
    pub fn html_to_plain(html: &str) -> String {
        crate::feed::render::to_plain(html)
    }
    pub use crate::http::parse_retry_after;

    /// An HTML body rendered as markdown against `base` (the parse benchmark's renderer
    /// column), or `None` when it could not be.
    pub fn html_to_markdown(html: &str, base: Option<&url::Url>) -> Option<String> {
        crate::feed::render::to_markdown(html, base).ok()
    }

    /// Parses a feed body and counts its items, rendering nothing (the parse benchmark's
    /// profile: how much of the pipeline parsing alone takes).
    pub fn parse_only(body: Vec<u8>, content_type: Option<&str>) -> crate::Result<usize> {
        let mut n = 0usize;
        crate::feed::parse_into(body.into(), content_type, None, &mut |_| n += 1).map(|_| n)
    }

    fn page_url(url: &str) -> crate::Result<url::Url> {
        url::Url::parse(url).map_err(|e| crate::Error::InvalidUrl {
            input: crate::error::echo(url),
            reason: "not a URL".to_owned(),
            source: Some(e),
        })
    }

    /// A parsed feed with every item, as [`parse_kept`] hands it back.
    pub struct Held(crate::feed::RawFeed);

    impl Held {
        /// How many items it holds.
        pub fn items(&self) -> usize {
            self.0.items.len()
        }
    }

    /// Parses a feed body into its items, all held at once (as a feed library returns them:
    /// the parse benchmark's side-by-side with feed-rs), and hands the feed back (freeing it
    /// is the caller's: the benchmark times the parse to the items in hand, and their
    /// freeing apart).
    pub fn parse_kept(body: Vec<u8>, content_type: Option<&str>) -> crate::Result<Held> {
        crate::feed::parse_held(body.into(), content_type).map(Held)
    }

    /// A page's body read as an article (the extraction benchmark's `rss article` columns):
    /// its content as rendered, or the error (whose `code()` the benchmark reports).
    pub fn article_content(
        html: &str,
        url: &str,
        format: crate::feed::ContentFormat,
    ) -> crate::Result<String> {
        let url = page_url(url)?;
        let render = crate::feed::RenderOptions {
            format,
            max_content_chars: None,
        };
        crate::article::read(
            html.as_bytes().into(),
            Some("text/html"),
            &url,
            render,
            &crate::article::Stop::never(),
        )
        .map(|a| a.content.unwrap_or_default())
    }
    pub use crate::feed::estimate_tokens;

    /// A page read as an article in markdown on this thread within `budget` of its CPU time
    /// (the hostile benchmark's overrun figure): `"ok"` or the error code, the CPU time the
    /// read spent, and the `elapsed_ms` its error gave.
    pub fn article_within(
        html: &str,
        url: &url::Url,
        budget: std::time::Duration,
    ) -> (String, std::time::Duration, Option<u64>) {
        let (stop, _cancel_on_drop) = crate::article::Stop::new();
        let stop = stop.started(budget);
        let render = crate::feed::RenderOptions {
            format: crate::feed::ContentFormat::Markdown,
            max_content_chars: None,
        };
        let r = crate::article::read(
            html.as_bytes().into(),
            Some("text/html"),
            url,
            render,
            &stop,
        );
        let spent = stop.spent();
        match r {
            Ok(_) => ("ok".to_owned(), spent, None),
            Err(e) => {
                let said = e.details().get("elapsed_ms").and_then(|v| v.as_u64());
                (e.code().as_str().to_owned(), spent, said)
            }
        }
    }

    /// How deep a tree builder nests what the extractors read of `html` (the article fuzz
    /// target's check against [`SHAPED_DEPTH_ALLOWED`]).
    pub fn shaped_depth(html: &str) -> usize {
        let stop = crate::article::Stop::never();
        crate::shape::bounded(html, &stop).map_or(0, |s| crate::shape::tree_depth(&s))
    }

    /// The deepest a tree builder may nest what the extractors read.
    pub const SHAPED_DEPTH_ALLOWED: usize =
        crate::shape::tree_builder_allowance(crate::shape::MAX_DEPTH);

    /// A page's article metadata as `rss article` prints it (the extraction benchmark's
    /// metadata check): title, authors, published, site name, language, lead image.
    pub fn article_meta(html: &str, url: &str) -> crate::Result<ArticleMeta> {
        let url = page_url(url)?;
        let render = crate::feed::RenderOptions {
            format: crate::feed::ContentFormat::None,
            max_content_chars: None,
        };
        crate::article::read(
            html.as_bytes().into(),
            Some("text/html"),
            &url,
            render,
            &crate::article::Stop::never(),
        )
        .map(|a| ArticleMeta {
            title: a.meta.title,
            authors: a.meta.authors,
            published: a.meta.published,
            site_name: a.meta.site_name,
            language: a.meta.language,
            lead_image: a.meta.lead_image,
        })
    }

    /// The metadata fields of an article, as [`article_meta`] reads them.
    #[derive(Debug, Clone, Default)]
    pub struct ArticleMeta {
        /// The article's title.
        pub title: Option<String>,
        /// Its authors.
        pub authors: Vec<String>,
        /// When it was published (UTC RFC 3339).
        pub published: Option<String>,
        /// The site's name.
        pub site_name: Option<String>,
        /// The page's language.
        pub language: Option<String>,
        /// The lead image's absolute URL.
        pub lead_image: Option<String>,
    }
    pub use crate::inputs::{list_lines, merge, opml_urls};
    pub use crate::output::compact::compact;

    /// Every MCP tool's name, in the order the server lists them.
    pub fn tool_names() -> Vec<&'static str> {
        <crate::mcp::tools::ToolName as strum::IntoEnumIterator>::iter()
            .map(|t| t.as_str())
            .collect()
    }

    /// Every subcommand's name, from the clap definition.
    pub fn subcommands() -> Vec<String> {
        crate::cli::subcommands()
    }
}
