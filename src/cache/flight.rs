//! One fetch of a URL at a time: a call that needs a URL another call is fetching (in this
//! process, or, with the fleet's shared tier, on another node) waits for that fetch to end
//! and looks in the caches again, instead of sending a request of its own. Only calls that
//! would serve a copy fetched a moment ago wait (`fresh` and `--max-age`); a wait never
//! passes the call's deadline.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::OwnedMutexGuard;
use tokio::time::Instant;

use super::Kind;
use super::shared::{Flight, Flying, SharedCache};
use crate::sync::lock;

/// The first and the longest pause between looks at another node's flight.
const POLL_MIN: Duration = Duration::from_millis(10);
const POLL_MAX: Duration = Duration::from_millis(100);

type Gate = Arc<tokio::sync::Mutex<()>>;
type Live = HashMap<(Kind, String), Weak<tokio::sync::Mutex<()>>>;

/// The fetches under way in this process, by kind and URL.
#[derive(Debug, Default)]
pub(crate) struct Flights {
    live: Mutex<Live>,
}

/// A call's place as the one fetching its URL: the others wait until it is dropped.
pub(crate) struct Boarded {
    _here: Option<OwnedMutexGuard<()>>,
    _fleet: Option<Flight>,
    /// Another fetch of the URL ended while this call waited: the caches may hold its copy.
    pub waited: bool,
}

impl Flights {
    fn gate(&self, kind: Kind, url: &str) -> Gate {
        let mut live = lock(&self.live);
        if let Some(g) = live.get(&(kind, url.to_owned())).and_then(Weak::upgrade) {
            return g;
        }
        live.retain(|_, w| w.strong_count() > 0);
        let g: Gate = Arc::default();
        live.insert((kind, url.to_owned()), Arc::downgrade(&g));
        g
    }

    /// Waits (until `deadline` at most) for the fetches of `url` under way here and, with
    /// `fleet`, on other nodes, then holds the URL's flight for this call.
    pub(crate) async fn board(
        &self,
        kind: Kind,
        url: &str,
        fleet: Option<&SharedCache>,
        deadline: Instant,
    ) -> Boarded {
        let gate = self.gate(kind, url);
        let (here, mut waited) = match gate.clone().try_lock_owned() {
            Ok(g) => (Some(g), false),
            Err(_) => (
                tokio::time::timeout_at(deadline, gate.lock_owned())
                    .await
                    .ok(),
                true,
            ),
        };
        let mut fleet_flight = None;
        if let Some(tier) = fleet {
            match tier.take_flight(kind, url).await {
                Flying::Mine(f) => fleet_flight = Some(f),
                Flying::Unknown => {}
                Flying::Another => {
                    waited = true;
                    crate::metrics::shared_cache("waited");
                    let mut pause = POLL_MIN;
                    while Instant::now() + pause < deadline && tier.flight_held(kind, url).await {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(POLL_MAX);
                    }
                    if let Flying::Mine(f) = tier.take_flight(kind, url).await {
                        fleet_flight = Some(f);
                    }
                }
            }
        }
        Boarded {
            _here: here,
            _fleet: fleet_flight,
            waited,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_second_call_for_a_url_waits_for_the_first_fetch_and_others_do_not() {
        let flights = Arc::new(Flights::default());
        let far = Instant::now() + Duration::from_secs(60);
        let first = flights
            .board(Kind::Feed, "https://a.example/f", None, far)
            .await;
        assert!(!first.waited);
        let other = flights
            .board(Kind::Feed, "https://b.example/f", None, far)
            .await;
        assert!(!other.waited, "another URL never waits");
        let second = {
            let flights = flights.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let b = flights
                    .board(Kind::Feed, "https://a.example/f", None, far)
                    .await;
                (b.waited, started.elapsed())
            })
        };
        tokio::time::sleep(Duration::from_secs(2)).await;
        drop(first);
        let (waited, took) = second.await.unwrap();
        assert!(waited);
        assert_eq!(took, Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_at_the_deadline() {
        let flights = Flights::default();
        let far = Instant::now() + Duration::from_secs(60);
        let _first = flights
            .board(Kind::Page, "https://a.example/p", None, far)
            .await;
        let started = Instant::now();
        let soon = started + Duration::from_secs(3);
        let second = flights
            .board(Kind::Page, "https://a.example/p", None, soon)
            .await;
        assert!(second.waited);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }
}
