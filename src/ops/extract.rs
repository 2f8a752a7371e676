//! Where pages are read as articles, and how many at once: their own threads, one per page
//! in flight (so no page, however heavy, takes a thread from the feeds' parse pool or keeps
//! an ordinary page waiting for one), with stacks sized far past what the bounded shape of a
//! page needs; and a window of pages in flight per process (so a batch of pages holds a
//! bounded number of bodies in memory, not all of them).

use crate::sync::lock;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::article::{EXTRACTION_BUDGET, Stop};
use crate::error::{Error, ExtractionCut, Result};

/// Pages one process has in flight at once (fetched, waiting for a thread, or being read):
/// a batch of pages holds at most this many bodies (each at most `--max-body-bytes`).
pub(crate) const PAGES_IN_FLIGHT: usize = 8;

/// Each page thread's stack: a page reaches the extractors nested at most
/// `shape::MAX_DEPTH` deep (a tree builder may add up to three levels for each),
/// and the extractors' recursion takes well under this at that depth.
const PAGE_THREAD_STACK: usize = 64 << 20;

/// The longest a caller waits for a page once a thread has taken it: the CPU budget
/// ([`EXTRACTION_BUDGET`]) is checked between stages by the thread itself; this wall-clock
/// limit answers for a stage that runs on without reaching a check, with room for pages
/// sharing the cores.
const WALL_LIMIT: Duration = Duration::from_secs(60);

/// The window of pages in flight, shared by every call of a process.
#[derive(Debug, Clone)]
pub(crate) struct PageWindow(Arc<Semaphore>);

impl Default for PageWindow {
    fn default() -> Self {
        PageWindow(Arc::new(Semaphore::new(PAGES_IN_FLIGHT)))
    }
}

impl PageWindow {
    /// A place in the window, held until the page is read (or its call goes away).
    pub(crate) async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().acquire_owned().await.ok()
    }

    /// The window's places, for a send that takes one once its host's turn has come.
    pub(crate) fn semaphore(&self) -> Arc<Semaphore> {
        self.0.clone()
    }
}

/// When a page's extraction began, once it has, and since when it waits for its call's
/// share of the window, while it does: a call cut then says its page was being read, or
/// waited behind its call's other pages, not that its host kept it waiting.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extracting {
    /// When a thread began reading the page.
    reading: Arc<OnceLock<Instant>>,
    /// Since when the page waits for its call's share, while it does.
    queued: Arc<Mutex<Option<Instant>>>,
}

impl Extracting {
    /// The error of a call cut while the page was being read, or while it waited for a
    /// place among its call's pages, if it was.
    pub(crate) fn cut(&self, url: &str) -> Option<Error> {
        let (cut_by, since) = match self.reading.get() {
            Some(since) => (ExtractionCut::Call, *since),
            None => (ExtractionCut::Queue, (*lock(&self.queued))?),
        };
        Some(Error::ExtractionTimeout {
            url: crate::error::echo(url),
            cut_by,
            elapsed: since.elapsed(),
        })
    }
}

/// Pages one call has in flight at most: a call of heavy pages leaves the rest of the
/// window to other calls, so an ordinary page asked for beside them is read at once.
pub(crate) const CALL_SHARE: usize = PAGES_IN_FLIGHT - 2;

/// One call's share of the window ([`CALL_SHARE`] places), taken by each of its pages
/// before anything else and held until the page is read.
#[derive(Debug, Clone)]
pub(crate) struct CallShare(Arc<Semaphore>);

impl Default for CallShare {
    fn default() -> Self {
        CallShare(Arc::new(Semaphore::new(CALL_SHARE)))
    }
}

/// How long before its call's deadline a page still waiting for its call's share gives up:
/// it answers then, before the deadline drops the call's other pages (whose places, freed
/// at that instant, would let it in with no time left to use them).
const QUEUE_MARGIN: Duration = Duration::from_millis(200);

impl CallShare {
    /// A place in the call's share, waited for until shortly before `deadline`; while it
    /// waits, `extracting` says so. `Err`: the call's time ran out first (an
    /// `EXTRACTION_TIMEOUT` with `cut_by: "queue"`).
    pub(crate) async fn enter(
        &self,
        extracting: &Extracting,
        url: &str,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<OwnedSemaphorePermit> {
        if let Ok(place) = self.0.clone().try_acquire_owned() {
            return Ok(place);
        }
        *lock(&extracting.queued) = Some(Instant::now());
        let acquire = self.0.clone().acquire_owned();
        let place = match deadline {
            None => acquire.await.ok(),
            Some(d) => {
                let until = d
                    .checked_sub(QUEUE_MARGIN)
                    .unwrap_or_else(tokio::time::Instant::now);
                match tokio::time::timeout_at(until, acquire).await {
                    Ok(place) => place.ok(),
                    Err(_) => {
                        return Err(extracting
                            .cut(url)
                            .unwrap_or_else(|| Error::internal("a queued page lost its place")));
                    }
                }
            }
        };
        *lock(&extracting.queued) = None;
        place.ok_or_else(|| Error::internal("the call's share of pages closed"))
    }
}

/// Page threads alive at once, those of calls that went away (stopping at their next
/// check) included: past it, a page waits for one to end.
pub(crate) const LIVE_PAGE_THREADS: usize = 4 * PAGES_IN_FLIGHT;

/// The places for page threads.
fn live_threads() -> &'static Arc<Semaphore> {
    static LIVE: OnceLock<Arc<Semaphore>> = OnceLock::new();
    LIVE.get_or_init(|| Arc::new(Semaphore::new(LIVE_PAGE_THREADS)))
}

