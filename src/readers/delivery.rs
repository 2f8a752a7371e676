//! A delivery as stored: the items one output handed to a reader, what acknowledging it
//! marks, and the reader's index of its deliveries (which bounds how many are kept). Pure.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a delivery waits for its acknowledgement: past it, its token is refused and its
/// items simply come again.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(7 * 86_400);
/// The most deliveries kept per reader (acknowledged ones until they expire included); a
/// newer one pushes out the oldest, whose token is then refused.
pub const MAX_DELIVERIES: usize = 500;

/// One feed's part of a delivery.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeliveredFeed {
    /// The feed, as requested.
    pub feed_url: String,
    /// The ids acknowledging marks: the output's items of this feed and the other members
    /// of their duplicate groups, first to go first.
    pub ids: Vec<String>,
    /// The other ids of the feed's document as the delivery read it (with `ids`, every id
    /// of it).
    pub others: Vec<String>,
}

/// The ids one feed's reading found marked, for the later pages of a walk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WalkFeed {
    /// The feed, as requested.
    pub feed_url: String,
    /// The ids left out as seen.
    pub seen: Vec<String>,
}

/// One delivery.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DeliveryRecord {
    /// Format version.
    pub v: u8,
    /// Its id (random, 16 hex digits).
    pub id: String,
    /// When it was given (Unix ms, the store's clock).
    pub issued_ms: u64,
    /// When its token stops being accepted.
    pub expires_ms: u64,
    /// The output's items it stands for.
    pub items: usize,
    /// The ids acknowledging it marks, over every feed.
    pub marks: usize,
    /// What it marks, per feed (emptied once acknowledged).
    pub feeds: Vec<DeliveredFeed>,
    /// The first page of a walk of pages: what each feed's reading found marked then.
    pub walk: Option<Vec<WalkFeed>>,
    /// When it was acknowledged.
    pub acked_ms: Option<u64>,
}

impl DeliveryRecord {
    /// The record once acknowledged at `now_ms`: what it marks goes (it is recorded), the
    /// walk stays for the pages still to come.
    pub(crate) fn acknowledged(mut self, now_ms: u64) -> DeliveryRecord {
        self.acked_ms.get_or_insert(now_ms);
        self.feeds.clear();
        self
    }
}

/// A reader's deliveries as its index lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Index {
    /// Format version.
    pub v: u8,
    /// Oldest first.
    pub deliveries: Vec<Listed>,
}

/// One delivery in the index.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Listed {
    /// The delivery's id.
    pub id: String,
    /// When it was given.
    pub issued_ms: u64,
    /// When its token stops being accepted.
    pub expires_ms: u64,
    /// Items it stands for.
    pub items: usize,
    /// Whether it was acknowledged.
    pub acked: bool,
    /// When its acknowledgement was committed (Unix ms), while what it marks may not all be
    /// recorded yet: from the commit on it counts as recorded, and whoever finds it so
    /// records the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applying: Option<u64>,
    /// Feeds whose marks were forgotten since that commit: its part in them is not recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
}

/// Where a delivery stands when an acknowledgement of it is committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    /// Committed now: what it marks is to be recorded.
    New,
    /// Committed before, and what it marks perhaps not all recorded yet.
    Applying,
    /// Acknowledged and recorded before.
    Done,
    /// Not listed: forgotten, or pushed out by newer deliveries.
    Gone,
}

impl Listed {
    /// `d` as its reader's index lists it, not yet acknowledged.
    pub(crate) fn of(d: &DeliveryRecord) -> Listed {
        Listed {
            id: d.id.clone(),
            issued_ms: d.issued_ms,
            expires_ms: d.expires_ms,
            items: d.items,
            ..Listed::default()
        }
    }
}

impl Index {
    /// Adds `d` at `now_ms`, dropping the expired deliveries and the oldest past `max`
    /// (never one whose acknowledgement is still being recorded); returns the ids dropped
    /// (their records go too).
    pub(crate) fn add(&mut self, d: Listed, now_ms: u64, max: usize) -> Vec<String> {
        let mut dropped = Vec::new();
        self.deliveries.retain(|l| {
            let live = l.expires_ms > now_ms || l.applying.is_some();
            if !live {
                dropped.push(l.id.clone());
            }
            live
        });
        self.deliveries.push(d);
        let mut excess = self.deliveries.len().saturating_sub(max.max(1));
        self.deliveries.retain(|l| {
            let keep = excess == 0 || l.applying.is_some();
            if !keep {
                excess -= 1;
                dropped.push(l.id.clone());
            }
            keep
        });
        dropped
    }

