//! The one cached conditional GET that every operation uses (feeds, `show`, articles,
//! robots.txt): the cache looked up, a fresh copy served with no request, otherwise a
//! conditional GET through the gate; a `304` serves (and refreshes) the cached copy, a new
//! body is stored, and an origin failure may be covered by the cached copy.

use chrono::{DateTime, Utc};
use tokio::time::Instant;
use url::Url;

use super::{CacheMode, Context, blocking};
use crate::cache::{Cache, Entry, Kind, Lookup, Meta};
use crate::error::{Error, ErrorCode};
use crate::http::{Exchange, GetRequest, Refuse, Response, Validators};
use crate::model::{FeedStatus, WarningCode};
use crate::payload::Payload;

/// One cached GET to make.
pub(crate) struct CachedGet<'a> {
    /// Which kind of entry the URL is cached as.
    pub kind: Kind,
    /// The URL as the caller gave it (the cache key).
    pub key: &'a str,
    /// The URL to send to.
    pub url: Url,
    /// How the cache is used.
    pub mode: CacheMode,
    /// Serve the cached copy when the origin fails.
    pub stale_if_error: bool,
    /// A stale copy must have been fetched after this to be served.
    pub since: Option<DateTime<Utc>>,
    /// The call's gate budget.
    pub deadline: Instant,
    /// The `Accept` header.
    pub accept: &'static str,
    /// What the caller will not read (a page's non-HTML body), checked before the body.
    pub refuse: Option<Refuse>,
    /// What every hop must pass before it is sent (a page read's robots.txt).
    pub hops: Option<&'a dyn crate::http::HopCheck>,
    /// The window a body sent for must have a place in ([`crate::http::GetRequest::window`]).
    pub window: Option<std::sync::Arc<tokio::sync::Semaphore>>,
}

/// What the GET gave.
pub(crate) enum Got {
    /// A new body from the origin (stored when a cache is in use).
    Fresh(Response),
    /// The cached copy: fresh enough to serve with no request (`Ok`), or confirmed by a
    /// `304` (`NotModified`).
    Cached(Entry, FeedStatus),
    /// The origin failed and the cached copy covers it.
    Stale(Entry),
    /// Nothing to serve.
    Failed(Error),
}

/// A cached GET's result, with what it cost and what it met.
pub(crate) struct Fetched {
    /// The outcome.
    pub got: Got,
    /// Requests sent.
    pub attempts: u32,
    /// Time waited before sending.
    pub gate_wait: std::time::Duration,
    /// Findings for the caller's output: a damaged entry, a failed write, a stale copy
    /// served, the host store's warnings.
    pub warnings: Vec<(WarningCode, String)>,
    /// Until when (Unix ms) the server's own freshness covers what is served, if it does.
    pub fresh_until_ms: Option<u64>,
    /// The place in the request's window, when it asked for one and a send was made.
    pub window: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Where the requested URL moved for good, when the origin answered (`200` or `304`)
    /// after permanent redirects ([`Response::moved_to`]).
    pub moved_to: Option<Url>,
    /// Whether the origin answered at all (a request was made and it succeeded).
    pub answered: bool,
}

impl Fetched {
    fn new(got: Got) -> Fetched {
        Fetched {
            got,
            attempts: 0,
            gate_wait: std::time::Duration::ZERO,
            warnings: Vec::new(),
            fresh_until_ms: None,
            window: None,
            moved_to: None,
            answered: false,
        }
    }
}