/// Runs `read` (a page's reading, given its stop signal) on a thread of its own. The stop
/// signal fires when this future is dropped (the call was cut or went away: the work stops
/// at its next check) or when the page has used up [`EXTRACTION_BUDGET`] of its thread's
/// CPU time; a caller waits for the work's own answer at most [`WALL_LIMIT`] once its thread
/// started. A thread per page, not a pool: a page whose call went away, still running to
/// its next check, never keeps a new page waiting for a thread.
pub(crate) async fn on_page_thread<T: Send + 'static>(
    url: &url::Url,
    extracting: &Extracting,
    read: impl FnOnce(&Stop) -> Result<T> + Send + 'static,
) -> Result<T> {
    let live = live_threads()
        .clone()
        .acquire_owned()
        .await
        .map_err(|_| Error::internal("the page threads closed"))?;
    let (stop, _cancel_on_drop) = Stop::new();
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("rss-page".to_owned())
        .stack_size(PAGE_THREAD_STACK)
        .spawn(move || {
            let _live = live;
            // A page whose call went away before its thread started is not read at all.
            if stop.check().is_err() {
                return;
            }
            let stop = stop.started(EXTRACTION_BUDGET);
            let _ = started_tx.send(());
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                || read(&stop),
            )));
        })
        .map_err(|e| Error::internal(format!("no page thread: {e}")))?;
    if started_rx.await.is_err() {
        return Err(Error::internal("a page thread did not take the page"));
    }
    let since = Instant::now();
    let _ = extracting.reading.set(since);
    // Counted as cut (EXTRACTION_TIMEOUT) unless it ends here.
    let mut counted = Counted {
        since,
        result: "timeout",
    };
    let r = match tokio::time::timeout(WALL_LIMIT, rx).await {
        Ok(Ok(Ok(r))) => r,
        Ok(_) => Err(Error::internal("a page thread failed")),
        Err(_) => Err(Error::ExtractionTimeout {
            url: url.to_string(),
            cut_by: ExtractionCut::Budget,
            elapsed: since.elapsed(),
        }),
    };
    counted.result = match &r {
        Ok(_) => "ok",
        Err(Error::ExtractionTimeout { .. }) => "timeout",
        Err(_) => "error",
    };
    r
}

/// A page's reading as the metrics count it: its result, and how long it ran.
struct Counted {
    since: Instant,
    result: &'static str,
}

impl Drop for Counted {
    fn drop(&mut self) {
        crate::metrics::extraction(self.result, self.since.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn issue_27_a_call_cut_while_its_page_is_read_says_so_and_the_work_stops() {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (saw, seen) = std::sync::mpsc::channel::<Result<(), crate::article::Stopped>>();
        let (running_tx, running) = tokio::sync::oneshot::channel::<()>();
        let extracting = Extracting::default();
        let url = url::Url::parse("http://127.0.0.1/page").unwrap();
        let mut work = Box::pin(on_page_thread(&url, &extracting, move |stop| {
            let _ = running_tx.send(());
            // The extractor at work, until the test lets it go on to its next check.
            let _ = released.recv();
            let _ = saw.send(stop.check());
            Ok(())
        }));
        tokio::select! {
            _ = &mut work => panic!("the page cannot be read before it is let go"),
            _ = running => {}
        }
        // Let the call see its page taken by a thread (as a deadline finds it).
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut work)
                .await
                .is_err()
        );
        assert!(Extracting::default().cut("page").is_none(), "not read yet");
        let Some(Error::ExtractionTimeout { cut_by, .. }) = extracting.cut("page") else {
            panic!("a cut while reading is EXTRACTION_TIMEOUT");
        };
        assert_eq!(cut_by, ExtractionCut::Call);
        // The call goes away: the work, at its next check, stops.
        drop(work);
        release.send(()).unwrap();
        assert_eq!(
            tokio::task::spawn_blocking(move || seen.recv().unwrap())
                .await
                .unwrap(),
            Err(crate::article::Stopped::Cancelled)
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_waits_only_for_live_threads_and_one_whose_call_went_away_is_not_read() {
        let url = url::Url::parse("http://127.0.0.1/page").unwrap();
        // Every page thread busy until let go (as pages of calls that went away, still
        // running to their next check).
        let (release, released) = std::sync::mpsc::channel::<()>();
        let released = Arc::new(std::sync::Mutex::new(released));
        let (running_tx, mut running) = tokio::sync::mpsc::unbounded_channel::<()>();
        let mut busy = Vec::new();
        for _ in 0..LIVE_PAGE_THREADS {
            let released = released.clone();
            let url = url.clone();
            let running_tx = running_tx.clone();
            busy.push(tokio::spawn(async move {
                on_page_thread(&url, &Extracting::default(), move |_| {
                    let _ = running_tx.send(());
                    let _ = released.lock().unwrap().recv();
                    Ok(())
                })
                .await
            }));
        }
        for _ in 0..LIVE_PAGE_THREADS {
            running.recv().await.unwrap();
        }
        let read = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = read.clone();
        let extracting = Extracting::default();
        let queued = on_page_thread(&url, &extracting, move |_| {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        });
        assert!(
            tokio::time::timeout(Duration::from_millis(100), queued)
                .await
                .is_err()
        );
        for _ in 0..LIVE_PAGE_THREADS {
            release.send(()).unwrap();
        }
        for b in busy {
            b.await.unwrap().unwrap();
        }
        // The caller went away while it waited: nothing was read.
        assert!(!read.load(std::sync::atomic::Ordering::SeqCst));
        // With threads free again, a page is read at once.
        let again = on_page_thread(&url, &Extracting::default(), |_| Ok(7)).await;
        assert_eq!(again.unwrap(), 7);
    }
}
