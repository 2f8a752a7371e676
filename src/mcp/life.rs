//! A node's life as a balancer sees it: alive (`/healthz`), ready (`/readyz`: its store
//! answers, or is deliberately local, and it is not draining), and its drain: on a signal
//! it turns unready at once, refuses new requests with `503` (a balancer sends them to
//! another node), and waits for the requests in flight to be answered, within a bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::Notify;

use crate::ops::Service;

/// Whether the node drains, and the requests in flight.
#[derive(Debug, Default)]
pub(super) struct Life {
    draining: AtomicBool,
    work: AtomicUsize,
    idle: Notify,
}

/// A request in flight; it ends when this is dropped.
#[derive(Debug)]
pub(super) struct Working(Arc<Life>);

impl Drop for Working {
    fn drop(&mut self) {
        if self.0.work.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Life {
    /// A place among the requests in flight, or `None` once the node drains.
    pub(super) fn admit(self: &Arc<Life>) -> Option<Working> {
        // Counted before the check: a drain that begins meanwhile either sees this request
        // or is seen by it.
        self.work.fetch_add(1, Ordering::SeqCst);
        let working = Working(self.clone());
        (!self.draining.load(Ordering::SeqCst)).then_some(working)
    }

    /// Begins the drain: unready, and no new request is taken.
    pub(super) fn drain(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the node drains.
    pub(super) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Requests in flight now.
    pub(super) fn in_flight(&self) -> usize {
        self.work.load(Ordering::SeqCst)
    }

    /// Waits until no request is in flight, or `bound` passed; whether none is.
    pub(super) async fn settled(&self, bound: Duration) -> bool {
        let waiting = async {
            loop {
                let idle = self.idle.notified();
                if self.in_flight() == 0 {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(bound, waiting).await.is_ok()
    }
}

/// What `/healthz` and `/readyz` read.
#[derive(Clone)]
pub(super) struct Health {
    pub(super) life: Arc<Life>,
    pub(super) service: Arc<Service>,
}

/// `GET /healthz`: the process is alive and serving HTTP.
pub(super) async fn healthz() -> Response {
    plain(StatusCode::OK, "ok\n")
}

/// `GET /readyz`: `200 ready` when the node takes calls: not draining, and its store
/// answers (or is deliberately local); else `503` with a short reason. Says nothing of the
/// configuration.
pub(super) async fn readyz(State(health): State<Health>) -> Response {
    if health.life.draining() {
        return plain(StatusCode::SERVICE_UNAVAILABLE, "draining\n");
    }
    match health.service.ready().await {
        Ok(()) => plain(StatusCode::OK, "ready\n"),
        Err(why) => plain(StatusCode::SERVICE_UNAVAILABLE, &format!("{why}\n")),
    }
}

fn plain(status: StatusCode, text: &str) -> Response {
    let mut r = (status, text.to_owned()).into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_drain_refuses_new_work_and_waits_for_the_work_in_flight() {
        let life = Arc::new(Life::default());
        let first = life.admit().expect("taken before the drain");
        life.drain();
        assert!(life.admit().is_none(), "refused once draining");
        assert_eq!(life.in_flight(), 1);
        let waiter = {
            let life = life.clone();
            tokio::spawn(async move { life.settled(Duration::from_secs(30)).await })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!waiter.is_finished());
        drop(first);
        assert!(waiter.await.unwrap(), "settled once the last request ended");
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_gives_up_at_its_bound() {
        let life = Arc::new(Life::default());
        let _stuck = life.admit().unwrap();
        life.drain();
        let started = tokio::time::Instant::now();
        assert!(!life.settled(Duration::from_secs(10)).await);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
    }
}
