//! The shared HTTP client: every network send of the process goes through [`Client::get`].
//!
//! One send, in order: the host's shared state re-read; the host's permit in this
//! process's gate; the shared state re-read again and its pacing waited out (holding only
//! the permit); a global slot among this process's sends in flight; the host's shared send
//! slot (other processes), last, right before the send — a slot busy elsewhere is let go of
//! and polled for, holding nothing else; then a conditional GET within the size and time
//! limits, whose outcome the gate learns (and publishes to the shared store) before the
//! slots are let go. A refusal re-enters the gate at the front of its host's queue and is
//! sent again when the gate next allows it, while the call's budget covers the wait (at most
//! [`MAX_SENDS`] sends).

mod classify;
mod guard;
pub(crate) use guard::refuse_literal;
mod hops;
mod lineage;
pub(crate) mod quota;
mod send;
mod site;
mod walls;

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore, SemaphorePermit};
use tokio::time::Instant;
use url::Url;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::gate::{Event, Gate, HostKey, Permit};
use crate::hosts::{Lease, Notes, SharedHosts, Slot, StoreWarning};
use crate::model::WarningCode;
use crate::payload::Payload;
use classify::gate_refusal;
pub use classify::parse_retry_after;
pub use hops::{HopCheck, HopFuture};
pub use lineage::Lineage;
use send::Sent;

/// The most sends one request makes to a host that refuses it: the first, then one per rung
/// of the gate's ladder (2, 4, 8, 16, 32 s, then the 60 s cap) while the call's budget covers
/// the wait.
pub const MAX_SENDS: u32 = 7;

/// What the `Accept` header asks for when fetching feeds.
pub const ACCEPT_FEEDS: &str = "application/rss+xml, application/atom+xml, application/feed+json, \
     application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, */*;q=0.5";
/// What the `Accept` header asks for when fetching a page for discovery.
pub const ACCEPT_PAGES: &str = "text/html, application/xhtml+xml, application/rss+xml, \
     application/atom+xml, application/feed+json, application/xml;q=0.9, */*;q=0.5";

/// Validators from a cached copy, sent as `If-None-Match` / `If-Modified-Since`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    /// The cached `ETag`.
    pub etag: Option<String>,
    /// The cached `Last-Modified`.
    pub last_modified: Option<String>,
}

/// What a caller will not read: given the `Content-Type` (if any) and the body's first
/// bytes (empty before any arrived), the type to refuse the body as, or `None` to read on.
/// A refused body is not read further (its connection is dropped).
pub type Refuse = fn(Option<&str>, &[u8]) -> Option<String>;

/// One GET to make.
#[derive(Debug, Clone)]
pub struct GetRequest<'a> {
    /// The URL.
    pub url: Url,
    /// Conditional-request validators, if a cached copy exists.
    pub validators: Option<Validators>,
    /// The call's gate budget: a wait that would end after this instant fails at once with
    /// `RATE_LIMITED`; a send with nothing to wait for goes ahead even when it has passed.
    pub deadline: Instant,
    /// The `Accept` header.
    pub accept: &'static str,
    /// What the caller will not read (a page that is a PDF), checked on the headers and
    /// the first bytes.
    pub refuse: Option<Refuse>,
    /// What the caller asks of every hop before it is sent (a page read's robots.txt).
    pub hops: Option<&'a dyn HopCheck>,
    /// What led to this request (empty: the caller's own): what each hop carries is
    /// decided on the whole chain.
    pub led_by: Lineage,
    /// A window the caller's body must have a place in before it is sent for (the pages a
    /// process has in flight): taken once the host's turn has come, so a body waiting on a
    /// slow host's pacing holds no place; handed back in the [`Exchange`].
    pub window: Option<Arc<Semaphore>>,
}

/// A response that was read completely.
#[derive(Debug, Clone)]
pub struct Response {
    /// The URL that answered, after redirects.
    pub final_url: Url,
    /// `true` for `304 Not Modified` (then `body` is empty).
    pub not_modified: bool,
    /// The decoded body.
    pub body: Payload,
    /// The `Content-Type` header.
    pub content_type: Option<String>,
    /// The `ETag` header.
    pub etag: Option<String>,
    /// The `Last-Modified` header.
    pub last_modified: Option<String>,
    /// When the response (its whole body) arrived, in Unix ms.
    pub received_ms: u64,
    /// What the response says of its own freshness.
    pub freshness: crate::cache::freshness::Freshness,
    /// Whether the request that got it carried credentials (a config rule's auth or
    /// secret header, or the URL's own): its body is private to this user.
    pub credentialed: bool,
    /// The whole chain that got it: what led to the request, then its hops, `final_url`
    /// last (what the body's links lead to follows it).
    pub lineage: Lineage,
}

