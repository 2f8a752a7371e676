//! The watcher on paused time, with a checker that counts checks and serves what a test
//! sets: one check per feed whatever the listeners, on the schedule, stopping with the last
//! listener, within the caps.

use super::check::{Checked, Checker};
use super::schedule::Findings;
use super::*;
use crate::hosts::watch::LocalWatch;
use futures::future::BoxFuture;
use std::sync::Mutex;
use tokio::time::Instant;

/// What a fake feed serves: a digest (`None`: the check fails) and how long its copy
/// stays fresh.
#[derive(Clone, Copy)]
struct Serves {
    digest: Option<u64>,
    fresh: Option<Duration>,
}

struct Fake {
    start: Instant,
    feeds: Mutex<HashMap<String, Serves>>,
    /// (feed, ms since start) of every check.
    checks: Mutex<Vec<(String, u64)>>,
}

/// 2026-12-03T12:00:00Z.
const T0: u64 = 1_796_299_200_000;

impl Fake {
    fn new() -> Arc<Fake> {
        Arc::new(Fake {
            start: Instant::now(),
            feeds: Mutex::default(),
            checks: Mutex::default(),
        })
    }
    fn serve(&self, feed: &str, digest: Option<u64>, fresh: Option<Duration>) {
        lock(&self.feeds).insert(feed.into(), Serves { digest, fresh });
    }
    fn checks_of(&self, feed: &str) -> Vec<u64> {
        lock(&self.checks)
            .iter()
            .filter(|(f, _)| f == feed)
            .map(|(_, t)| *t)
            .collect()
    }
}

impl Checker for Fake {
    fn check<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Checked> {
        Box::pin(async move {
            let now = self.now_ms();
            lock(&self.checks).push((uri.to_owned(), now - T0));
            let s = lock(&self.feeds).get(uri).copied().unwrap_or(Serves {
                digest: Some(1),
                fresh: None,
            });
            Checked {
                findings: Findings {
                    now_ms: now,
                    confirmed_ms: now,
                    fresh_until_ms: s.fresh.map(|f| now + f.as_millis() as u64),
                    failed: s.digest.is_none(),
                    ..Findings::default()
                },
                digest: s.digest,
                items: None,
                error: s.digest.is_none().then(|| ErrorObject {
                    feed_url: Some(uri.to_owned()),
                    code: "NETWORK_ERROR".into(),
                    message: "down".into(),
                    details: Default::default(),
                }),
            }
        })
    }
    fn now_ms(&self) -> u64 {
        T0 + self.start.elapsed().as_millis() as u64
    }
}

fn limits() -> Limits {
    Limits {
        min_interval: Duration::from_secs(300),
        max_interval: Duration::from_secs(86_400),
        per_listener: 3,
        per_server: 5,
    }
}

fn watcher(fake: &Arc<Fake>) -> Watcher {
    Watcher::new(
        fake.clone(),
        Arc::new(LocalWatch::default()),
        limits(),
        true,
        false,
    )
}

