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
use crate::http::{Exchange, GetRequest, Lineage, Refuse, Response, Validators};
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
    /// What led to this request (a feed to its item's page, a page to its robots.txt;
    /// empty: the caller's own): what it carries is decided on the whole chain.
    pub led_by: Lineage,
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
    /// Until when (Unix ms) the server's own freshness (or the feed's declared schedule, as
    /// last read) covers what is served, if it does.
    pub fresh_until_ms: Option<u64>,
    /// What the freshness of what is served is made of (`None` for a stale copy or a
    /// failure): a feed's caller adds the schedule its body declares.
    pub basis: Option<crate::cache::freshness::Basis>,
    /// The place in the request's window, when it asked for one and a send was made.
    pub window: Option<tokio::sync::OwnedSemaphorePermit>,
    /// The chain that got what is served (what its links lead to follows it).
    pub lineage: Lineage,
}

impl Fetched {
    fn new(got: Got) -> Fetched {
        Fetched {
            got,
            attempts: 0,
            gate_wait: std::time::Duration::ZERO,
            warnings: Vec::new(),
            fresh_until_ms: None,
            basis: None,
            window: None,
            lineage: Lineage::none(),
        }
    }
}

/// The chain a cached copy was fetched through, after what led to the request now.
pub(super) fn lineage_of(led_by: &Lineage, e: &Entry) -> Lineage {
    let mut l = Lineage::cached(None, None, e.meta.via_https);
    for step in led_by.steps() {
        l.push(step.clone());
    }
    for u in [&e.meta.feed_url, &e.meta.final_url] {
        if let Ok(u) = Url::parse(u) {
            l.push(u);
        }
    }
    l
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

    /// Who a request for `url` that `led_by` led to is made as, for the cache: `None` when
    /// it sends no credentials; `Err` when it does and no key can fingerprint them (its
    /// body is then not cached).
    pub(crate) async fn credential_id(
        &self,
        url: &Url,
        led_by: &Lineage,
    ) -> Result<Option<String>, ()> {
        if !self.client.sends_credentials(url, led_by) {
            return Ok(None);
        }
        let Some(cache) = self.cache.clone() else {
            return Err(());
        };
        let key = blocking(move || cache.credential_key())
            .await
            .ok()
            .flatten()
            .ok_or(())?;
        self.client
            .credential_id(url, led_by, &key)
            .map(Some)
            .ok_or(())
    }

    /// The longest a copy of `url` is served on what its server or its feed says of its
    /// freshness: its config rule's `max_freshness`, else `--max-freshness`.
    pub(crate) fn freshness_cap(&self, url: &url::Url) -> std::time::Duration {
        self.client
            .settings()
            .rule_for(url)
            .and_then(|r| r.max_freshness)
            .unwrap_or(self.config.max_freshness)
    }

    /// Gets `req.url` through the cache and the gate.
    pub(crate) async fn cached_get(&self, req: CachedGet<'_>) -> Fetched {
        // A private body is another user's unless it was fetched with these credentials;
        // credentials that cannot be fingerprinted are not cached at all.
        let mut cache = self.cache_of(req.kind, req.mode);
        let mut credential_id = None;
        if cache.is_some() {
            match self.credential_id(&req.url, &req.led_by).await {
                Ok(id) => credential_id = id,
                Err(()) => cache = None,
            }
        }
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
        cached = cached.filter(|e| e.meta.credential_id == credential_id);
        let mut warnings = Vec::new();
        if let Some(msg) = corrupt {
            warnings.push((WarningCode::CacheEntryCorrupt, msg));
        }
        // A fresh copy never reaches the gate: younger than --max-age, or still covered by
        // the server's own freshness.
        let cap = self.freshness_cap(&req.url);
        let now_ms = crate::cache::now_ms();
        let fresh = |e: &Entry| match req.mode {
            CacheMode::MaxAge(max) => e.meta.age(Utc::now()).is_some_and(|age| age < max),
            CacheMode::Fresh => e.meta.is_fresh(now_ms, cap).is_some(),
            _ => false,
        };
        if let Some(entry) = cached.take_if(|e| fresh(e)) {
            let until = entry.meta.is_fresh(now_ms, cap);
            let lineage = lineage_of(&req.led_by, &entry);
            let basis = entry.meta.basis();
            let mut f = Fetched::new(Got::Cached(entry, FeedStatus::Ok));
            f.lineage = lineage;
            f.fresh_until_ms = until;
            f.basis = Some(basis);
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
                led_by: req.led_by.clone(),
                window,
            })
            .await;
        warnings.extend(
            std::mem::take(&mut ex.warnings)
                .into_iter()
                .map(|w| (w.code, w.message)),
        );
        let mut fresh_until_ms = None;
        let mut lineage = Lineage::none();
        let mut basis = None;
        // A new body is stored with the schedule its feed declared last time (a feed's
        // caller corrects it once the body is read, if it changed).
        let declared = cached.as_ref().and_then(|e| e.meta.declared);
        let got = match ex.result {
            Ok(resp) if resp.not_modified => match self.not_modified(&cache, cached, &resp).await {
                Ok(entry) => {
                    fresh_until_ms = entry.meta.is_fresh(crate::cache::now_ms(), cap);
                    lineage = resp.lineage;
                    basis = Some(entry.meta.basis());
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
                lineage = resp.lineage.clone();
                Got::Fresh(resp)
            }
            Ok(resp) => {
                fresh_until_ms = resp
                    .freshness
                    .lifetime
                    .filter(|_| !resp.freshness.no_cache)
                    .map(|l| resp.received_ms + l.min(cap).as_millis() as u64);
                // Whether the request's own hops (not what led to it) went over https.
                let via_https = resp
                    .lineage
                    .steps()
                    .iter()
                    .skip(req.led_by.steps().len())
                    .any(|u| u.scheme() == "https");
                basis = Some(basis_of(&resp, declared));
                let stored = Stored {
                    credential_id,
                    via_https,
                    declared,
                };
                let (resp, store_warning) =
                    store_fresh(cache.as_ref(), req.key, resp, stored).await;
                if let Some(w) = store_warning {
                    warnings.push((WarningCode::CacheWriteFailed, w));
                }
                lineage = resp.lineage.clone();
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
                    lineage = lineage_of(&req.led_by, &entry);
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
            basis,
            window: held.or(ex.window),
            lineage,
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

/// What the freshness of a new response is made of (with the schedule its feed declared
/// when last read).
fn basis_of(
    resp: &Response,
    declared: Option<crate::cache::freshness::Declared>,
) -> crate::cache::freshness::Basis {
    crate::cache::freshness::Basis {
        received_ms: resp.received_ms,
        server_until_ms: resp
            .freshness
            .lifetime
            .map(|l| resp.received_ms.saturating_add(l.as_millis() as u64)),
        from_expires: resp.freshness.from_expires,
        no_cache: resp.freshness.no_cache,
        declared,
    }
}

/// What an entry records beside the response itself.
struct Stored {
    /// The keyed fingerprint of the credentials it was fetched with.
    credential_id: Option<String>,
    /// A hop of its own chain was https.
    via_https: bool,
    /// The schedule its feed declared when last read.
    declared: Option<crate::cache::freshness::Declared>,
}

/// Stores a fresh response as `key`'s cache entry (when a cache is in use), off the async
/// threads; gives the response back, with a warning when the write failed.
async fn store_fresh(
    cache: Option<&Cache>,
    key: &str,
    resp: Response,
    stored: Stored,
) -> (Response, Option<String>) {
    let Stored {
        credential_id,
        via_https,
        declared,
    } = stored;
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
            via_https,
            declared,
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
                lineage: Lineage::none(),
            },
            Some(e.to_string()),
        ),
    }
}
