//! The loop that checks one watched feed while it has listeners: hold the feed's lease (a
//! formality without a shared store), wait for the time its schedule gives, check, tell the
//! listeners (and, through the store, every other process) of a change, plan the next
//! check, leave what was found for whoever checks next. And the task that hears the other
//! processes' word of changes.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::check::Checked;
use super::schedule::{self, Bounds, History, Rule};
use super::{Event, Inner};

/// How long a lease on checking a feed lives without renewal: a holder that dies (or
/// stops listening) leaves the feed to another process within this.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(10);
/// How often the holder renews its lease, while it waits and while it checks.
const LEASE_RENEW: Duration = Duration::from_secs(3);
/// How often a process that does not hold a feed's lease tries for it.
const LEASE_POLL: Duration = Duration::from_secs(5);
/// How often it reads the state the holder leaves, for word of a change, when the store
/// has no channel (files on one machine).
const STATE_POLL: Duration = Duration::from_secs(1);
/// How long the state a holder leaves is kept.
const STATE_TTL: Duration = Duration::from_secs(2 * 24 * 3600);

/// What the holder of a feed's lease leaves for the next one.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Shared {
    /// The digest of the items, as last read (hex).
    digest: Option<String>,
    /// When the next check is due (Unix ms).
    due_ms: u64,
    /// Since when the fleet watches the feed (Unix ms).
    since_ms: u64,
    /// When a change was last seen (Unix ms).
    changed_ms: Option<u64>,
    /// Checks that failed in a row.
    failures: u32,
}

impl Shared {
    /// The digest it holds.
    fn digest(&self) -> Option<u64> {
        self.digest
            .as_deref()
            .and_then(|d| u64::from_str_radix(d, 16).ok())
    }
}

/// Word of a change, as every process hears it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Word {
    /// The feed, as the store names it ([`crate::hosts::watch::tag`]: never its URL).
    feed: String,
    /// The digest of its items now (hex).
    digest: String,
    /// The process that checked.
    node: String,
}

/// Whether a renewal leaves the lease with this process: only a store that says another
/// holds it takes it away (one that cannot answer is not a reason to stop checking).
fn still_ours(renewed: Result<bool, crate::hosts::StoreError>) -> bool {
    !matches!(renewed, Ok(false))
}

/// Waits until Unix ms `due` on `inner`'s clock (the tokio clock underneath, so that paused
/// time drives it), renewing `uri`'s lease meanwhile when the store is shared: `false`
/// when the lease was lost.
async fn wait_until(inner: &Inner, uri: &str, due: u64) -> bool {
    loop {
        let left = Duration::from_millis(due.saturating_sub(inner.checker.now_ms()));
        if left.is_zero() {
            return true;
        }
        if !inner.store.shared() {
            tokio::time::sleep(left).await;
            continue;
        }
        tokio::time::sleep(left.min(LEASE_RENEW)).await;
        if !still_ours(inner.store.hold(uri, &inner.node, LEASE_TTL).await) {
            return false;
        }
    }
}

/// Checks `uri` now, renewing its lease while the check runs: `None` when the lease was
/// lost meanwhile (what the check found is left to the new holder).
async fn check(inner: &Inner, uri: &str) -> Option<Checked> {
    let checking = inner.checker.check(uri);
    tokio::pin!(checking);
    let mut lost = false;
    loop {
        tokio::select! {
            c = &mut checking => return (!lost).then_some(c),
            () = tokio::time::sleep(LEASE_RENEW), if inner.store.shared() => {
                lost |= !still_ours(inner.store.hold(uri, &inner.node, LEASE_TTL).await);
            }
        }
    }
}

