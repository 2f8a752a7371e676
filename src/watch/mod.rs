//! Watching feeds while someone listens: an MCP client's `subscriptions/listen`, or a
//! foreground `rss watch`. No daemon: a feed is checked only while it has a listener, and
//! its checks stop with the last one.
//!
//! - `schedule` — when a feed is checked next (pure)
//! - `check`    — one check: a fetch through the cache and the gate, and a digest of the items
//! - `feed`     — the loop that checks one feed, and tells its listeners of a change
//! - `news`     — what a foreground `rss watch` prints of it: each new item once
//!
//! One [`Watcher`] per process checks each feed once, whatever the number of listeners;
//! with the fleet's Redis (`--gate-store`), one process of the fleet checks it (a lease in
//! the store) and every process's listeners are told (a message on the store's channel).

pub(crate) mod check;
mod feed;
mod news;
pub(crate) mod schedule;

pub use news::News;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::hosts::watch::WatchStore;
use crate::model::{ErrorObject, Item};
use crate::sync::lock;
use check::Checker;

/// What a listener hears.
#[derive(Debug, Clone)]
pub enum Event {
    /// This process read the feed for the first time while watching it: its items as they
    /// stand (when the watch keeps items).
    Read {
        /// The feed, as subscribed.
        uri: Arc<str>,
        /// Its items.
        items: Option<Arc<Vec<Item>>>,
    },
    /// The feed's items changed: one added, removed or changed.
    Changed {
        /// The feed, as subscribed.
        uri: Arc<str>,
        /// Its items now, when this process read them and the watch keeps items.
        items: Option<Arc<Vec<Item>>>,
    },
    /// A check failed; the watch goes on (and tries again later).
    Failed {
        /// The feed, as subscribed.
        uri: Arc<str>,
        /// Why.
        error: ErrorObject,
    },
}

/// Why a subscription was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not an http(s) URL with a host (only feeds on the web are watched).
    NotAFeedUrl(String),
    /// An address the server refuses (`--deny-private-networks`).
    PrivateNetwork(String),
    /// Past the cap on one listener's subscriptions.
    ListenerCap(usize),
    /// Past the cap on the server's subscriptions, every listener's together.
    ServerCap(usize),
    /// The server is shutting down.
    Closing,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotAFeedUrl(why) => write!(f, "not a feed URL this watches ({why})"),
            Refusal::PrivateNetwork(why) => write!(f, "refused: {why}"),
            Refusal::ListenerCap(n) => {
                write!(f, "over the cap of {n} subscriptions per listener")
            }
            Refusal::ServerCap(n) => write!(f, "over the server's cap of {n} subscriptions"),
            Refusal::Closing => f.write_str("the server is shutting down"),
        }
    }
}

/// The watch's bounds, as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The shortest interval a feed that states nothing is checked at.
    pub min_interval: Duration,
    /// The longest interval between two checks of a feed.
    pub max_interval: Duration,
    /// The most subscriptions one listener holds.
    pub per_listener: usize,
    /// The most subscriptions the process holds, every listener's together.
    pub per_server: usize,
}

impl Limits {
    /// The limits of `config`.
    pub fn of(config: &crate::config::Config) -> Limits {
        Limits {
            min_interval: config.watch.min_interval,
            max_interval: config.watch.max_interval,
            per_listener: config.watch.max_listener_subscriptions,
            per_server: config.watch.max_subscriptions,
        }
    }
}

/// One process's watches.
#[derive(Clone)]
pub struct Watcher {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("feeds", &lock(&self.inner.state).feeds.len())
            .finish()
    }
}

struct Inner {
    checker: Arc<dyn Checker>,
    store: Arc<dyn WatchStore>,
    limits: Limits,
    /// Refuse non-public addresses written in a URL (`--deny-private-networks`).
    deny_private: bool,
    /// A process whose listeners print items reads them itself on word of a change
    /// another process saw.
    keep_items: bool,
    /// This process's name in the store's leases and messages.
    node: String,
    state: std::sync::Mutex<State>,
    closed: CancellationToken,
    next_listener: AtomicU64,
    /// The task that hears other processes' word, started with the first subscription.
    hearing: std::sync::OnceLock<AbortOnDrop>,
}

#[derive(Default)]
struct State {
    feeds: HashMap<Arc<str>, Watched>,
    /// Subscriptions held, every listener's.
    subscriptions: usize,
    /// Subscriptions acknowledged to a listen whose listener is not made yet: when, and
    /// how many. They count against the caps until it is made (or [`RESERVED_FOR`] passes).
    reserved: Vec<(std::time::Instant, usize)>,
}

/// How long an acknowledged listen's subscriptions are held for it before it subscribes.
const RESERVED_FOR: std::time::Duration = std::time::Duration::from_secs(30);