/// A GET's result with what it cost.
#[derive(Debug)]
pub struct Exchange {
    /// The response, or why there is none.
    pub result: Result<Response>,
    /// Sends made (a refused send and its retry count 2; each redirect hop counts).
    pub attempts: u32,
    /// Time spent waiting before sends: the host's permit and pacing, other processes'
    /// sends to the host, and this process's global cap.
    pub gate_wait: Duration,
    /// What the shared host state met on the way (for this call's output only).
    pub(crate) warnings: Vec<StoreWarning>,
    /// The place in the request's window, when it asked for one and a send was made.
    pub window: Option<OwnedSemaphorePermit>,
}

/// The first and longest pause between two tries for a send slot another process holds.
const SLOT_POLL_MIN: Duration = Duration::from_millis(2);
const SLOT_POLL_MAX: Duration = Duration::from_millis(50);

/// The one HTTP client of a process: a connection pool, the gate, its link to the shared
/// host state, and the global cap on sends in flight.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The connection pools, through the configured proxies and direct (loopback), each
    /// built on its first send: building one loads the system's trust roots (~5 ms), which
    /// a run of local files or fresh cache hits never needs.
    proxied: OnceCell<reqwest::Client>,
    direct: OnceCell<reqwest::Client>,
    /// The pools through the config rules' own proxies, by proxy.
    via: std::sync::Mutex<std::collections::HashMap<Url, reqwest::Client>>,
    /// The owner's config: each hop's headers, credentials, User-Agent and proxy.
    settings: Arc<crate::settings::Settings>,
    setup: Setup,
    gate: Gate,
    hosts: SharedHosts,
    sends: Semaphore,
    max_body_bytes: u64,
    max_redirects: usize,
    /// The longest a send waits for a slot another process keeps busy: its budget and one
    /// whole send (a live holder is done by then; a stopped one is not waited for forever).
    slot_wait_limit: Duration,
    /// What the gate keys a request on.
    key_mode: crate::gate::KeyMode,
}

/// What building a connection pool needs.
#[derive(Debug)]
struct Setup {
    user_agent: String,
    timeout: Duration,
    deny_private_networks: bool,
    proxy_hosts: Arc<[String]>,
}

impl Setup {
    fn build(&self, route: &site::Route) -> Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .user_agent(self.user_agent.clone())
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .connect_timeout(self.timeout)
            .timeout(self.timeout)
            .pool_idle_timeout(Duration::from_secs(30));
        match route {
            site::Route::Env => {}
            site::Route::Direct => builder = builder.no_proxy(),
            site::Route::Via(proxy) => {
                let p = reqwest::Proxy::all(proxy.as_str()).map_err(Error::ClientSetup)?;
                builder = builder.proxy(p);
            }
        }
        if self.deny_private_networks {
            builder = builder.dns_resolver(guard::PublicOnly {
                trusted: self.proxy_hosts.clone(),
            });
        }
        builder.build().map_err(Error::ClientSetup)
    }
}

/// What a call has spent so far.
#[derive(Debug, Default)]
struct Tally {
    attempts: u32,
    gate_wait: Duration,
    notes: Notes,
    window: Option<OwnedSemaphorePermit>,
}

/// Everything a send holds while it is on the wire.
struct Cleared<'a> {
    lease: Option<Lease>,
    _slot: SemaphorePermit<'a>,
}

impl Cleared<'_> {
    /// Lets go of the slots; notes when the shared slot was lost while the request was on
    /// the wire (its holder was stalled past the slot's lifetime).
    async fn release(self, host: &HostKey, notes: &mut Notes) {
        let Some(lease) = self.lease else { return };
        if lease.lost() {
            notes.push(StoreWarning {
                code: WarningCode::GateSlotLost,
                message: format!(
                    "the shared send slot of {host} lapsed while this request was on the wire (the process was stalled): another worker may have sent to the host at the same time"
                ),
            });
        }
        lease.release().await;
    }
}

