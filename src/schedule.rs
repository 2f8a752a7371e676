//! Running a batch: one queue per host, so a slow or throttled host never delays others.
//!
//! Each host gets as many workers as it has gate permits; a worker takes the next job of
//! its host and runs it to completion. Waiting for a host (its permit, its cooldown)
//! happens in the gate and holds no global slot: the global cap on sends in flight is
//! taken by the HTTP client only around an actual send. Local files and invalid inputs
//! need no host; a small pool runs them (not one task each: a list of 100,000 bad inputs
//! must cost what its output costs). Results come back in job order.

use crate::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Mutex;

use futures::future::join_all;

use crate::gate::HostKey;

/// Workers for the jobs that need no host (local files, invalid inputs).
const LOCAL_WORKERS: usize = 8;

/// One host's pending jobs (each with its place in the batch): the host, its workers, the
/// queue.
type HostQueue<T> = (Option<HostKey>, usize, Mutex<VecDeque<Numbered<T>>>);

/// A job with its place in the batch.
type Numbered<T> = (usize, Job<T>);

/// A job and the host it needs (`None`: no network).
#[derive(Debug, Clone)]
pub struct Job<T> {
    /// The host the job sends to, if any.
    pub host: Option<HostKey>,
    /// The host's permits when its config rule sets them (`None`: the batch's `per_host`).
    pub permits: Option<usize>,
    /// What to run.
    pub payload: T,
}

/// Runs every job with `run`, `per_host` at a time per host, and returns the results in
/// job order. `on_done(done, total)` is called as each job finishes.
pub async fn run_batch<T, R, F, Fut>(
    jobs: Vec<Job<T>>,
    per_host: usize,
    run: F,
    on_done: impl Fn(usize, usize),
) -> Vec<R>
where
    F: Fn(T) -> Fut,
    Fut: Future<Output = R>,
{
    let total = jobs.len();
    let mut queues: Vec<(Option<HostKey>, VecDeque<Numbered<T>>)> = Vec::new();
    let mut by_host: HashMap<Option<HostKey>, usize> = HashMap::new();
    for (index, job) in jobs.into_iter().enumerate() {
        let slot = *by_host.entry(job.host.clone()).or_insert_with(|| {
            queues.push((job.host.clone(), VecDeque::new()));
            queues.len() - 1
        });
        queues[slot].1.push_back((index, job));
    }
    // Results as they finish, with their place in the batch; put in order at the end.
    let results: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(total));
    let queues: Vec<HostQueue<T>> = queues
        .into_iter()
        .map(|(h, q)| {
            // A host gets one worker per permit.
            let n = if h.is_none() {
                LOCAL_WORKERS.min(q.len())
            } else {
                let permits = q.iter().filter_map(|(_, j)| j.permits).max();
                permits.unwrap_or(per_host).max(1).min(q.len())
            };
            (h, n, Mutex::new(q))
        })
        .collect();
    let mut workers = Vec::new();
    for (_, n, queue) in &queues {
        for _ in 0..*n {
            workers.push(async {
                loop {
                    // The lock is never held across an await.
                    let next = lock(queue).pop_front();
                    let Some((index, job)) = next else { break };
                    let result = run(job.payload).await;
                    let done = {
                        let mut r = lock(&results);
                        r.push((index, result));
                        r.len()
                    };
                    on_done(done, total);
                }
            });
        }
    }
    join_all(workers).await;
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_unstable_by_key(|r| r.0);
    results.into_iter().map(|r| r.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::Instant;

    fn host(s: &str) -> Option<HostKey> {
        HostKey::from_url(&url::Url::parse(s).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_host_never_delays_the_others_and_order_is_kept() {
        let mut jobs = Vec::new();
        for i in 0..4 {
            jobs.push(Job {
                host: host("http://slow.test/"),
                permits: None,
                payload: (i, 10u64),
            });
        }
        for i in 4..8 {
            jobs.push(Job {
                host: host(&format!("http://fast{}.test/", i)),
                permits: None,
                payload: (i, 1u64),
            });
        }
        let t0 = Instant::now();
        let finished = Mutex::new(Vec::new());
        let out = run_batch(
            jobs,
            1,
            |(i, secs)| async move {
                tokio::time::sleep(Duration::from_secs(secs)).await;
                (i, Instant::now())
            },
            |done, total| finished.lock().unwrap().push((done, total)),
        )
        .await;
        let order: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
        // The fast hosts all finish after 1 s, while the slow host serializes 4 × 10 s.
        for (i, at) in &out[4..] {
            assert_eq!(*at - t0, Duration::from_secs(1), "job {i}");
        }
        assert_eq!(out[3].1 - t0, Duration::from_secs(40));
        let expected: Vec<(usize, usize)> = (1..=8).map(|d| (d, 8)).collect();
        assert_eq!(*finished.lock().unwrap(), expected);
    }
}
