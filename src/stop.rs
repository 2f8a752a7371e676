//! When work a page's shape decides the cost of must stop: the call that wanted it is gone,
//! or the page has used up the CPU time extraction gives one page. Checked between the stages
//! of reading a page and, within a stage of ours, every few thousand tokens.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How much CPU time reading one page as an article may take on its thread, all stages
/// together; past it the page is `EXTRACTION_TIMEOUT` (`details.cut_by: "budget"`). CPU
/// time, not wall time, so pages read side by side do not use up each other's budget. An
/// ordinary page takes tens of milliseconds, the heaviest within the bounds of `shape` about
/// three seconds.
pub(crate) const EXTRACTION_BUDGET: Duration = Duration::from_secs(10);

/// The CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Why work stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// Nobody waits for it any more (the call was cut or went away).
    Cancelled,
    /// The page used up [`EXTRACTION_BUDGET`].
    OverBudget,
}

/// A stop signal: cancelled by dropping its [`StopOnDrop`], or once the thread that
/// checks it has used its budget of CPU time.
#[derive(Debug, Clone)]
pub(crate) struct Stop {
    cancelled: Arc<AtomicBool>,
    /// The checking thread's CPU time when the work started, and at which its budget is
    /// spent.
    budget: Option<(Duration, Duration)>,
}

/// Cancels its [`Stop`] when dropped (the waiting call's future goes away).
#[derive(Debug)]
pub(crate) struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Stop {
    /// A signal that stops when the returned guard is dropped; its budget starts with the
    /// work ([`Stop::started`]).
    pub(crate) fn new() -> (Stop, StopOnDrop) {
        let flag = Arc::new(AtomicBool::new(false));
        let stop = Stop {
            cancelled: flag.clone(),
            budget: None,
        };
        (stop, StopOnDrop(flag))
    }

    /// The same signal, stopping too once the calling thread (the one that does the work)
    /// has used `budget` more CPU time.
    pub(crate) fn started(self, budget: Duration) -> Stop {
        let now = thread_cpu();
        Stop {
            budget: Some((now, now.saturating_add(budget))),
            ..self
        }
    }

    /// A signal that never stops (work bounded by its input's shape alone, tests, fuzzing,
    /// benchmarks).
    pub(crate) fn never() -> Stop {
        Stop {
            cancelled: Arc::new(AtomicBool::new(false)),
            budget: None,
        }
    }

    /// The CPU time the calling thread has spent on the work since it started (zero for a
    /// signal with no budget).
    pub(crate) fn spent(&self) -> Duration {
        self.budget.map_or(Duration::ZERO, |(from, _)| {
            thread_cpu().saturating_sub(from)
        })
    }

    /// `Err` once the work should stop.
    pub(crate) fn check(&self) -> Result<(), Stopped> {
        if self.cancelled.load(Ordering::Relaxed) {
            return Err(Stopped::Cancelled);
        }
        if self.budget.is_some_and(|(_, until)| thread_cpu() >= until) {
            return Err(Stopped::OverBudget);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_stops_when_its_guard_goes_or_its_budget_is_spent() {
        let (stop, guard) = Stop::new();
        let stop = stop.started(Duration::from_secs(3600));
        assert_eq!(stop.check(), Ok(()));
        drop(guard);
        assert_eq!(stop.check(), Err(Stopped::Cancelled));
        let (spent, _guard) = Stop::new();
        assert_eq!(spent.check(), Ok(()), "no budget before the work starts");
        assert_eq!(
            spent.started(Duration::ZERO).check(),
            Err(Stopped::OverBudget)
        );
        // Time asleep is not CPU time: a budget of a second outlasts a longer sleep.
        let (stop, _guard) = Stop::new();
        let stop = stop.started(Duration::from_millis(200));
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(stop.check(), Ok(()));
        assert_eq!(Stop::never().check(), Ok(()));
        // What was spent is the thread's CPU time since the work started.
        let (stop, _guard) = Stop::new();
        let stop = stop.started(Duration::from_secs(3600));
        let t = thread_cpu();
        while thread_cpu() < t + Duration::from_millis(20) {}
        assert!(stop.spent() >= Duration::from_millis(20));
        assert_eq!(Stop::never().spent(), Duration::ZERO);
    }
}