/// Checks `uri` for as long as it is watched (the task is aborted with its last listener).
pub(super) async fn run(inner: Arc<Inner>, uri: Arc<str>) {
    let bounds = Bounds {
        min: inner.limits.min_interval,
        max: inner.limits.max_interval,
    };
    let mut history = History {
        since_ms: inner.checker.now_ms(),
        ..History::default()
    };
    let mut due = history.since_ms;
    let mut holding = !inner.store.shared();
    let mut read_once = false;
    let mut first_try = true;
    loop {
        if !holding {
            let held = inner.store.hold(&uri, &inner.node, LEASE_TTL).await;
            let first = std::mem::replace(&mut first_try, false);
            match held {
                Ok(true) => {
                    holding = true;
                    if let Some(s) = load(&inner, &uri).await {
                        // Another process checked it: what it found stands, and so does its
                        // plan when this process takes the feed over from it. A feed nobody
                        // watched a moment ago is checked at once for its new listeners.
                        if !first {
                            due = due.max(s.due_ms);
                        }
                        history = History {
                            since_ms: s.since_ms.min(history.since_ms),
                            changed_ms: s.changed_ms,
                            failures: s.failures,
                        };
                        if let Some(d) = s.digest() {
                            // What it last found is this process's baseline, or news.
                            heard(&inner, &uri, d, false);
                        }
                    }
                }
                Ok(false) => {
                    if inner.keep_items && !read_once {
                        // A watch that prints items needs them as they stand now, to know
                        // which are new when another process says the feed changed.
                        read_once = true;
                        baseline(&inner, &uri).await;
                    }
                    if inner.store.has_channel() {
                        tokio::time::sleep(LEASE_POLL).await;
                    } else {
                        // No channel: the holder's state tells of a change.
                        if let Some(d) = load(&inner, &uri).await.and_then(|s| s.digest()) {
                            heard(&inner, &uri, d, false);
                        }
                        tokio::time::sleep(STATE_POLL).await;
                    }
                    continue;
                }
                Err(e) => {
                    // The store cannot say who checks: this process does, as it would with
                    // no store (other processes may too, until the store answers again).
                    tracing::warn!(
                        "cannot hold the watch lease of {}, checking it here: {e}",
                        crate::redact::text(&uri)
                    );
                    holding = true;
                }
            }
        }
        if !wait_until(&inner, &uri, due).await {
            holding = false;
            continue;
        }
        let Some(checked) = check(&inner, &uri).await else {
            holding = false;
            continue;
        };
        let now = checked.findings.now_ms;
        match (checked.digest, &checked.error) {
            (Some(digest), _) => {
                history.failures = 0;
                let before = match inner.swap_digest(&uri, digest) {
                    Err(()) => return,
                    Ok(before) => before,
                };
                let changed = before.is_some_and(|b| b != digest);
                if changed {
                    history.changed_ms = Some(now);
                    publish(&inner, &uri, digest).await;
                }
                let items = checked.items.clone();
                let uri2 = uri.clone();
                if !read_once {
                    // This process's first reading: what its listeners start from. (A change
                    // since the digest it adopted is one for listeners of digests, not of
                    // items.)
                    read_once = true;
                    inner.tell(
                        &uri,
                        &Event::Read {
                            uri: uri2.clone(),
                            items: items.clone(),
                        },
                    );
                    if changed && !inner.keep_items {
                        inner.tell(&uri, &Event::Changed { uri: uri2, items });
                    }
                } else if changed {
                    inner.tell(&uri, &Event::Changed { uri: uri2, items });
                }
            }
            (None, error) => {
                history.failures = history.failures.saturating_add(1);
                if let Some(error) = error {
                    let event = Event::Failed {
                        uri: uri.clone(),
                        error: error.clone(),
                    };
                    inner.tell(&uri, &event);
                }
            }
        }
        let (next, rule) = schedule::next(&checked.findings, &history, &bounds);
        log_plan(&uri, now, next, rule);
        due = next;
        if inner.store.shared() {
            save(&inner, &uri, &history, due, checked.digest).await;
        }
    }
}

/// Reads `uri` once to learn its items as they stand (a process that does not check it).
async fn baseline(inner: &Inner, uri: &Arc<str>) {
    let checked = inner.checker.check(uri).await;
    let event = match (checked.digest, checked.error) {
        (Some(d), _) => {
            if inner.swap_digest(uri, d).is_err() {
                return;
            }
            Event::Read {
                uri: uri.clone(),
                items: checked.items,
            }
        }
        (None, Some(error)) => Event::Failed {
            uri: uri.clone(),
            error,
        },
        (None, None) => return,
    };
    inner.tell(uri, &event);
}

fn log_plan(uri: &str, now: u64, due: u64, rule: Rule) {
    tracing::debug!(
        feed = %crate::redact::text(uri),
        in_ms = due.saturating_sub(now),
        ?rule,
        "next check planned"
    );
}

