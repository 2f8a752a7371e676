//! The operations both front ends call: fetch, discover, show, cache, readers. Behaviour
//! lives here and is never forked into `cli` or `mcp`.

mod article;
pub mod budget;
mod cached;
mod config;
mod cut;
mod deadline;
mod dedupe;
mod discover;
mod extract;
mod fetch;
mod hosts;
mod moved;
pub mod pages;
mod readers;
mod request;
mod robots;
mod service;
mod show;
mod suggest;
mod transcripts;

use crate::model::WarningCode;
use std::time::Duration;

use crate::cache::Cache;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::feed::{RenderOptions, Selection};
use crate::http::Client;
use crate::model::{CacheListOutput, SCHEMA_VERSION, Warning};
use crate::payload::Payload;

pub use crate::http::Lineage;
pub use crate::readers::{
    MARK_MAX_AGE, MAX_DELIVERIES, MAX_MARKS_PER_FEED, MAX_NAME_CHARS, ReaderId, Scope,
    TOKEN_LIFETIME, View,
};
pub use article::{ArticleOptions, fetch_articles, read_item_article};
pub use config::config_check;
pub use deadline::{cut_off, holding_back, url_within, web_urls};
pub use dedupe::Dedupe;
pub use discover::discover;
pub use fetch::fetch_feeds;
pub use hosts::{hosts_clear, hosts_list};
pub use moved::{REMEMBER_AFTER, moved_forget, moved_list};
pub use readers::{
    Caller, Prepared, ReaderRequest, ack, deliver, deliver_prepared, fetch_unseen, open_view,
    prepare, readers_forget, readers_list,
};
pub use request::{CachePolicy, FetchRequest};
pub use service::{KeySource, Service};
pub use show::{ShowOptions, show_item, show_item_traced};
pub use transcripts::read_item_transcript;

/// What one process shares between all operations: one HTTP client (so one gate and one
/// connection pool), the cache, and the configuration.
#[derive(Debug, Clone)]
pub struct Context {
    /// The one HTTP client.
    pub client: Client,
    /// The cache, when it could be opened.
    pub cache: Option<Cache>,
    /// Why the cache could not be opened, reported with every fetch.
    pub cache_warning: Option<String>,
    /// The resolved configuration.
    pub config: Config,
    /// robots.txt rules read by this process, by origin.
    pub(crate) robots: std::sync::Arc<robots::RobotsMemo>,
    /// The key page cursors are signed with ([`pages`]): the shared store's once a server
    /// has taken it from there ([`Service::cursor_key`]), else this process's own.
    pub cursor_key: pages::CursorKey,
    /// The owner's config file: rules per site (shared with the client).
    pub(crate) settings: std::sync::Arc<crate::settings::Settings>,
    /// Readers' delivery marks (under the state directory, or in the fleet's Redis), or
    /// why they cannot be kept.
    pub(crate) readers: Result<std::sync::Arc<crate::readers::Readers>, String>,
    /// The window of pages in flight in this process.
    pub(crate) pages: extract::PageWindow,
    /// The fleet's shared cache tier (with a Redis store and a cache).
    pub(crate) shared_cache: Option<crate::cache::shared::SharedCache>,
    /// The fetches under way, one per URL ([`crate::cache::flight`]).
    pub(crate) flights: std::sync::Arc<crate::cache::flight::Flights>,
    /// Feeds remembered as moved for good (`None`: no state directory), or why they
    /// cannot be.
    pub(crate) moves: Result<Option<std::sync::Arc<moved::Moves>>, String>,
}

impl Context {
    /// Builds the shared state from resolved configuration, with no config file.
    pub fn new(config: Config) -> Context {
        Context::with_settings(config, crate::settings::Settings::default())
    }

    /// Builds the shared state from resolved configuration and the owner's config file.
    pub(crate) fn with_settings(config: Config, settings: crate::settings::Settings) -> Context {
        let settings = std::sync::Arc::new(settings);
        let client = Client::new(&config, crate::hosts::open(&config), settings.clone());
        let (cache, cache_warning) = match &config.cache_dir {
            Some(dir) => match Cache::open(dir) {
                Ok(c) => (Some(c.with_max_bytes(config.cache_max_bytes)), None),
                Err(e) => (None, Some(format!("running without a cache: {e}"))),
            },
            None => (
                None,
                Some("running without a cache: no cache directory is known".to_owned()),
            ),
        };
        let shared_cache = match (&config.host_state, &cache) {
            (crate::config::HostStateSetting::Redis(url), Some(_)) => {
                crate::cache::shared::SharedCache::open(url)
            }
            _ => None,
        };
        let readers = crate::readers::Readers::open(&config)
            .map(std::sync::Arc::new)
            .map_err(|e| e.to_string());
        let moves = moved::Moves::open(&config)
            .map(|m| m.map(std::sync::Arc::new))
            .map_err(|e| e.to_string());
        Context {
            moves,
            client,
            cache,
            cache_warning,
            config,
            robots: Default::default(),
            cursor_key: Default::default(),
            settings,
            readers,
            pages: Default::default(),
            shared_cache,
            flights: Default::default(),
        }
    }

