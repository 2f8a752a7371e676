//! Readers' records in the store layer of host state (`crate::hosts::records`): per reader
//! (one group of records) its marks per feed, its deliveries and their index; the key
//! tokens are signed with, once per store.
//!
//! - `SCOPE~NAME/marks/HASH` — the reader's [`Marks`] in the feed whose URL hashes to HASH;
//! - `SCOPE~NAME/deliveries/ID` — one [`DeliveryRecord`];
//! - `SCOPE~NAME/index` — the reader's [`Index`] of deliveries;
//! - `secret` — the token key (32 random bytes, hex).

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use super::ReaderId;
use super::delivery::{DeliveryRecord, Index, Listed, MAX_DELIVERIES};
use super::marks::Marks;
use super::token::TokenKey;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::hosts::StoreError;
use crate::hosts::records::{self, Change, RecordKey, RecordStore};

/// A reader's records, their group and what is in them.
pub(crate) struct Listing {
    /// The reader.
    pub reader: ReaderId,
    /// Its marks, one per feed.
    pub marks: Vec<Marks>,
    /// Its deliveries.
    pub index: Index,
}

/// The readers of one store.
#[derive(Debug)]
pub(crate) struct Readers {
    pub(super) records: Arc<dyn RecordStore>,
    key: OnceCell<TokenKey>,
}

fn key(segs: &[&str]) -> RecordKey {
    RecordKey::new(segs.iter().copied()).expect("segments of our own making are valid")
}

fn feed_hash(feed_url: &str) -> String {
    hex::encode(&Sha256::digest(feed_url.as_bytes())[..8])
}

pub(super) fn marks_key(r: &ReaderId, feed_url: &str) -> RecordKey {
    key(&[&r.group(), "marks", &feed_hash(feed_url)])
}

pub(super) fn delivery_key(r: &ReaderId, id: &str) -> RecordKey {
    key(&[&r.group(), "deliveries", id])
}

pub(super) fn index_key(r: &ReaderId) -> RecordKey {
    key(&[&r.group(), "index"])
}

pub(super) fn failed(e: StoreError) -> Error {
    Error::ReaderStore(e)
}

pub(super) fn parse<T: DeserializeOwned>(bytes: &[u8], what: impl FnOnce() -> String) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|source| {
        failed(StoreError::Corrupt {
            host: what(),
            source,
        })
    })
}

pub(super) fn to_bytes<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// 16 random hex digits.
pub(crate) fn random_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b.copy_from_slice(&Sha256::digest(format!("{nanos}{}", std::process::id()))[..8]);
    }
    hex::encode(b)
}

impl Readers {
    /// The readers of the store `config` names: its Redis with `--gate-store`, else files
    /// under the state directory. Touches nothing until used.
    pub(crate) fn open(config: &Config) -> Result<Readers> {
        let dir = config.state_dir.as_ref().ok_or_else(|| {
            Error::usage(
                "no state directory is known for readers: pass --state-dir or set RSS_STATE_DIR",
            )
        })?;
        let records = records::open(config, &dir.join("readers")).map_err(failed)?;
        Ok(Readers {
            records,
            key: OnceCell::new(),
        })
    }

    /// Where the marks are, for people.
    pub(crate) fn describe(&self) -> String {
        self.records.describe()
    }

    /// The store's token key, drawn and kept on first use.
    pub(crate) async fn key(&self) -> Result<TokenKey> {
        self.key
            .get_or_try_init(|| async {
                let mut fresh = [0u8; 32];
                getrandom::fill(&mut fresh)
                    .map_err(|e| Error::internal(format!("no system randomness: {e}")))?;
                let stored = self
                    .records
                    .put_if_absent(&key(&["secret"]), hex::encode(fresh).as_bytes())
                    .await
                    .map_err(failed)?;
                let mut k = [0u8; 32];
                hex::decode_to_slice(stored.trim_ascii(), &mut k).map_err(|_| {
                    Error::internal("the readers' token key in the store is damaged")
                })?;
                Ok(TokenKey(k))
            })
            .await
            .cloned()
    }

    /// The store's clock now (Unix ms).
    pub(crate) async fn now_ms(&self) -> Result<u64> {
        Ok(self.records.load_many(&[]).await.map_err(failed)?.1)
    }