    /// Commits at `now_ms` the acknowledgement of the deliveries `ids`, all or none: none
    /// when one of them is not listed. Where each stood.
    pub(crate) fn commit(&mut self, ids: &[String], now_ms: u64) -> Vec<Commit> {
        let stood: Vec<Commit> = ids
            .iter()
            .map(|id| match self.deliveries.iter().find(|l| l.id == *id) {
                None => Commit::Gone,
                Some(l) if l.applying.is_some() => Commit::Applying,
                Some(l) if l.acked => Commit::Done,
                Some(_) => Commit::New,
            })
            .collect();
        if stood.contains(&Commit::Gone) {
            return stood;
        }
        for l in &mut self.deliveries {
            if !l.acked && ids.contains(&l.id) {
                l.acked = true;
                l.applying = Some(now_ms);
            }
        }
        stood
    }

    /// The delivery `id` while its acknowledgement is being recorded.
    pub(crate) fn applying(&self, id: &str) -> Option<&Listed> {
        self.deliveries
            .iter()
            .find(|l| l.id == id && l.applying.is_some())
    }

    /// Notes that what delivery `id` marks is all recorded.
    pub(crate) fn acked(&mut self, id: &str) {
        for l in &mut self.deliveries {
            if l.id == id {
                l.acked = true;
                l.applying = None;
                l.skip.clear();
            }
        }
    }

    /// Notes that the marks of `feed_url` were forgotten: no acknowledgement committed
    /// before records its part in it. Whether anything changed.
    pub(crate) fn forgot(&mut self, feed_url: &str) -> bool {
        let mut changed = false;
        for l in &mut self.deliveries {
            if l.applying.is_some() && !l.skip.iter().any(|f| f == feed_url) {
                l.skip.push(feed_url.to_owned());
                changed = true;
            }
        }
        changed
    }

    /// The deliveries neither acknowledged nor expired at `now_ms`.
    pub(crate) fn pending(&self, now_ms: u64) -> impl Iterator<Item = &Listed> {
        self.deliveries
            .iter()
            .filter(move |l| !l.acked && l.expires_ms > now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(id: &str, expires_ms: u64) -> Listed {
        Listed {
            id: id.into(),
            expires_ms,
            items: 1,
            ..Listed::default()
        }
    }

    #[test]
    fn the_index_keeps_live_deliveries_up_to_its_bound() {
        let mut ix = Index::default();
        assert!(ix.add(listed("a", 100), 0, 2).is_empty());
        assert!(ix.add(listed("b", 200), 0, 2).is_empty());
        assert_eq!(ix.add(listed("c", 300), 0, 2), vec!["a"]);
        // At 250, b has expired.
        assert_eq!(ix.add(listed("d", 400), 250, 2), vec!["b"]);
        ix.acked("c");
        let pending: Vec<_> = ix.pending(250).map(|l| l.id.as_str()).collect();
        assert_eq!(pending, vec!["d"]);
    }

    #[test]
    fn a_commit_is_all_or_none_and_an_acknowledgement_being_recorded_is_never_dropped() {
        let mut ix = Index::default();
        ix.add(listed("a", 100), 0, 2);
        ix.add(listed("b", 100), 0, 2);
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // One of them is gone: nothing is committed.
        assert_eq!(
            ix.commit(&ids(&["a", "x"]), 5),
            vec![Commit::New, Commit::Gone]
        );
        assert!(ix.applying("a").is_none());
        assert_eq!(ix.commit(&ids(&["a"]), 5), vec![Commit::New]);
        assert_eq!(ix.commit(&ids(&["a"]), 6), vec![Commit::Applying]);
        assert_eq!(ix.applying("a").unwrap().applying, Some(5));
        // A feed forgotten meanwhile is left out of it.
        assert!(ix.forgot("f") && !ix.forgot("f"));
        assert_eq!(ix.applying("a").unwrap().skip, ["f"]);
        // Neither the count nor the age pushes it out while it is being recorded.
        assert_eq!(ix.add(listed("c", 300), 200, 2), vec!["b"]);
        assert_eq!(ix.add(listed("d", 300), 200, 2), vec!["c"]);
        assert!(ix.applying("a").is_some());
        ix.acked("a");
        assert_eq!(ix.commit(&ids(&["a"]), 7), vec![Commit::Done]);
        assert!(ix.deliveries[0].skip.is_empty());
        assert_eq!(ix.add(listed("e", 300), 200, 2), vec!["a"]);
    }
}