    /// Reads the local feed file `path` given as `input`, if the file policy allows it,
    /// within the size and time limits.
    async fn read_local(&self, input: &str, path: &std::path::Path) -> Result<Payload> {
        let read = self
            .config
            .file_access
            .read(input, path, self.config.read_limits())
            .await;
        match read {
            Err(Error::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound
                    && self.config.file_access == crate::local::FileAccess::Any =>
            {
                Err(crate::inputs::no_such_input(input))
            }
            r => r,
        }
    }

    /// The warnings every operation reports: the cache or the shared host state could
    /// not be used.
    fn standing_warnings(&self) -> Vec<Warning> {
        let cache = self
            .cache_warning
            .as_ref()
            .map(|m| Warning::new(None, WarningCode::CacheUnavailable, m.clone()));
        let hosts = self
            .client
            .standing_warning()
            .map(|w| Warning::new(None, w.code, w.message));
        cache.into_iter().chain(hosts).collect()
    }
}

/// The warnings the shared host state raised for one exchange, as `url`'s warnings.
fn exchange_warnings(url: &str, ex: &mut crate::http::Exchange) -> Vec<Warning> {
    std::mem::take(&mut ex.warnings)
        .into_iter()
        .map(|w| Warning::new(Some(url.to_owned()), w.code, w.message))
        .collect()
}

impl Context {}

/// How the cache is used by a fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Serve a cached copy with no request while the server's own freshness
    /// (`Cache-Control: max-age`, `Expires`) covers it, capped by `--max-freshness`;
    /// otherwise revalidate (the default).
    #[default]
    Fresh,
    /// Always revalidate a cached copy with a conditional GET.
    Revalidate,
    /// Serve a cached copy younger than this without any network call.
    MaxAge(Duration),
    /// Ignore freshness and revalidate now.
    Refresh,
    /// Neither read nor write the cache.
    Off,
}

/// Options of `fetch_feeds`.
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    /// `--since`, `--query` and `--limit`.
    pub selection: Selection,
    /// What is done with items that tell the same story.
    pub dedupe: Dedupe,
    /// `--content` and `--max-content-chars`.
    pub render: RenderOptions,
    /// How the cache is used.
    pub cache: CacheMode,
    /// Serve a cached copy when the origin fails.
    pub stale_if_error: bool,
    /// Read each returned item's page as an article too (`--articles`), with these
    /// options; the feeds' deadline is theirs.
    pub articles: Option<ArticleOptions>,
    /// Read each returned podcast episode's transcript as text too (`--transcripts`),
    /// fetched like an article page, with these options.
    pub transcripts: Option<ArticleOptions>,
    /// The call's deadline (`rss mcp --call-timeout`): what is still under way then is
    /// answered as `RATE_LIMITED` with its host's wait. `None`: no limit but the gate's.
    pub deadline: Option<tokio::time::Instant>,
    /// A reader's view of the run (`--reader`, [`open_view`]): with `--unseen`, what it
    /// has acknowledged is left out.
    pub unseen: Option<std::sync::Arc<crate::readers::View>>,
}

/// Lists the cache (`rss cache list`).
pub async fn cache_list(ctx: &Context) -> Result<CacheListOutput> {
    let cache = require_cache(ctx)?.clone();
    let dir = cache.dir().display().to_string();
    let max_bytes = cache.max_bytes();
    let (entries, warnings, total_bytes) = tokio::task::spawn_blocking(move || cache.list())
        .await
        .map_err(|e| Error::internal_from("cache listing panicked", e))?;
    Ok(CacheListOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        cache_dir: dir,
        entries: entries.into_iter().map(|(_, info)| info).collect(),
        total_bytes,
        max_bytes,
        warnings: warnings
            .into_iter()
            .map(|m| Warning::new(None, WarningCode::CacheEntryCorrupt, m))
            .collect(),
    })
}

/// Clears the cache (`rss cache clear`), all of it or entries older than `older_than`.
pub async fn cache_clear(ctx: &Context, older_than: Option<Duration>) -> Result<usize> {
    let cache = require_cache(ctx)?.clone();
    let removed = tokio::task::spawn_blocking(move || cache.clear(older_than))
        .await
        .map_err(|e| Error::internal_from("cache clearing panicked", e))??;
    // Lock files of hosts nothing is sending to go too (host state itself stays).
    if let Some(store) = ctx.client.hosts().store() {
        store.tidy().await.map_err(Error::HostStore)?;
    }
    Ok(removed)
}

fn require_cache(ctx: &Context) -> Result<&Cache> {
    ctx.cache.as_ref().ok_or_else(|| {
        Error::usage(
            ctx.cache_warning
                .clone()
                .unwrap_or_else(|| "the cache is not available".to_owned()),
        )
    })
}

/// Unix ms as the contract's UTC RFC 3339.
fn format_ms(ms: u64) -> Option<String> {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(i64::try_from(ms).ok()?)
        .map(|t| crate::date::format(&t))
}

/// How many blocking jobs (cache file work, small feeds' parsing) run at once: the
/// threads that do them park until there is work, and no more of them are made than this.
pub(crate) const WORK_THREADS: usize = 4;

/// Runs a blocking closure off the async threads, at most [`WORK_THREADS`] at a time.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    static WORK: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(WORK_THREADS);
    let _turn = WORK
        .acquire()
        .await
        .map_err(|_| Error::internal("the work threads are closed"))?;
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal_from("a worker thread failed", e))
}

/// Runs CPU-bound work (parsing and rendering a feed) on rayon's pool, where its parallel
/// rendering runs too: the threads that allocate the parsed items are the ones that free
/// them, so the allocator reuses that memory instead of growing a heap per thread.
async fn compute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.await {
        Ok(Ok(v)) => Ok(v),
        _ => Err(Error::internal("a worker thread failed")),
    }
}