    /// Keeps `d` as a delivery of `reader`: listed in its index first (so it is bounded),
    /// then stored. Deliveries the index lets go are removed.
    pub(crate) async fn add_delivery(&self, reader: &ReaderId, d: &DeliveryRecord) -> Result<()> {
        let dropped = std::sync::Mutex::new(Vec::new());
        let listed = Listed::of(d);
        let update = |cur: Option<&[u8]>, now: u64| {
            // A damaged index is rebuilt: it only bounds deliveries, it marks nothing.
            let mut ix: Index = cur
                .and_then(|b| serde_json::from_slice(b).ok())
                .unwrap_or(Index {
                    v: 1,
                    ..Index::default()
                });
            *dropped.lock().unwrap_or_else(|p| p.into_inner()) =
                ix.add(listed.clone(), now, MAX_DELIVERIES);
            Change::Put(to_bytes(&ix), None)
        };
        self.records
            .update(&index_key(reader), &update)
            .await
            .map_err(failed)?;
        let put = |_: Option<&[u8]>, _: u64| Change::Put(to_bytes(d), Some(d.expires_ms));
        self.records
            .update(&delivery_key(reader, &d.id), &put)
            .await
            .map_err(failed)?;
        for id in dropped.into_inner().unwrap_or_else(|p| p.into_inner()) {
            let gone = |_: Option<&[u8]>, _: u64| Change::Delete;
            self.records
                .update(&delivery_key(reader, &id), &gone)
                .await
                .map_err(failed)?;
        }
        Ok(())
    }

    /// `reader`'s delivery `id`, if it is still kept, and the store's clock.
    pub(crate) async fn delivery(
        &self,
        reader: &ReaderId,
        id: &str,
    ) -> Result<(Option<DeliveryRecord>, u64)> {
        let (bytes, now) = self
            .records
            .load(&delivery_key(reader, id))
            .await
            .map_err(failed)?;
        let d = bytes
            .map(|b| parse::<DeliveryRecord>(&b, || format!("delivery {id} of {}", reader.name())))
            .transpose()?;
        Ok((d, now))
    }

    /// Every reader with its marks and index, and the store's clock.
    pub(crate) async fn list(&self) -> Result<(Vec<Listing>, u64)> {
        let keys = self.records.list(&[]).await.map_err(failed)?;
        let mut out: Vec<Listing> = Vec::new();
        for group in keys.iter().map(|k| &k.segments()[0]) {
            let Some(reader) = ReaderId::from_group(group) else {
                continue;
            };
            if out.last().is_some_and(|l| l.reader.group() == *group) {
                continue;
            }
            // What a stopped process left committed is recorded before it is counted.
            self.settle_all(&reader).await?;
            let mine: Vec<RecordKey> = self
                .records
                .list(&[group.clone(), "marks".to_owned()])
                .await
                .map_err(failed)?;
            let (found, _) = self.records.load_many(&mine).await.map_err(failed)?;
            let mut marks: Vec<Marks> = found
                .iter()
                .flatten()
                .filter_map(|b| serde_json::from_slice(b).ok())
                .collect();
            marks.sort_by(|a, b| a.feed_url.cmp(&b.feed_url));
            let (ix, _) = self
                .records
                .load(&index_key(&reader))
                .await
                .map_err(failed)?;
            let index = ix
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
            out.push(Listing {
                reader,
                marks,
                index,
            });
        }
        out.sort_by(|a, b| a.reader.cmp(&b.reader));
        out.dedup_by(|a, b| a.reader == b.reader);
        let now = self.now_ms().await?;
        Ok((out, now))
    }

    /// Forgets `reader`'s marks in `feed`, or everything of `reader` (its deliveries too);
    /// (feeds, deliveries) forgotten. Its index is changed first, so an acknowledgement
    /// being recorded at the same time ([`Readers::apply`]) records nothing more there.
    pub(crate) async fn forget(
        &self,
        reader: &ReaderId,
        feed: Option<&str>,
    ) -> Result<(usize, usize)> {
        match feed {
            Some(feed) => {
                let left_out = |cur: Option<&[u8]>, _: u64| {
                    let Some(mut ix) = cur.and_then(|b| serde_json::from_slice::<Index>(b).ok())
                    else {
                        return Change::Keep;
                    };
                    if ix.forgot(feed) {
                        Change::Put(to_bytes(&ix), None)
                    } else {
                        Change::Keep
                    }
                };
                self.records
                    .update(&index_key(reader), &left_out)
                    .await
                    .map_err(failed)?;
                let k = marks_key(reader, feed);
                let (found, _) = self.records.load(&k).await.map_err(failed)?;
                self.records
                    .update(&k, &|_, _| Change::Delete)
                    .await
                    .map_err(failed)?;
                Ok((usize::from(found.is_some()), 0))
            }
            None => {
                self.records
                    .update(&index_key(reader), &|_, _| Change::Delete)
                    .await
                    .map_err(failed)?;
                let group = reader.group();
                let keys = self
                    .records
                    .list(std::slice::from_ref(&group))
                    .await
                    .map_err(failed)?;
                let count = |what: &str| {
                    keys.iter()
                        .filter(|k| k.segments().get(1).is_some_and(|s| s == what))
                        .count()
                };
                let counts = (count("marks"), count("deliveries"));
                self.records.remove_under(&[group]).await.map_err(failed)?;
                Ok(counts)
            }
        }
    }
}