/// Looks `key` up in `cache`, off the async threads; a damaged entry is a miss plus a
/// warning message.
pub(crate) async fn load(cache: Option<&Cache>, key: &str) -> (Option<Entry>, Option<String>) {
    let Some(cache) = cache.cloned() else {
        return (None, None);
    };
    let key = key.to_owned();
    match blocking(move || cache.load(&key)).await {
        Ok(Lookup::Hit(e)) => (Some(*e), None),
        Ok(Lookup::Miss) => (None, None),
        Ok(Lookup::Corrupt(msg)) => (None, Some(format!("{msg}; fetching a fresh copy"))),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// The conditional-request validators of a cached copy.
fn validators(cached: Option<&Entry>) -> Option<Validators> {
    cached.map(|e| Validators {
        etag: e.meta.etag.clone(),
        last_modified: e.meta.last_modified.clone(),
    })
}

/// Whether an origin failure may be covered by a stale copy.
fn stale_allowed(err: &Error) -> bool {
    match err {
        Error::HttpStatus { status, .. } => *status >= 500,
        _ => matches!(err.code(), ErrorCode::RateLimited | ErrorCode::Network),
    }
}

fn covers_since(meta: &Meta, since: Option<DateTime<Utc>>) -> bool {
    match (since, meta.fetched_at()) {
        (None, _) => true,
        (Some(cut), Some(at)) => at >= cut,
        (Some(_), None) => false,
    }
}

impl Context {
    /// The cache for entries of `kind`, unless `mode` says no cache.
    pub(crate) fn cache_of(&self, kind: Kind, mode: CacheMode) -> Option<Cache> {
        self.cache
            .as_ref()
            .filter(|_| mode != CacheMode::Off)
            .map(|c| c.of(kind))
    }

    /// Gets `req.url` through the cache and the gate.
    pub(crate) async fn cached_get(&self, req: CachedGet<'_>) -> Fetched {
        let cache = self.cache_of(req.kind, req.mode);
        // A body in a window has its place before it is in memory: a cached one's before it
        // is loaded, a new one's once its host's turn has come (taken by the client).
        let mut window = req.window;
        let mut held = None;
        if let (Some(w), Some(c)) = (&window, &cache)
            && c.has_entry(req.key)
        {
            held = w.clone().acquire_owned().await.ok();
            window = None;
        }
        let (mut cached, corrupt) = load(cache.as_ref(), req.key).await;
        // A private body is another user's unless it was fetched with these credentials.
        let credential_id = self.client.credential_id(&req.url);
        cached = cached.filter(|e| e.meta.credential_id == credential_id);
        let mut warnings = Vec::new();
        if let Some(msg) = corrupt {
            warnings.push((WarningCode::CacheEntryCorrupt, msg));
        }
        // A fresh copy never reaches the gate: younger than --max-age, or still covered by
        // the server's own freshness.
        let cap = self
            .client
            .settings()
            .rule_for(&req.url)
            .and_then(|r| r.max_freshness)
            .unwrap_or(self.config.max_freshness);
        let now_ms = crate::cache::now_ms();
        let fresh = |e: &Entry| match req.mode {
            CacheMode::MaxAge(max) => e.meta.age(Utc::now()).is_some_and(|age| age < max),
            CacheMode::Fresh => e.meta.is_fresh(now_ms, cap).is_some(),
            _ => false,
        };
        if let Some(entry) = cached.take_if(|e| fresh(e)) {
            let until = entry.meta.is_fresh(now_ms, cap);
            let mut f = Fetched::new(Got::Cached(entry, FeedStatus::Ok));
            f.fresh_until_ms = until;
            f.warnings = warnings;
            f.window = held;
            return f;
        }
        let mut ex: Exchange = self
            .client
            .get(GetRequest {
                url: req.url,
                validators: validators(cached.as_ref()),
                deadline: req.deadline,
                accept: req.accept,
                refuse: req.refuse,
                hops: req.hops,
                window,
            })
            .await;
        warnings.extend(
            std::mem::take(&mut ex.warnings)
                .into_iter()
                .map(|w| (w.code, w.message)),
        );
        let mut fresh_until_ms = None;
        let (answered, moved_to) = match &ex.result {
            Ok(r) => (true, r.moved_to.clone()),
            Err(_) => (false, None),
        };
        let got = match ex.result {
            Ok(resp) if resp.not_modified => match self.not_modified(&cache, cached, &resp).await {
                Ok(entry) => {
                    fresh_until_ms = entry.meta.is_fresh(crate::cache::now_ms(), cap);
                    Got::Cached(entry, FeedStatus::NotModified)
                }
                Err(e) => Got::Failed(e),
            },
            Ok(resp) if resp.freshness.no_store => {
                // The server says not to keep it: nor an older copy.
                if let Some(c) = cache {
                    let key = req.key.to_owned();
                    let _ = blocking(move || c.forget(&key)).await;
                }
                Got::Fresh(resp)
            }
            Ok(resp) => {
                fresh_until_ms = resp
                    .freshness
                    .lifetime
                    .filter(|_| !resp.freshness.no_cache)
                    .map(|l| resp.received_ms + l.min(cap).as_millis() as u64);
                let (resp, store_warning) =
                    store_fresh(cache.as_ref(), req.key, resp, credential_id).await;
                if let Some(w) = store_warning {
                    warnings.push((WarningCode::CacheWriteFailed, w));
                }
                Got::Fresh(resp)
            }
            Err(err) => match cached {
                Some(entry)
                    if req.stale_if_error
                        && !entry.meta.must_revalidate
                        && stale_allowed(&err)
                        && covers_since(&entry.meta, req.since) =>
                {
                    warnings.push((
                        WarningCode::ServedStale,
                        format!(
                            "served the copy cached at {} because the origin failed: {} ({})",
                            entry.meta.fetched_at,
                            err,
                            err.code().as_str()
                        ),
                    ));
                    Got::Stale(entry)
                }
                _ => Got::Failed(err),
            },
        };
        Fetched {
            got,
            attempts: ex.attempts,
            gate_wait: ex.gate_wait,
            warnings,
            fresh_until_ms,
            window: held.or(ex.window),
            moved_to,
            answered,
        }
    }

    /// The cached copy a `304` confirmed, recorded as fresh as of the response (with any
    /// new validators). A `304` without a copy is an error.
    async fn not_modified(
        &self,
        cache: &Option<Cache>,
        cached: Option<Entry>,
        resp: &Response,
    ) -> crate::error::Result<Entry> {
        let entry = cached.ok_or_else(|| Error::HttpStatus {
            status: 304,
            url: resp.final_url.to_string(),
        })?;
        let Some(cache) = cache.clone() else {
            return Ok(entry);
        };
        let (etag, lm) = (resp.etag.clone(), resp.last_modified.clone());
        let (received, freshness) = (resp.received_ms, resp.freshness);
        // `None` also when another process stored a newer body meanwhile: the entry is left
        // to it, and this call serves the copy it validated.
        let (touched, entry) = blocking(move || {
            let touched = cache
                .touch(&entry, etag.as_deref(), lm.as_deref(), received, &freshness)
                .ok()
                .flatten();
            (touched, entry)
        })
        .await?;
        Ok(Entry {
            meta: touched.unwrap_or(entry.meta),
            body: entry.body,
        })
    }
}

/// Stores a fresh response as `key`'s cache entry (when a cache is in use), off the async
/// threads; gives the response back, with a warning when the write failed.
async fn store_fresh(
    cache: Option<&Cache>,
    key: &str,
    resp: Response,
    credential_id: Option<String>,
) -> (Response, Option<String>) {
    let Some(cache) = cache.cloned() else {
        return (resp, None);
    };
    let key = key.to_owned();
    let done = blocking(move || {
        let req = crate::cache::StoreRequest {
            feed_url: &key,
            final_url: resp.final_url.as_str(),
            etag: resp.etag.as_deref(),
            last_modified: resp.last_modified.as_deref(),
            content_type: resp.content_type.as_deref(),
            received_ms: resp.received_ms,
            freshness: resp.freshness,
            credentialed: resp.credentialed,
            credential_id: credential_id.as_deref(),
        };
        let warning = cache.store(&req, &resp.body).err().map(|e| e.to_string());
        (resp, warning)
    })
    .await;
    match done {
        Ok(r) => r,
        // The worker died holding the response: nothing to parse either.
        Err(e) => (
            Response {
                final_url: Url::parse("about:blank").expect("a valid URL"),
                not_modified: false,
                body: Payload::default(),
                content_type: None,
                etag: None,
                last_modified: None,
                received_ms: 0,
                freshness: Default::default(),
                credentialed: false,
                moved_to: None,
            },
            Some(e.to_string()),
        ),
    }
}
