//! A reader's marks in one feed: the item ids it has acknowledged, each with when, and the
//! ids of the feed's latest document a delivery saw (the last marks to go). Pure: the
//! store keeps it as one record, changed under that record's lock.

use std::collections::HashSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::feed::id_key;

/// The most ids kept per reader and feed.
pub const MAX_MARKS_PER_FEED: usize = 10_000;
/// The longest a mark is kept once its item has left the feed's latest document.
pub const MARK_MAX_AGE: Duration = Duration::from_secs(180 * 86_400);

/// How many marks a feed keeps, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// At most this many ids.
    pub max_ids: usize,
    /// A mark not in the latest document goes this long after it was recorded.
    pub max_age_ms: u64,
}

/// The bounds `rss` keeps ([`MAX_MARKS_PER_FEED`], [`MARK_MAX_AGE`]).
pub(crate) const BOUNDS: Bounds = Bounds {
    max_ids: MAX_MARKS_PER_FEED,
    max_age_ms: MARK_MAX_AGE.as_millis() as u64,
};

/// One reader's marks in one feed, as stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Marks {
    /// Format version.
    pub v: u8,
    /// The feed, as requested.
    pub feed_url: String,
    /// `(id, when it was recorded in Unix ms)`, in the order recorded: first to go first.
    pub marks: Vec<(String, u64)>,
    /// Every id of the feed's latest document a recorded delivery read.
    pub latest: Vec<String>,
    /// When that document was read (Unix ms).
    pub latest_ms: u64,
}

impl Marks {
    /// No marks yet in `feed_url`.
    pub(crate) fn new(feed_url: &str) -> Marks {
        Marks {
            v: 1,
            feed_url: feed_url.to_owned(),
            ..Marks::default()
        }
    }

    /// The marked ids, as [`id_key`]s.
    pub(crate) fn ids(&self) -> HashSet<u64> {
        self.marks.iter().filter_map(|(id, _)| id_key(id)).collect()
    }

    /// When the oldest and the newest mark were recorded.
    pub(crate) fn span(&self) -> (Option<u64>, Option<u64>) {
        let times = self.marks.iter().map(|(_, t)| *t);
        (times.clone().min(), times.max())
    }

    /// Records `ids` (first to go first) at `now_ms`, with `present` the ids of the
    /// document they were delivered from, read at `read_ms`; then keeps to `bounds`.
    /// Returns how many were new and how many were already marked.
    pub(crate) fn record(
        &mut self,
        ids: &[String],
        present: &[String],
        read_ms: u64,
        now_ms: u64,
        bounds: &Bounds,
    ) -> (usize, usize) {
        let mut known = self.ids();
        let (mut new, mut already) = (0, 0);
        for id in ids {
            // Only our own ids are ever marked; anything else is not one.
            let Some(key) = id_key(id) else { continue };
            if known.insert(key) {
                self.marks.push((id.clone(), now_ms));
                new += 1;
            } else {
                already += 1;
            }
        }
        if !present.is_empty() && read_ms >= self.latest_ms {
            self.latest = present.to_vec();
            self.latest_ms = read_ms;
        }
        self.keep_to(now_ms, bounds);
        (new, already)
    }

    /// Drops the marks past `bounds`: first the ones no longer in the latest document
    /// (past the age, then the oldest past the count), the latest document's own last.
    pub(crate) fn keep_to(&mut self, now_ms: u64, bounds: &Bounds) {
        let latest: HashSet<&str> = self.latest.iter().map(String::as_str).collect();
        self.marks.retain(|(id, at)| {
            latest.contains(id.as_str()) || now_ms.saturating_sub(*at) <= bounds.max_age_ms
        });
        let Some(mut excess) = self.marks.len().checked_sub(bounds.max_ids) else {
            return;
        };
        let mut gone = vec![false; self.marks.len()];
        for in_latest in [false, true] {
            for (i, (id, _)) in self.marks.iter().enumerate() {
                if excess == 0 {
                    break;
                }
                if !gone[i] && latest.contains(id.as_str()) == in_latest {
                    gone[i] = true;
                    excess -= 1;
                }
            }
        }
        let mut i = 0;
        self.marks.retain(|_| {
            i += 1;
            !gone[i - 1]
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(range: std::ops::Range<u32>) -> Vec<String> {
        range.map(|i| format!("{i:016x}")).collect()
    }

    fn keys(range: std::ops::Range<u32>) -> HashSet<u64> {
        range.map(u64::from).collect()
    }

    #[test]
    fn recording_twice_records_nothing_new() {
        let mut m = Marks::new("https://a.example/feed");
        assert_eq!(m.record(&ids(0..3), &ids(0..5), 10, 10, &BOUNDS), (3, 0));
        assert_eq!(m.record(&ids(2..4), &ids(0..5), 11, 11, &BOUNDS), (1, 1));
        assert_eq!(m.ids().len(), 4);
        assert_eq!(m.span(), (Some(10), Some(11)));
    }

    #[test]
    fn the_count_bound_takes_what_left_the_feed_first_and_the_latest_document_last() {
        let small = Bounds {
            max_ids: 5,
            max_age_ms: u64::MAX,
        };
        let mut m = Marks::new("f");
        // Ten ids marked; the document now holds 6..10 and a later one 0..2 again.
        m.record(&ids(0..10), &ids(6..10), 1, 1, &small);
        assert_eq!(m.ids(), keys(5..10));
        // A document with more items than the bound: its oldest marks go, in order.
        m.record(&ids(10..20), &ids(10..20), 2, 2, &small);
        assert_eq!(m.ids(), keys(15..20));
    }

    #[test]
    fn the_age_bound_spares_the_latest_document() {
        let short = Bounds {
            max_ids: 100,
            max_age_ms: 1000,
        };
        let mut m = Marks::new("f");
        m.record(&ids(0..4), &ids(0..4), 0, 0, &short);
        // Later, items 0 and 1 left the feed; 2 and 3 are still in it.
        m.record(&ids(4..5), &ids(2..5), 5000, 5000, &short);
        assert_eq!(m.ids(), keys(2..5));
        // An older document's reading never replaces a newer one's.
        m.record(&[], &ids(0..1), 10, 6000, &short);
        assert_eq!(m.latest, ids(2..5));
    }
}