impl Client {
    /// Builds the client from resolved configuration, with `hosts` as its link to shared
    /// host state.
    pub(crate) fn new(
        config: &Config,
        hosts: SharedHosts,
        settings: Arc<crate::settings::Settings>,
    ) -> Client {
        let mut proxy_hosts = config.proxy_hosts.clone();
        proxy_hosts.extend(settings.proxy_hosts());
        Client {
            inner: Arc::new(Inner {
                proxied: OnceCell::new(),
                direct: OnceCell::new(),
                via: Default::default(),
                settings,
                setup: Setup {
                    user_agent: config.user_agent.clone(),
                    timeout: config.timeout,
                    deny_private_networks: config.deny_private_networks,
                    proxy_hosts: proxy_hosts.into(),
                },
                gate: Gate::new(config.gate),
                hosts,
                sends: Semaphore::new(config.concurrency.max(1)),
                max_body_bytes: config.max_body_bytes,
                max_redirects: config.max_redirects,
                slot_wait_limit: config.gate.max_gate_wait + config.timeout,
                key_mode: config.host_key,
            }),
        }
    }

    /// The connection pool of `route`, built on first use.
    async fn pool_for(&self, route: &site::Route) -> Result<reqwest::Client> {
        let cell = match route {
            site::Route::Direct => &self.inner.direct,
            site::Route::Env => &self.inner.proxied,
            site::Route::Via(proxy) => {
                let mut pools = self.inner.via.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(c) = pools.get(proxy) {
                    return Ok(c.clone());
                }
                let c = self.inner.setup.build(route)?;
                pools.insert(proxy.clone(), c.clone());
                return Ok(c);
            }
        };
        cell.get_or_try_init(|| async { self.inner.setup.build(route) })
            .await
            .cloned()
    }

    /// The owner's config the client sends by.
    pub(crate) fn settings(&self) -> &crate::settings::Settings {
        &self.inner.settings
    }

    /// The permits of `url`'s host when its config rule sets them.
    pub(crate) fn rule_permits(&self, url: &Url) -> Option<usize> {
        self.inner
            .settings
            .rule_for(url)
            .and_then(|r| r.host_concurrency)
    }

    /// Who a request for `url` that `led_by` led to is made as: a fingerprint of the
    /// credentials its first hop sends under the store's `key` (`None`: none sent), so a
    /// cached private body is served to the same user only.
    pub(crate) fn credential_id(
        &self,
        url: &Url,
        led_by: &Lineage,
        key: &crate::cache::CredentialKey,
    ) -> Option<String> {
        site::credential_id(&self.inner.settings, url, led_by, key)
    }

    /// Whether a request for `url` that `led_by` led to sends credentials on its first hop.
    pub(crate) fn sends_credentials(&self, url: &Url, led_by: &Lineage) -> bool {
        site::sends_credentials(&self.inner.settings, url, led_by)
    }

    /// The gate every send goes through.
    pub fn gate(&self) -> &Gate {
        &self.inner.gate
    }

    /// The gate's key for a request to `url` (its host, or its site: its config rule's
    /// `host_key`, else `--host-key`).
    pub(crate) fn key_of(&self, url: &Url) -> Option<HostKey> {
        let mode = self
            .inner
            .settings
            .rule_for(url)
            .and_then(|r| r.host_key)
            .unwrap_or(self.inner.key_mode);
        HostKey::for_url(url, mode)
    }

    /// What the gate keys requests on.
    pub(crate) fn key_mode(&self) -> crate::gate::KeyMode {
        self.inner.key_mode
    }

    /// The link to shared host state.
    pub(crate) fn hosts(&self) -> &SharedHosts {
        &self.inner.hosts
    }

    /// The warning every operation carries when host state cannot be shared, if any.
    pub(crate) fn standing_warning(&self) -> Option<StoreWarning> {
        self.inner.hosts.standing_warning()
    }

    /// A deadline `MAX_GATE_WAIT` from now: the budget of one call.
    pub fn deadline(&self) -> Instant {
        Instant::now() + self.inner.gate.params().max_gate_wait
    }

    /// Fetches `req.url`, following redirects, with every send gated.
    pub async fn get(&self, req: GetRequest<'_>) -> Exchange {
        let mut tally = Tally::default();
        let result = self.follow(&req, &mut tally).await;
        Exchange {
            result,
            attempts: tally.attempts,
            gate_wait: tally.gate_wait,
            warnings: tally.notes.into_vec(),
            window: tally.window,
        }
    }

