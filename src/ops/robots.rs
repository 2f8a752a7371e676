//! robots.txt for page reads (the MCP server's, and the CLI's with `--respect-robots`):
//! asked of every hop a page read takes, each against its own host's robots.txt
//! ([`RobotsGuard`], the [`HopCheck`] the client runs before each hop is sent), read
//! through the cache and the gate under the call's cache flags, trusted for at most a day
//! (or `--max-freshness`), and its `Crawl-delay` taught to the gate before the next send.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::cached::{CachedGet, Got};
use super::{CacheMode, Context};
use crate::article::robots::{self, Robots};
use crate::cache::{Entry, Kind, now_ms};
use crate::error::{Error, Result};
use crate::http::{HopCheck, HopFuture, Lineage};

/// What the `Accept` header asks for when fetching a robots.txt.
const ACCEPT_ROBOTS: &str = "text/plain, */*;q=0.5";
/// The longest a robots.txt is used without asking its host again, whatever it says of its
/// own freshness (RFC 9309 §2.4: "SHOULD NOT use the cached version for more than 24
/// hours"); `--max-freshness` shortens it.
pub(crate) const ROBOTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// How long a robots.txt that could not be read (`5xx`, no answer) disallows its host.
const ROBOTS_FAILURE_HOLD: Duration = Duration::from_secs(60);
/// The least time a robots.txt's `Crawl-delay` spaces its host after it was read (one that
/// says `max-age=0` still governs the pages read right after it).
const CRAWL_DELAY_LEAST: Duration = Duration::from_secs(60);
/// Origins whose robots.txt a process keeps parsed before the stale ones are dropped.
const MEMO_PRUNE_ABOVE: usize = 4096;

/// What a host's robots.txt allows, as this process last read it.
#[derive(Debug, Clone)]
pub(crate) enum RobotsRead {
    /// Read (or a `4xx`: allow all).
    Rules(Arc<Robots>),
    /// Could not be read: every page of the host is disallowed for now, because of this.
    Unavailable(String),
    /// Its address is one the client refuses (a private network): so is every page of the
    /// host, with that refusal (`INVALID_URL`), never a robots verdict.
    Refused {
        /// Which address, and what kind.
        reason: String,
    },
}

/// One origin's robots.txt as this process read it, and how old it is.
#[derive(Debug, Clone)]
pub(crate) struct Known {
    read: RobotsRead,
    /// When the copy's response arrived (Unix ms).
    received_ms: u64,
    /// Until when (Unix ms) the copy is used with no request by a call that keeps to the
    /// cache's freshness.
    fresh_until_ms: u64,
    /// When this process read it (a call that asks the origin again uses only what it read
    /// itself).
    read_at: Instant,
}

/// Parsed robots.txt files by robots.txt URL.
#[derive(Debug, Default)]
pub(crate) struct RobotsMemo {
    /// What was read, by robots.txt URL.
    known: std::sync::Mutex<HashMap<String, Known>>,
    /// A lock per gate key whose robots.txt is being read, so pages read at once wait for
    /// one read instead of each sending their own.
    reading: std::sync::Mutex<HashMap<String, std::sync::Weak<tokio::sync::Mutex<()>>>>,
}

impl RobotsMemo {
    /// The lock of reading a robots.txt of gate key `key` (made when nobody holds one).
    fn reading(&self, key: &str) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.reading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = locks.get(key).and_then(std::sync::Weak::upgrade) {
            return held;
        }
        locks.retain(|_, w| w.strong_count() > 0);
        let lock = std::sync::Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(key.to_owned(), std::sync::Arc::downgrade(&lock));
        lock
    }
}

/// Until when (Unix ms) a robots.txt that arrived at `received_ms` is used with no request:
/// what the server said (`fresh_until_ms`; a day when it said nothing), but never past a
/// day or `max_freshness` after it arrived.
pub(crate) fn fresh_until(
    received_ms: u64,
    fresh_until_ms: Option<u64>,
    max_freshness: Duration,
) -> u64 {
    let cap = u64::try_from(max_freshness.min(ROBOTS_MAX_AGE).as_millis()).unwrap_or(u64::MAX);
    let capped = received_ms.saturating_add(cap);
    fresh_until_ms.map_or(capped, |u| u.min(capped))
}