impl State {
    fn reserved_now(&mut self) -> usize {
        self.reserved.retain(|(at, _)| at.elapsed() < RESERVED_FOR);
        self.reserved.iter().map(|(_, n)| n).sum()
    }
}

/// A watched feed.
struct Watched {
    listeners: HashMap<u64, mpsc::UnboundedSender<Event>>,
    /// The digest of its items as this process last knew them.
    digest: Option<u64>,
    /// Its checks, stopped when it goes.
    _task: AbortOnDrop,
}

/// A task aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A listener's subscriptions: dropped, they end (and a feed nobody else listens to is no
/// longer checked).
pub struct Listener {
    id: u64,
    uris: Vec<Arc<str>>,
    rx: mpsc::UnboundedReceiver<Event>,
    inner: Arc<Inner>,
}

impl Listener {
    /// The feeds it listens to, as subscribed.
    pub fn uris(&self) -> impl Iterator<Item = &str> {
        self.uris.iter().map(|u| &**u)
    }

    /// The next event; `None` once the watcher closes.
    pub async fn next(&mut self) -> Option<Event> {
        tokio::select! {
            biased;
            () = self.inner.closed.cancelled() => None,
            e = self.rx.recv() => e,
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let mut state = lock(&self.inner.state);
        for uri in &self.uris {
            let Some(w) = state.feeds.get_mut(uri) else {
                continue;
            };
            if w.listeners.remove(&self.id).is_none() {
                continue;
            }
            state.subscriptions = state.subscriptions.saturating_sub(1);
            if state.feeds.get(uri).is_some_and(|w| w.listeners.is_empty()) {
                // Its last listener: its checks stop, and its lease goes back.
                state.feeds.remove(uri);
                let (store, uri, node) = (
                    self.inner.store.clone(),
                    uri.clone(),
                    self.inner.node.clone(),
                );
                if store.shared()
                    && let Ok(rt) = tokio::runtime::Handle::try_current()
                {
                    rt.spawn(async move { store.release(&uri, &node).await });
                }
            }
        }
    }
}

impl Watcher {
    /// A watcher that checks through `checker` and meets other processes in `store`;
    /// `keep_items` hands each check's items to listeners.
    pub(crate) fn new(
        checker: Arc<dyn Checker>,
        store: Arc<dyn WatchStore>,
        limits: Limits,
        deny_private: bool,
        keep_items: bool,
    ) -> Watcher {
        Watcher {
            inner: Arc::new(Inner {
                checker,
                store,
                limits,
                deny_private,
                keep_items,
                node: crate::readers::random_id(),
                state: Default::default(),
                closed: CancellationToken::new(),
                next_listener: AtomicU64::new(1),
                hearing: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The watcher of a running `rss`: checks through `ctx` (bodies rendered as `render`),
    /// shared through the store its config names.
    pub fn of_context(
        ctx: Arc<crate::ops::Context>,
        render: crate::feed::RenderOptions,
        keep_items: bool,
    ) -> Watcher {
        let limits = Limits::of(&ctx.config);
        let deny = ctx.config.deny_private_networks;
        let store = crate::hosts::watch::open(&ctx.config);
        let checker = Arc::new(check::FetchChecker::new(ctx, render, keep_items));
        Watcher::new(checker, store, limits, deny, keep_items)
    }

    /// What of `uris` a listen would get now and why the rest would not, as a listen whose
    /// acknowledgement holds `own` subscriptions (not subscribed yet) sees it: its own held
    /// room left out.
    pub fn admit_as(&self, uris: &[String], own: usize) -> (Vec<String>, Vec<(String, Refusal)>) {
        let mut state = lock(&self.inner.state);
        self.admit_in(&mut state, uris, own)
    }

    /// Like [`Watcher::admit_as`], and what is taken is held for the listen being
    /// acknowledged until it [`Watcher::subscribe`]s it: two listens acknowledged at once
    /// never both count the same room under the caps.
    pub fn reserve(&self, uris: &[String]) -> (Vec<String>, Vec<(String, Refusal)>) {
        let mut state = lock(&self.inner.state);
        let (taken, refused) = self.admit_in(&mut state, uris, 0);
        if !taken.is_empty() {
            state
                .reserved
                .push((std::time::Instant::now(), taken.len()));
        }
        (taken, refused)
    }

    fn admit_in(
        &self,
        state: &mut State,
        uris: &[String],
        own: usize,
    ) -> (Vec<String>, Vec<(String, Refusal)>) {
        let limits = self.inner.limits;
        let held = (state.subscriptions + state.reserved_now()).saturating_sub(own);
        let mut taken: Vec<String> = Vec::new();
        let mut refused = Vec::new();
        for uri in uris {
            if taken.contains(uri) || refused.iter().any(|(u, _)| u == uri) {
                continue;
            }
            let why = if self.inner.closed.is_cancelled() {
                Some(Refusal::Closing)
            } else {
                self.refusal_of(uri).or_else(|| {
                    if taken.len() >= limits.per_listener {
                        Some(Refusal::ListenerCap(limits.per_listener))
                    } else if held + taken.len() >= limits.per_server {
                        Some(Refusal::ServerCap(limits.per_server))
                    } else {
                        None
                    }
                })
            };
            match why {
                Some(r) => refused.push((uri.clone(), r)),
                None => taken.push(uri.clone()),
            }
        }
        (taken, refused)
    }

    /// Why `uri` is not a feed this watches, if it is not.
    fn refusal_of(&self, uri: &str) -> Option<Refusal> {
        let url = match url::Url::parse(uri) {
            Err(e) => return Some(Refusal::NotAFeedUrl(e.to_string())),
            Ok(u) if !matches!(u.scheme(), "http" | "https") => {
                return Some(Refusal::NotAFeedUrl(format!(
                    "the scheme {:?} is not http or https",
                    crate::error::echo(u.scheme())
                )));
            }
            Ok(u) if u.host_str().is_none_or(str::is_empty) => {
                return Some(Refusal::NotAFeedUrl("the URL has no host".into()));
            }
            Ok(u) => u,
        };
        if self.inner.deny_private
            && let Err(e) = crate::http::refuse_literal(&url)
        {
            return Some(Refusal::PrivateNetwork(e.to_string()));
        }
        None
    }

    /// Subscribes a new listener to what it may have of `uris` (see [`Watcher::admit`]);
    /// a feed nobody watched yet is checked at once, then on its schedule.
    pub fn subscribe(&self, uris: &[String]) -> (Listener, Vec<(String, Refusal)>) {
        let id = self.inner.next_listener.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut state = lock(&self.inner.state);
        // The room its acknowledgement held is its own now.
        if let Some(i) = state.reserved.iter().position(|(_, n)| *n == uris.len()) {
            state.reserved.remove(i);
        }
        let (taken, refused) = self.admit_in(&mut state, uris, 0);
        let mut subscribed = Vec::with_capacity(taken.len());
        for uri in taken {
            let uri: Arc<str> = Arc::from(uri);
            let inner = self.inner.clone();
            let watched = state.feeds.entry(uri.clone()).or_insert_with(|| Watched {
                listeners: HashMap::new(),
                digest: None,
                _task: AbortOnDrop(tokio::spawn(feed::run(inner, uri.clone()))),
            });
            watched.listeners.insert(id, tx.clone());
            state.subscriptions += 1;
            subscribed.push(uri);
        }
        drop(state);
        if self.inner.store.shared() && !subscribed.is_empty() {
            self.inner.hearing.get_or_init(|| {
                let rx = self.inner.store.messages();
                AbortOnDrop(tokio::spawn(feed::hear(Arc::downgrade(&self.inner), rx)))
            });
        }
        let listener = Listener {
            id,
            uris: subscribed,
            rx,
            inner: self.inner.clone(),
        };
        (listener, refused)
    }

    /// Ends every listener (their `next` gives `None`) and every check, then waits (a
    /// second at most) until the leases held in a shared store are given back, so another
    /// process takes the feeds over at once.
    pub async fn shut(&self) {
        self.inner.closed.cancel();
        let feeds: Vec<Arc<str>> = {
            let mut state = lock(&self.inner.state);
            let feeds = state.feeds.keys().cloned().collect();
            state.feeds.clear();
            feeds
        };
        if self.inner.store.shared() {
            let release = async {
                for f in feeds {
                    self.inner.store.release(&f, &self.inner.node).await;
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(1), release).await;
        }
    }

    /// Feeds watched now.
    #[cfg(test)]
    pub fn watched(&self) -> usize {
        lock(&self.inner.state).feeds.len()
    }
}

impl Inner {
    /// Tells `uri`'s listeners of `event`.
    fn tell(&self, uri: &str, event: &Event) {
        let state = lock(&self.state);
        if let Some(w) = state.feeds.get(uri) {
            for tx in w.listeners.values() {
                let _ = tx.send(event.clone());
            }
        }
    }

    /// Records `digest` as `uri`'s; the one it replaces (`None`: the first, or the feed is
    /// no longer watched: then nothing is recorded).
    fn swap_digest(&self, uri: &str, digest: u64) -> Result<Option<u64>, ()> {
        let mut state = lock(&self.state);
        let w = state.feeds.get_mut(uri).ok_or(())?;
        Ok(w.digest.replace(digest))
    }
}

#[cfg(test)]
mod tests;
