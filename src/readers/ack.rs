//! Acknowledging deliveries, all or nothing. An acknowledgement is committed by one write of
//! the reader's index (its deliveries listed as acknowledged and being recorded); what they
//! mark is then recorded feed by feed, each feed's marks changed only while the index still
//! lists the delivery as being recorded (checked at once with the change, so a forget in
//! between leaves nothing behind), and the index is told when all of it is recorded.
//!
//! A process stopped between the commit and the end leaves the commit: from it on, every
//! reading of the reader's marks counts the delivery's items as seen ([`Readers::seen`]),
//! and the first use of the reader [`ROLL_FORWARD_AFTER_MS`] later (a fetch for it, an
//! acknowledgement, `rss readers`) records the rest, as does acknowledging the same token
//! again at any time.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use super::ReaderId;
use super::delivery::{Commit, DeliveredFeed, DeliveryRecord, Index, Listed, TOKEN_LIFETIME};
use super::marks::{BOUNDS, Marks};
use super::store::{Readers, delivery_key, failed, index_key, marks_key, parse, to_bytes};
use crate::error::Result;
use crate::feed::id_key;
use crate::hosts::StoreError;
use crate::hosts::records::{Change, RecordKey};

/// How long after its commit an acknowledgement whose marks are not all recorded is taken
/// for one whose process stopped, and recorded by whoever meets it.
pub(crate) const ROLL_FORWARD_AFTER_MS: u64 = 30_000;

fn index_of(bytes: Option<&[u8]>) -> Option<Index> {
    bytes.and_then(|b| serde_json::from_slice(b).ok())
}

impl Readers {
    /// `reader`'s seen ids in each of `feeds`: its marks, and what the acknowledgements
    /// committed but not yet all recorded mark (those committed long enough ago to have been
    /// left by a stopped process are recorded first). Read in the order that is recorded in
    /// reverse (the index, then the deliveries it lists as being recorded, then the marks),
    /// so that no acknowledgement finishing meanwhile is missed.
    pub(crate) async fn seen(
        &self,
        reader: &ReaderId,
        feeds: &[String],
    ) -> Result<Vec<HashSet<u64>>> {
        let mut settled = false;
        let applying = loop {
            let (applying, now) = self.applying(reader).await?;
            if settled || !applying.iter().any(|l| stale(l, now)) {
                break applying;
            }
            self.settle(reader, &applying, now).await?;
            settled = true;
        };
        let mut pending = Vec::new();
        for l in &applying {
            let (record, _) = self.delivery(reader, &l.id).await?;
            for part in record.map(|d| d.feeds).unwrap_or_default() {
                if !l.skip.contains(&part.feed_url) {
                    pending.push(part);
                }
            }
        }
        let keys: Vec<RecordKey> = feeds.iter().map(|f| marks_key(reader, f)).collect();
        let (found, _) = self.records.load_many(&keys).await.map_err(failed)?;
        let mut seen = Vec::with_capacity(feeds.len());
        for (bytes, feed) in found.iter().zip(feeds) {
            let marks = bytes
                .as_deref()
                .map(|b| parse::<Marks>(b, || format!("reader {} in {feed}", reader.name())))
                .transpose()?;
            seen.push(marks.map(|m| m.ids()).unwrap_or_default());
        }
        let at: HashMap<&str, usize> = feeds
            .iter()
            .enumerate()
            .map(|(i, f)| (f.as_str(), i))
            .collect();
        for part in pending {
            if let Some(&i) = at.get(part.feed_url.as_str()) {
                seen[i].extend(part.ids.iter().filter_map(|id| id_key(id)));
            }
        }
        Ok(seen)
    }

    /// Records the acknowledgements of `reader` that `applying` lists and that were
    /// committed long enough before `now` to have been left by a stopped process.
    async fn settle(&self, reader: &ReaderId, applying: &[Listed], now: u64) -> Result<()> {
        for l in applying.iter().filter(|l| stale(l, now)) {
            self.apply(reader, &l.id).await?;
        }
        Ok(())
    }