/// Whether a copy (not read by this call) may be used at `now_ms` with no request under
/// `mode`: within its freshness (the default), younger than `--max-age` and a day, or never
/// (`--refresh`, `--no-cache`, revalidation: the call asks the origin once).
fn usable(mode: CacheMode, received_ms: u64, fresh_until_ms: u64, now_ms: u64) -> bool {
    // `--max-age` asks for any copy younger than it, whatever the server said.
    match mode {
        CacheMode::Fresh => now_ms < fresh_until_ms,
        CacheMode::MaxAge(max) => {
            let max = u64::try_from(max.min(ROBOTS_MAX_AGE).as_millis()).unwrap_or(u64::MAX);
            now_ms.saturating_sub(received_ms) < max
        }
        CacheMode::Revalidate | CacheMode::Refresh | CacheMode::Off => false,
    }
}

/// The robots.txt check of one call's page reads: every hop of each page, against the
/// hop's own host, with the call's cache flags.
#[derive(Debug)]
pub(crate) struct RobotsGuard<'a> {
    ctx: &'a Context,
    mode: CacheMode,
    /// When the call began: under `--refresh`, `--no-cache` and revalidation, a robots.txt
    /// this process read before then is asked again (once per call).
    since: Instant,
    /// Whether robots.txt is honoured where no config rule says (the MCP server; the CLI
    /// with `--respect-robots`).
    by_default: bool,
}

impl<'a> RobotsGuard<'a> {
    /// The check for a call under `mode` that began at `since`.
    pub(crate) fn new(ctx: &'a Context, mode: CacheMode, since: Instant) -> RobotsGuard<'a> {
        RobotsGuard {
            ctx,
            mode,
            since,
            by_default: true,
        }
    }

    /// This check, honouring robots.txt where no config rule says only when `on`.
    pub(crate) fn by_default(mut self, on: bool) -> RobotsGuard<'a> {
        self.by_default = on;
        self
    }

    /// Whether `page` is checked: its config rule's `respect_robots`, else the default.
    fn applies(&self, page: &Url) -> bool {
        self.ctx
            .settings
            .rule_for(page)
            .and_then(|r| r.respect_robots)
            .unwrap_or(self.by_default)
    }

    /// Whether any hop may be checked (by default, or by a rule that asks for it).
    pub(crate) fn applies_anywhere(&self) -> bool {
        self.by_default
            || self
                .ctx
                .settings
                .rules
                .iter()
                .any(|r| r.respect_robots == Some(true))
    }

    /// `Ok` when the robots.txt of `page`'s origin lets us read it; else
    /// `ROBOTS_DISALLOWED` naming the rule (or why the robots.txt could not be read).
    /// `reached` is the whole chain that led to `page`, `page` last: a robots.txt read for
    /// it is a request that chain led to, and carries only what the chain allows (none of
    /// a rule's secrets over http after an https step).
    pub(crate) async fn allow(
        &self,
        page: &Url,
        reached: &Lineage,
        deadline: Instant,
    ) -> Result<()> {
        if !self.applies(page) {
            return Ok(());
        }
        let Some(robots_url) = robots::robots_url(page) else {
            return Ok(());
        };
        let origin = robots_url.as_str().to_owned();
        let mut known = self.known(&origin);
        // Pages of one origin read at once: the first reads its robots.txt, the others wait
        // for that read (within their deadline) and use it. The lock is the gate key's, so
        // under a site key one host's robots.txt is read (and its delay learned) before a
        // sibling's is asked for.
        let lock_key = self
            .ctx
            .client
            .key_of(&robots_url)
            .map_or_else(|| origin.clone(), |k| k.as_str().to_owned());
        let reading = self.ctx.robots.reading(&lock_key);
        let _reading = match known {
            Some(_) => None,
            None => match tokio::time::timeout_at(deadline, reading.lock()).await {
                Ok(held) => {
                    known = self.known(&origin);
                    Some(held)
                }
                Err(_) => None,
            },
        };
        let known = match known {
            Some(k) => {
                if let RobotsRead::Rules(r) = &k.read {
                    self.keep_delay(page, r, &k).await;
                }
                k
            }
            None => {
                let k = self.read(page, &robots_url, reached, deadline).await;
                let mut memo = self
                    .ctx
                    .robots
                    .known
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                if memo.len() > MEMO_PRUNE_ABOVE {
                    let now = now_ms();
                    memo.retain(|_, k| now < k.fresh_until_ms);
                }
                memo.insert(origin.clone(), k.clone());
                k
            }
        };
        let disallow = |rule: Option<String>, reason: String| Error::RobotsDisallowed {
            url: page.to_string(),
            robots_url: origin.clone(),
            rule,
            reason,
        };
        match known.read {
            RobotsRead::Rules(r) => match r.disallowed(page) {
                None => Ok(()),
                Some(rule) => Err(disallow(Some(rule.clone()), rule)),
            },
            RobotsRead::Unavailable(why) => Err(disallow(None, why)),
            RobotsRead::Refused { reason, .. } => Err(Error::PrivateNetwork {
                input: page.to_string(),
                reason,
            }),
        }
    }