fn uris(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Lets every task that can run do so, at the same instant.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn three_listeners_of_a_feed_cost_one_check_per_interval_and_each_is_told_once() {
    let fake = Fake::new();
    let a = "http://example.com/a.xml";
    fake.serve(a, Some(1), Some(Duration::from_secs(2)));
    let w = watcher(&fake);
    let mut listeners: Vec<Listener> = (0..3).map(|_| w.subscribe(&uris(&[a])).0).collect();
    settle().await;
    // The first check: at once, for all three.
    assert_eq!(fake.checks_of(a), [0]);
    for _ in 0..4 {
        tokio::time::advance(Duration::from_secs(2)).await;
        settle().await;
    }
    // Every two seconds, as fresh as the copy said, once for all three.
    assert_eq!(fake.checks_of(a), [0, 2000, 4000, 6000, 8000]);
    fake.serve(a, Some(2), Some(Duration::from_secs(2)));
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    for l in &mut listeners {
        assert!(matches!(l.next().await, Some(Event::Read { .. })));
        match l.next().await {
            Some(Event::Changed { uri, .. }) => assert_eq!(&*uri, a),
            other => panic!("{other:?}"),
        }
    }
    // The same items again: nobody is told anything.
    for _ in 0..2 {
        tokio::time::advance(Duration::from_secs(2)).await;
        settle().await;
    }
    for l in &mut listeners {
        assert!(l.rx.try_recv().is_err());
    }
    assert_eq!(fake.checks_of(a).len(), 8);
}

#[tokio::test(start_paused = true)]
async fn checks_stop_with_the_last_listener_and_not_before() {
    let fake = Fake::new();
    let a = "http://example.com/a.xml";
    fake.serve(a, Some(1), Some(Duration::from_secs(1)));
    let w = watcher(&fake);
    let (first, _) = w.subscribe(&uris(&[a]));
    let (second, _) = w.subscribe(&uris(&[a]));
    settle().await;
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    drop(first);
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    let while_one = fake.checks_of(a).len();
    assert_eq!(while_one, 7);
    assert_eq!(w.watched(), 1);
    drop(second);
    settle().await;
    assert_eq!(w.watched(), 0);
    tokio::time::advance(Duration::from_secs(60)).await;
    settle().await;
    assert_eq!(fake.checks_of(a).len(), while_one);
    // Watching it again starts again, with a check at once.
    let _again = w.subscribe(&uris(&[a]));
    settle().await;
    assert_eq!(fake.checks_of(a).len(), while_one + 1);
}

#[tokio::test(start_paused = true)]
async fn a_feed_that_states_nothing_is_checked_less_often_the_longer_it_stays_quiet() {
    let fake = Fake::new();
    let a = "http://example.com/quiet.xml";
    fake.serve(a, Some(1), None);
    let w = watcher(&fake);
    let _l = w.subscribe(&uris(&[a]));
    settle().await;
    for _ in 0..(40 * 60) {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    // 5 minutes (the minimum), then as long as the quiet so far: 5, 10, 20 minutes after.
    assert_eq!(
        fake.checks_of(a),
        [0, 300_000, 600_000, 1_200_000, 2_400_000]
    );
}

#[tokio::test(start_paused = true)]
async fn a_failing_feed_backs_off_and_says_why() {
    let fake = Fake::new();
    let a = "http://example.com/down.xml";
    fake.serve(a, None, None);
    let w = watcher(&fake);
    let (mut l, _) = w.subscribe(&uris(&[a]));
    settle().await;
    match l.next().await {
        Some(Event::Failed { error, .. }) => assert_eq!(error.code, "NETWORK_ERROR"),
        other => panic!("{other:?}"),
    }
    for _ in 0..(16 * 60) {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(fake.checks_of(a), [0, 300_000, 900_000]);
}

#[tokio::test(start_paused = true)]
async fn past_the_caps_the_subscriptions_over_them_are_named_and_the_rest_are_kept() {
    let fake = Fake::new();
    let w = watcher(&fake);
    let asked = uris(&[
        "http://e.com/1",
        "http://e.com/2",
        "http://e.com/1",
        "ftp://e.com/x",
        "http://127.0.0.1/local",
        "http://e.com/3",
        "http://e.com/4",
    ]);
    let (first, refused) = w.subscribe(&asked);
    assert_eq!(
        first.uris().collect::<Vec<_>>(),
        ["http://e.com/1", "http://e.com/2", "http://e.com/3"]
    );
    let reasons: Vec<(&str, &Refusal)> = refused.iter().map(|(u, r)| (u.as_str(), r)).collect();
    assert!(matches!(
        reasons[0],
        ("ftp://e.com/x", Refusal::NotAFeedUrl(_))
    ));
    assert!(matches!(
        reasons[1],
        ("http://127.0.0.1/local", Refusal::PrivateNetwork(_))
    ));
    assert_eq!(reasons[2], ("http://e.com/4", &Refusal::ListenerCap(3)));
    // Five for the server: two more, whoever asks.
    let (second, refused) = w.subscribe(&uris(&[
        "http://e.com/1",
        "http://e.com/5",
        "http://e.com/6",
    ]));
    assert_eq!(second.uris().count(), 2);
    assert_eq!(
        refused,
        [("http://e.com/6".to_owned(), Refusal::ServerCap(5))]
    );
    assert_eq!(w.admit_as(&uris(&["http://e.com/7"]), 0).0.len(), 0);
    drop(second);
    assert_eq!(w.admit_as(&uris(&["http://e.com/7"]), 0).0.len(), 1);
    // Two listens acknowledged before either subscribes never both count the same room:
    // the first's acknowledgement holds its two until it subscribes them.
    let (held, _) = w.reserve(&uris(&["http://e.com/7", "http://e.com/8"]));
    assert_eq!(held.len(), 2);
    let (other, refused) = w.reserve(&uris(&["http://e.com/9"]));
    assert!(other.is_empty(), "{other:?}");
    assert_eq!(
        refused,
        [("http://e.com/9".to_owned(), Refusal::ServerCap(5))]
    );
    // Its listener takes the held room, and what it asked is not refused for it.
    assert_eq!(w.admit_as(&held, held.len()).1, []);
    let (third, late) = w.subscribe(&held);
    assert_eq!((third.uris().count(), late.len()), (2, 0));
    drop(third);
    settle().await;
    // Closing ends every listener and refuses new ones.
    let mut first = first;
    w.shut().await;
    assert!(first.next().await.is_none());
    assert_eq!(
        w.subscribe(&uris(&["http://e.com/8"])).1,
        [("http://e.com/8".to_owned(), Refusal::Closing)]
    );
}

/// A shared store that cannot be reached.
#[derive(Debug)]
struct Down(tokio::sync::broadcast::Sender<Arc<[u8]>>);

impl WatchStore for Down {
    fn shared(&self) -> bool {
        true
    }
    fn hold<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Duration,
    ) -> BoxFuture<'a, Result<bool, crate::hosts::StoreError>> {
        Box::pin(async {
            Err(crate::hosts::StoreError::Timeout(Duration::from_millis(
                750,
            )))
        })
    }
    fn release<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
    fn load<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, crate::hosts::StoreError>> {
        Box::pin(async {
            Err(crate::hosts::StoreError::Timeout(Duration::from_millis(
                750,
            )))
        })
    }
    fn save<'a>(
        &'a self,
        _: &'a str,
        _: &'a [u8],
        _: Duration,
    ) -> BoxFuture<'a, Result<(), crate::hosts::StoreError>> {
        Box::pin(async {
            Err(crate::hosts::StoreError::Timeout(Duration::from_millis(
                750,
            )))
        })
    }
    fn publish<'a>(&'a self, _: &'a [u8]) -> BoxFuture<'a, Result<(), crate::hosts::StoreError>> {
        Box::pin(async {
            Err(crate::hosts::StoreError::Timeout(Duration::from_millis(
                750,
            )))
        })
    }
    fn messages(&self) -> tokio::sync::broadcast::Receiver<Arc<[u8]>> {
        self.0.subscribe()
    }
}

#[tokio::test(start_paused = true)]
async fn with_the_shared_store_down_a_feed_is_still_checked_on_its_schedule_and_changes_told() {
    let fake = Fake::new();
    let a = "http://example.com/a.xml";
    fake.serve(a, Some(1), Some(Duration::from_secs(2)));
    let store = Arc::new(Down(tokio::sync::broadcast::channel(1).0));
    let w = Watcher::new(fake.clone(), store, limits(), false, false);
    let (mut l, _) = w.subscribe(&uris(&[a]));
    settle().await;
    for _ in 0..5 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    assert_eq!(fake.checks_of(a), [0, 2000, 4000]);
    fake.serve(a, Some(2), Some(Duration::from_secs(2)));
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert!(matches!(l.next().await, Some(Event::Read { .. })));
    assert!(matches!(l.next().await, Some(Event::Changed { .. })));
}