    /// Records every acknowledgement of `reader` left by a stopped process.
    pub(crate) async fn settle_all(&self, reader: &ReaderId) -> Result<()> {
        let (applying, now) = self.applying(reader).await?;
        self.settle(reader, &applying, now).await
    }

    /// The acknowledgements `reader`'s index lists as committed and still being recorded,
    /// and the store's clock when it was read.
    async fn applying(&self, reader: &ReaderId) -> Result<(Vec<Listed>, u64)> {
        let (bytes, now) = self
            .records
            .load(&index_key(reader))
            .await
            .map_err(failed)?;
        let applying = index_of(bytes.as_deref())
            .map(|ix| ix.deliveries)
            .unwrap_or_default()
            .into_iter()
            .filter(|l| l.applying.is_some())
            .collect();
        Ok((applying, now))
    }

    /// Commits the acknowledgement of `deliveries` (all `reader`'s, each once), all of them
    /// in one write of its index, or none when one of them is no longer listed (forgotten,
    /// or pushed out). Where each stood.
    pub(crate) async fn commit(
        &self,
        reader: &ReaderId,
        deliveries: &[DeliveryRecord],
    ) -> Result<Vec<Commit>> {
        // Kept past their lifetime until what they mark is recorded (Redis lets a record
        // expire; the index keeps it listed).
        for d in deliveries.iter().filter(|d| d.acked_ms.is_none()) {
            let keep = |cur: Option<&[u8]>, now: u64| match cur {
                Some(b) => Change::Put(
                    b.to_vec(),
                    Some(now.max(d.expires_ms).saturating_add(lifetime_ms())),
                ),
                None => Change::Keep,
            };
            self.records
                .update(&delivery_key(reader, &d.id), &keep)
                .await
                .map_err(failed)?;
        }
        let ids: Vec<String> = deliveries.iter().map(|d| d.id.clone()).collect();
        let stood = Mutex::new(Vec::new());
        let commit = |cur: Option<&[u8]>, now: u64| {
            let mut ix = match cur {
                None => {
                    *stood.lock().unwrap_or_else(|p| p.into_inner()) =
                        vec![Commit::Gone; ids.len()];
                    return Change::Keep;
                }
                // A damaged index is rebuilt (as a delivery does), these deliveries in it.
                Some(b) => serde_json::from_slice(b).unwrap_or_else(|_| Index {
                    v: 1,
                    deliveries: deliveries.iter().map(Listed::of).collect(),
                }),
            };
            let s = ix.commit(&ids, now);
            let change = if s.contains(&Commit::New) && !s.contains(&Commit::Gone) {
                Change::Put(to_bytes(&ix), None)
            } else {
                Change::Keep
            };
            *stood.lock().unwrap_or_else(|p| p.into_inner()) = s;
            change
        };
        self.records
            .update(&index_key(reader), &commit)
            .await
            .map_err(failed)?;
        Ok(stood.into_inner().unwrap_or_else(|p| p.into_inner()))
    }

    /// Records what `reader`'s committed delivery `id` marks, feed by feed, while its index
    /// lists it as being recorded, then notes it recorded; (new, already marked) of what this
    /// call recorded (another may have recorded some of it at the same time).
    pub(crate) async fn apply(&self, reader: &ReaderId, id: &str) -> Result<(usize, usize)> {
        let (record, _) = self.delivery(reader, id).await?;
        let mut counts = (0, 0);
        if let Some(record) = record {
            let (all, recorded) = self
                .record(reader, id, &record.feeds, record.issued_ms)
                .await?;
            counts = recorded;
            if !all {
                return Ok(counts);
            }
        }
        self.recorded(reader, id).await?;
        Ok(counts)
    }

