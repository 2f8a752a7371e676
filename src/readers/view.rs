//! A reader's view of one run: the ids counted as seen in each feed (as the reader's marks
//! stood when the run, or the first page of its walk, began), and what each feed's reading
//! found, for the delivery made of it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::ReaderId;
use crate::feed::Seen;

/// What one feed's reading found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Read {
    /// Every id of the document.
    pub present: Vec<String>,
    /// The ids left out as seen.
    pub seen: Vec<String>,
}

/// A reader's view of one run.
#[derive(Debug)]
pub struct View {
    reader: ReaderId,
    /// Per feed (as the output names it), the ids counted as seen.
    seen: HashMap<String, Arc<HashSet<u64>>>,
    /// Leave the seen ids out (`--unseen`), or only report them.
    hide: bool,
    /// The walk of pages this run continues: its first page's delivery.
    walk: Option<String>,
    reads: Mutex<HashMap<String, Read>>,
}

impl View {
    /// The view of `reader` with `seen` per feed; `hide` leaves those ids out.
    pub(crate) fn new(
        reader: ReaderId,
        seen: HashMap<String, Arc<HashSet<u64>>>,
        hide: bool,
        walk: Option<String>,
    ) -> View {
        View {
            reader,
            seen,
            hide,
            walk,
            reads: Mutex::default(),
        }
    }

    /// The reader.
    pub fn reader(&self) -> &ReaderId {
        &self.reader
    }

    /// The walk of pages this run continues, if it is not its first page.
    pub(crate) fn walk(&self) -> Option<&str> {
        self.walk.as_deref()
    }

    /// What the selection of `feed_url` is told.
    pub fn seen_of(&self, feed_url: &str) -> Seen {
        Seen::new(
            self.seen.get(feed_url).cloned().unwrap_or_default(),
            self.hide,
        )
    }

    /// Notes what the reading of `feed_url` found.
    pub fn note(&self, feed_url: &str, present: Vec<String>, seen: Vec<String>) {
        self.reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(feed_url.to_owned(), Read { present, seen });
    }

    /// What the reading of every feed found, by feed.
    pub(crate) fn reads(&self) -> Vec<(String, Read)> {
        let mut all: Vec<(String, Read)> = self
            .reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Every id of `feed_url`'s document as its reading found it (empty if it was not
    /// read), taken out of the view: a run is delivered once.
    pub(crate) fn take_present(&self, feed_url: &str) -> Vec<String> {
        self.reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(feed_url)
            .map(|r| std::mem::take(&mut r.present))
            .unwrap_or_default()
    }
}