    /// Waits until this permit's holder may send: the freshest shared state and its pacing
    /// (holding only the permit), then a global slot, then the host's shared send slot,
    /// right before the send. A slot another process holds is waited for like a busy
    /// permit, holding nothing meanwhile; the time shows in `gate_wait`.
    async fn clear_to_send(
        &self,
        permit: &mut Permit,
        req: &GetRequest<'_>,
        tally: &mut Tally,
    ) -> Result<Cleared<'_>> {
        let started = Instant::now();
        let r = self.clear_to_send_inner(permit, req, tally).await;
        tally.gate_wait += started.elapsed();
        r
    }

    async fn clear_to_send_inner(
        &self,
        permit: &mut Permit,
        req: &GetRequest<'_>,
        tally: &mut Tally,
    ) -> Result<Cleared<'_>> {
        let gate = &self.inner.gate;
        let hosts = &self.inner.hosts;
        let key = permit.host().clone();
        let mut pause = SLOT_POLL_MIN;
        let mut busy_since: Option<Instant> = None;
        loop {
            hosts.refresh(gate, &key, &mut tally.notes).await;
            permit
                .pace(req.deadline)
                .await
                .map_err(|t| gate_refusal(t, None, None))?;
            if let Some(window) = req.window.as_ref().filter(|_| tally.window.is_none()) {
                let place = window.clone().acquire_owned().await;
                tally.window =
                    Some(place.map_err(|_| Error::internal("the window of pages closed"))?);
                // Time passed while waiting for a place.
                continue;
            }
            let slot = self
                .inner
                .sends
                .acquire()
                .await
                .map_err(|_| Error::internal("send slots closed"))?;
            // Time passed while waiting for the slot.
            if !permit.pacing().is_zero() {
                continue;
            }
            match hosts.try_slot(gate, &key, &mut tally.notes).await {
                Slot::Unshared => {
                    return Ok(Cleared {
                        lease: None,
                        _slot: slot,
                    });
                }
                Slot::Taken(lease) => {
                    // The holder before us may have learned something as it let go.
                    hosts.refresh(gate, &key, &mut tally.notes).await;
                    if permit.pacing().is_zero() && lease.ensure().await {
                        return Ok(Cleared {
                            lease: Some(lease),
                            _slot: slot,
                        });
                    }
                    lease.release().await;
                }
                Slot::Busy => {
                    drop(slot);
                    let now = Instant::now();
                    let since = *busy_since.get_or_insert(now);
                    if now - since >= self.inner.slot_wait_limit {
                        return Err(Error::SlotHeld {
                            host: key.to_string(),
                            waited: now - since,
                        });
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(SLOT_POLL_MAX);
                }
            }
        }
    }

    async fn send_until_admitted(
        &self,
        permit: &mut Permit,
        url: &Url,
        req: &GetRequest<'_>,
        tally: &mut Tally,
        plan: &site::Plan<'_>,
    ) -> Result<send::Hop> {
        let mut sends = 0;
        let mut forbidden = 0;
        loop {
            let cleared = self.clear_to_send(permit, req, tally).await?;
            tally.attempts += 1;
            sends += 1;
            let sent = self
                .send_once(permit, url, req, &mut tally.notes, plan)
                .await;
            // The outcome is published before the slots go, so the next holder sees it.
            cleared.release(permit.host(), &mut tally.notes).await;
            let (status, retry_after_raw) = match sent? {
                Sent::Hop(hop) => return Ok(hop),
                Sent::Refused {
                    status,
                    retry_after_raw,
                } => (status, retry_after_raw),
            };
            // A 403 that persists is a block, not a window, unless it says when to come
            // back; 429 and 503 ask for a wait.
            if status == StatusCode::FORBIDDEN && retry_after_raw.is_none() {
                forbidden += 1;
                if forbidden >= 2 {
                    return Err(Error::HttpStatus {
                        status: status.as_u16(),
                        url: url.to_string(),
                    });
                }
            }
            if sends >= MAX_SENDS {
                return Err(Error::RateLimited {
                    wait: permit.pacing(),
                    http_status: Some(status.as_u16()),
                    retry_after: retry_after_raw,
                    host: permit.host().to_string(),
                });
            }
            // The request goes back through the gate at the front of its host's queue, for
            // the next send the gate knows to be safe: when that cannot fit the budget, the
            // call fails now, sending nothing.
            match permit.pace(req.deadline).await {
                Ok(slept) => tally.gate_wait += slept,
                Err(t) => return Err(gate_refusal(t, Some(status), retry_after_raw)),
            }
        }
    }

    /// Applies `event` (already applied to the gate on `before`) to the shared state.
    async fn publish(
        &self,
        key: &HostKey,
        before: crate::gate::HostState,
        event: Event,
        notes: &mut Notes,
    ) {
        self.inner
            .hosts
            .publish(&self.inner.gate, key, before, event, notes)
            .await;
    }
}

/// Response headers from `(name, value)` pairs, for the tests of the modules that read them.
#[cfg(test)]
pub(crate) fn test_headers(pairs: &[(&'static str, &str)]) -> reqwest::header::HeaderMap {
    let mut h = reqwest::header::HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, reqwest::header::HeaderValue::from_str(v).unwrap());
    }
    h
}