    /// What this process knows of `origin`'s robots.txt that this call may use.
    fn known(&self, origin: &str) -> Option<Known> {
        let memo = self
            .ctx
            .robots
            .known
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let k = memo.get(origin)?;
        let failed = matches!(
            k.read,
            RobotsRead::Unavailable(_) | RobotsRead::Refused { .. }
        );
        let now = now_ms();
        let ok = if k.read_at >= self.since {
            // Read by this call: used for the rest of it (a failure only for its hold).
            !failed || now < k.fresh_until_ms
        } else if failed {
            now < k.fresh_until_ms && matches!(self.mode, CacheMode::Fresh | CacheMode::MaxAge(_))
        } else {
            usable(self.mode, k.received_ms, k.fresh_until_ms, now)
        };
        ok.then(|| k.clone())
    }

    /// Reads `robots_url` (from the cache when the call's flags allow, else through the
    /// gate, led by `reached`), parses it, and teaches the gate its crawl delay for
    /// `page`'s host.
    async fn read(
        &self,
        page: &Url,
        robots_url: &Url,
        reached: &Lineage,
        deadline: Instant,
    ) -> Known {
        let ctx = self.ctx;
        // Matched against the User-Agent this host is sent (its rule's, else the global one).
        let agent = ctx
            .settings
            .rule_for(robots_url)
            .and_then(|r| r.user_agent.as_deref())
            .unwrap_or(&ctx.config.user_agent);
        let token = robots::agent_token(agent);
        let key = robots_url.as_str();
        let cap = ctx.config.max_freshness;
        let read_at = Instant::now();
        let from_entry = |e: &Entry| {
            let until = fresh_until(e.meta.received_ms, e.meta.fresh_until_ms, cap);
            (e.meta.received_ms, until)
        };
        let cache = ctx.cache_of(Kind::Robots, self.mode);
        let (cached, _) = super::cached::load(cache.as_ref(), key).await;
        let now = now_ms();
        let hit = cached.filter(|e| {
            let (received, until) = from_entry(e);
            usable(self.mode, received, until, now)
        });
        let (body, received_ms, fresh_until_ms) = match hit {
            Some(e) => {
                let (received, until) = from_entry(&e);
                (Some(e.body), received, until)
            }
            None => {
                let mode = match self.mode {
                    CacheMode::Off => CacheMode::Off,
                    _ => CacheMode::Revalidate,
                };
                let f = ctx
                    .cached_get(CachedGet {
                        kind: Kind::Robots,
                        key,
                        url: robots_url.clone(),
                        mode,
                        stale_if_error: false,
                        since: None,
                        deadline,
                        accept: ACCEPT_ROBOTS,
                        refuse: None,
                        hops: None,
                        window: None,
                        led_by: reached.clone(),
                    })
                    .await;
                match f.got {
                    Got::Fresh(resp) => {
                        let server = resp.freshness.lifetime.map(|l| {
                            let l = u64::try_from(l.as_millis()).unwrap_or(u64::MAX);
                            resp.received_ms.saturating_add(l)
                        });
                        let until = fresh_until(resp.received_ms, server, cap);
                        (Some(resp.body), resp.received_ms, until)
                    }
                    Got::Cached(e, _) | Got::Stale(e) => {
                        let (received, until) = from_entry(&e);
                        (Some(e.body), received, until)
                    }
                    Got::Failed(
                        Error::HttpStatus { status, .. }
                        | Error::AuthRequired { status, .. }
                        | Error::Blocked { status, .. },
                    ) if (400..500).contains(&status) => {
                        let now = now_ms();
                        (None, now, fresh_until(now, None, cap))
                    }
                    Got::Failed(e) => {
                        let read = match e {
                            Error::PrivateNetwork { reason, .. } => RobotsRead::Refused { reason },
                            e => RobotsRead::Unavailable(format!(
                                "its robots.txt could not be read: {e}"
                            )),
                        };
                        let now = now_ms();
                        let hold = u64::try_from(ROBOTS_FAILURE_HOLD.as_millis()).unwrap_or(0);
                        return Known {
                            read,
                            received_ms: now,
                            fresh_until_ms: now.saturating_add(hold),
                            read_at,
                        };
                    }
                }
            }
        };
        let robots = Arc::new(match body {
            Some(b) => Robots::parse(&token, &b.into_vec()),
            None => Robots::allow_all(),
        });
        let known = Known {
            read: RobotsRead::Rules(robots.clone()),
            received_ms,
            fresh_until_ms,
            read_at,
        };
        self.teach_delay(page, robots.crawl_delay, &known).await;
        known
    }