async fn load(inner: &Inner, uri: &str) -> Option<Shared> {
    match inner.store.load(uri).await {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).ok(),
        Ok(None) => None,
        Err(e) => {
            tracing::debug!(
                "cannot read the watch state of {}: {e}",
                crate::redact::text(uri)
            );
            None
        }
    }
}

async fn save(inner: &Inner, uri: &str, h: &History, due: u64, digest: Option<u64>) {
    let known = digest.or_else(|| {
        crate::sync::lock(&inner.state)
            .feeds
            .get(uri)
            .and_then(|w| w.digest)
    });
    let s = Shared {
        digest: known.map(|d| format!("{d:016x}")),
        due_ms: due,
        since_ms: h.since_ms,
        changed_ms: h.changed_ms,
        failures: h.failures,
    };
    let bytes = serde_json::to_vec(&s).unwrap_or_default();
    if let Err(e) = inner.store.save(uri, &bytes, STATE_TTL).await {
        tracing::debug!(
            "cannot leave the watch state of {}: {e}",
            crate::redact::text(uri)
        );
    }
}

async fn publish(inner: &Inner, uri: &str, digest: u64) {
    if !inner.store.shared() {
        return;
    }
    let word = Word {
        feed: crate::hosts::watch::tag(uri),
        digest: format!("{digest:016x}"),
        node: inner.node.clone(),
    };
    let bytes = serde_json::to_vec(&word).unwrap_or_default();
    if let Err(e) = inner.store.publish(&bytes).await {
        tracing::warn!(
            "cannot tell the fleet that {} changed: {e}",
            crate::redact::text(uri)
        );
    }
}

/// Hears other processes' word of changes, for as long as the watcher lives: a change of
/// a feed this process watches is told to its listeners (read here first when the watch
/// keeps items, since this process did not read them).
pub(super) async fn hear(
    watcher: std::sync::Weak<Inner>,
    mut rx: tokio::sync::broadcast::Receiver<Arc<[u8]>>,
) {
    loop {
        let raw = match rx.recv().await {
            Ok(raw) => raw,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("{n} watch messages were missed");
                continue;
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        // The watcher's own task: it ends with the watcher.
        let Some(inner) = watcher.upgrade() else {
            return;
        };
        let Ok(word) = serde_json::from_slice::<Word>(&raw) else {
            continue;
        };
        let Ok(digest) = u64::from_str_radix(&word.digest, 16) else {
            continue;
        };
        if word.node == inner.node {
            continue;
        }
        // The feeds watched here that the word names (one URL, as each listener wrote it).
        let named: Vec<Arc<str>> = crate::sync::lock(&inner.state)
            .feeds
            .keys()
            .filter(|u| crate::hosts::watch::tag(u) == word.feed)
            .cloned()
            .collect();
        for uri in named {
            heard(&inner, &uri, digest, true);
        }
    }
}

/// What another process found of `uri`: `digest`, by word of a change (`news`) or read from
/// the state it left. One unlike this process's is told to the listeners (read here first
/// when the watch keeps items, since this process did not read them); with nothing known
/// yet, only word of a change is news, a state read is the baseline.
fn heard(inner: &Arc<Inner>, uri: &Arc<str>, digest: u64, news: bool) {
    match inner.swap_digest(uri, digest) {
        // Not watched here, or already known.
        Err(()) => return,
        Ok(Some(before)) if before == digest => return,
        Ok(None) if !news => return,
        Ok(_) => {}
    }
    if inner.keep_items {
        let (inner, uri) = (inner.clone(), uri.clone());
        tokio::spawn(async move {
            let checked = inner.checker.check(&uri).await;
            let event = match (checked.items, checked.error) {
                (items @ Some(_), _) => Event::Changed {
                    uri: uri.clone(),
                    items,
                },
                (None, Some(error)) => Event::Failed {
                    uri: uri.clone(),
                    error,
                },
                (None, None) => Event::Changed {
                    uri: uri.clone(),
                    items: None,
                },
            };
            inner.tell(&uri, &event);
        });
    } else {
        let event = Event::Changed {
            uri: uri.clone(),
            items: None,
        };
        inner.tell(uri, &event);
    }
}