    /// Records the feeds' parts of `reader`'s delivery `id` (read at `read_ms`) while the
    /// index lists it as being recorded, each but those of feeds forgotten since: all of them
    /// at once where the store can (files: a batch's marks flushed side by side). Whether the
    /// index still listed it for every part, and (new, already marked).
    async fn record(
        &self,
        reader: &ReaderId,
        id: &str,
        parts: &[DeliveredFeed],
        read_ms: u64,
    ) -> Result<(bool, (usize, usize))> {
        // The feeds forgotten since the commit, as the index said at the last check.
        let skip: Mutex<Vec<String>> = Mutex::new(Vec::new());
        let holds = |cur: Option<&[u8]>| match index_of(cur).as_ref().and_then(|ix| ix.applying(id))
        {
            None => false,
            Some(l) => {
                *skip.lock().unwrap_or_else(|p| p.into_inner()) = l.skip.clone();
                true
            }
        };
        let counts: Mutex<Vec<std::result::Result<(usize, usize), serde_json::Error>>> =
            Mutex::new(parts.iter().map(|_| Ok((0, 0))).collect());
        let update = |i: usize, cur: Option<&[u8]>, now: u64| {
            let part = &parts[i];
            let set = |r| counts.lock().unwrap_or_else(|p| p.into_inner())[i] = r;
            if skip
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(&part.feed_url)
            {
                set(Ok((0, 0)));
                return Change::Keep;
            }
            let mut marks = match cur.map(serde_json::from_slice::<Marks>) {
                None => Marks::new(&part.feed_url),
                Some(Ok(m)) => m,
                Some(Err(e)) => {
                    set(Err(e));
                    return Change::Keep;
                }
            };
            let present: Vec<String> = part.ids.iter().chain(&part.others).cloned().collect();
            set(Ok(marks.record(&part.ids, &present, read_ms, now, &BOUNDS)));
            Change::Put(to_bytes(&marks), None)
        };
        let keys: Vec<RecordKey> = parts
            .iter()
            .map(|p| marks_key(reader, &p.feed_url))
            .collect();
        let went = self
            .records
            .update_all_if(&keys, &index_key(reader), &holds, &update)
            .await
            .map_err(failed)?;
        let counts = counts.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut total = (0, 0);
        for (part, n) in parts.iter().zip(counts).take(went) {
            let (new, already) = n.map_err(|source| {
                failed(StoreError::Corrupt {
                    host: format!("reader {} in {}", reader.name(), part.feed_url),
                    source,
                })
            })?;
            total.0 += new;
            total.1 += already;
        }
        Ok((went == keys.len(), total))
    }

    /// Notes that what `reader`'s delivery `id` marks is recorded: its record keeps only
    /// what the pages after it need, and its index entry stops being "being recorded".
    async fn recorded(&self, reader: &ReaderId, id: &str) -> Result<()> {
        let stub = |cur: Option<&[u8]>, now: u64| match cur
            .and_then(|b| serde_json::from_slice::<DeliveryRecord>(b).ok())
        {
            Some(d) if d.acked_ms.is_none() || !d.feeds.is_empty() => {
                let expires = d.expires_ms;
                Change::Put(to_bytes(&d.acknowledged(now)), Some(expires))
            }
            _ => Change::Keep,
        };
        self.records
            .update(&delivery_key(reader, id), &stub)
            .await
            .map_err(failed)?;
        let listed = |cur: Option<&[u8]>, _: u64| match index_of(cur) {
            Some(mut ix)
                if ix
                    .deliveries
                    .iter()
                    .any(|l| l.id == id && (!l.acked || l.applying.is_some())) =>
            {
                ix.acked(id);
                Change::Put(to_bytes(&ix), None)
            }
            _ => Change::Keep,
        };
        self.records
            .update(&index_key(reader), &listed)
            .await
            .map_err(failed)
    }
}

/// Whether `l`'s acknowledgement was committed long enough before `now` to have been left
/// by a stopped process.
fn stale(l: &Listed, now: u64) -> bool {
    l.applying
        .is_some_and(|at| now.saturating_sub(at) >= ROLL_FORWARD_AFTER_MS)
}

fn lifetime_ms() -> u64 {
    TOKEN_LIFETIME.as_millis() as u64
}