    /// Until when the gate keeps `known`'s crawl delay: while the copy is fresh, and at
    /// least a minute after it was read.
    fn delay_until(known: &Known) -> Instant {
        let left = known.fresh_until_ms.saturating_sub(now_ms());
        Instant::now() + Duration::from_millis(left).max(CRAWL_DELAY_LEAST)
    }

    /// Tells the gate (and the shared host state) the crawl delay `page`'s robots.txt asks.
    async fn teach_delay(&self, page: &Url, delay: Option<Duration>, known: &Known) {
        let client = &self.ctx.client;
        let Some(host) = client.key_of(page) else {
            return;
        };
        let gate = client.gate();
        let before = gate.state_of(&host);
        let event = gate.learn_crawl_delay(&host, delay, Self::delay_until(known));
        let mut notes = crate::hosts::Notes::default();
        client
            .hosts()
            .publish(gate, &host, before, event, &mut notes)
            .await;
    }

    /// Before a read of `page` from a robots.txt already known: its crawl delay holds in the
    /// gate (a sibling's shorter-lived larger delay under a site key may have lapsed, or the
    /// host's state been cleared).
    async fn keep_delay(&self, page: &Url, r: &Robots, known: &Known) {
        let Some(delay) = r.crawl_delay else { return };
        let Some(host) = self.ctx.client.key_of(page) else {
            return;
        };
        let live = self
            .ctx
            .client
            .gate()
            .state_of(&host)
            .live_crawl_delay(Instant::now());
        if live < Some(delay) {
            self.teach_delay(page, Some(delay), known).await;
        }
    }
}

impl HopCheck for RobotsGuard<'_> {
    fn check<'a>(&'a self, url: &'a Url, reached: &'a Lineage, deadline: Instant) -> HopFuture<'a> {
        Box::pin(self.allow(url, reached, deadline))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3_600_000;

    #[test]
    fn issue_27_a_robots_txt_is_fresh_for_a_day_or_max_freshness_at_most() {
        let t = 1_800_000_000_000;
        let year = Some(t + 365 * 24 * H);
        assert_eq!(
            fresh_until(t, year, Duration::from_secs(30 * 24 * 3600)),
            t + 24 * H
        );
        assert_eq!(fresh_until(t, year, Duration::from_secs(3600)), t + H);
        assert_eq!(
            fresh_until(t, None, Duration::from_secs(7 * 24 * 3600)),
            t + 24 * H
        );
        assert_eq!(
            fresh_until(t, Some(t + 60_000), Duration::from_secs(3600)),
            t + 60_000
        );
        assert_eq!(fresh_until(u64::MAX - 5, None, Duration::MAX), u64::MAX);
    }

    #[test]
    fn issue_27_the_cache_flags_decide_whether_a_copy_is_used() {
        let t = 1_800_000_000_000;
        let until = t + 2 * H;
        assert!(usable(CacheMode::Fresh, t, until, t + H));
        assert!(!usable(CacheMode::Fresh, t, until, t + 2 * H));
        assert!(usable(
            CacheMode::MaxAge(Duration::from_secs(3 * 3600)),
            t,
            until,
            t + 2 * H + 1
        ));
        assert!(!usable(
            CacheMode::MaxAge(Duration::from_secs(1800)),
            t,
            until,
            t + H
        ));
        assert!(
            !usable(
                CacheMode::MaxAge(Duration::from_secs(48 * 3600)),
                t,
                until,
                t + 25 * H
            ),
            "a day at most, whatever --max-age says"
        );
        for mode in [CacheMode::Revalidate, CacheMode::Refresh, CacheMode::Off] {
            assert!(!usable(mode, t, until, t + 1), "{mode:?}");
        }
    }
}
