//! Small keyed records kept beside host state, with the host store's discipline: a reader's
//! delivery marks and deliveries (`crate::readers`). Two backends, like host state: files
//! under the state directory (atomic replace, an advisory lock per record for each
//! read-modify-write), or the fleet's Redis (compare-and-set). Unlike host state there is no
//! fallback from Redis to files: a reader's marks split between two stores would deliver
//! items twice, so a store that fails is an error of the operation.
//!
//! A key is a short list of segments; the first names the record's group (one reader), so
//! one group's records sit in one directory, or one Redis cluster slot.

use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::StoreError;
use crate::config::{Config, HostStateSetting};

mod file;
pub(crate) mod keys;
mod redis;

/// A record's key: segments of `A-Za-z0-9._~-`, none empty or starting with a dot (so none
/// is a path of its own), the first naming the record's group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RecordKey(Vec<String>);

/// Whether `s` may be a segment of a [`RecordKey`].
fn segment_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'-'))
}

impl RecordKey {
    /// The key of `segments`, or `None` when one is not a valid segment.
    pub(crate) fn new<S: Into<String>>(segments: impl IntoIterator<Item = S>) -> Option<RecordKey> {
        let segs: Vec<String> = segments.into_iter().map(Into::into).collect();
        (!segs.is_empty() && segs.iter().all(|s| segment_ok(s))).then_some(RecordKey(segs))
    }

    /// The segments, group first.
    pub(crate) fn segments(&self) -> &[String] {
        &self.0
    }
}

/// What a read-modify-write makes of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Leave it as it is.
    Keep,
    /// Store these bytes (Redis: expiring at this Unix ms, if given).
    Put(Vec<u8>, Option<u64>),
    /// Remove it.
    Delete,
}

/// The read-modify-write of one record: gets what is stored (`None`: nothing) and the
/// store's clock (Unix ms), returns the change. It may run more than once (a Redis
/// compare-and-set that met another writer runs it again on what that one wrote).
pub(crate) type RecordUpdate<'a> = dyn Fn(Option<&[u8]>, u64) -> Change + Send + Sync + 'a;

/// A condition on another record that a change is made under ([`RecordStore::update_if`]):
/// gets that record's bytes (`None`: nothing). It may run more than once.
pub(crate) type RecordGuard<'a> = dyn Fn(Option<&[u8]>) -> bool + Send + Sync + 'a;

/// The read-modify-write of the `i`th of several records ([`RecordStore::update_all_if`]),
/// `i` first; otherwise a [`RecordUpdate`].
pub(crate) type RecordUpdates<'a> = dyn Fn(usize, Option<&[u8]>, u64) -> Change + Send + Sync + 'a;

/// What a read gives: each record's bytes (`None`: nothing) and the store's clock (Unix ms).
pub(crate) type Loaded = (Vec<Option<Vec<u8>>>, u64);

/// Where records are kept.
pub(crate) trait RecordStore: Send + Sync + std::fmt::Debug {
    /// Where the store is, for people (`file:/…`, `redis://…`, never a password).
    fn describe(&self) -> String;
    /// The stored bytes of each of `keys` (`None`: nothing), and the store's clock.
    fn load_many<'a>(&'a self, keys: &'a [RecordKey]) -> BoxFuture<'a, Result<Loaded, StoreError>>;
    /// Atomically replaces `key`'s record with what `f` makes of it.
    fn update<'a>(
        &'a self,
        key: &'a RecordKey,
        f: &'a RecordUpdate<'a>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Like [`RecordStore::update`], but only while `holds` is true of `guard`'s record (of
    /// `key`'s group, another record), checked at once with the change: no change of
    /// `guard` comes between the check and the change. Whether it held (when it did not,
    /// nothing was changed).
    fn update_if<'a>(
        &'a self,
        key: &'a RecordKey,
        guard: &'a RecordKey,
        holds: &'a RecordGuard<'a>,
        f: &'a RecordUpdate<'a>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
    /// [`RecordStore::update_if`] of each of `keys` (distinct, of `guard`'s group; `f` gets
    /// the key's place in `keys`), in order, until `holds` stops holding; how many of the
    /// keys went (those after them were not changed). A store may check `holds` once for
    /// several keys, as long as no change of `guard` comes between the check and theirs.
    fn update_all_if<'a>(
        &'a self,
        keys: &'a [RecordKey],
        guard: &'a RecordKey,
        holds: &'a RecordGuard<'a>,
        f: &'a RecordUpdates<'a>,
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        async move {
            for (i, key) in keys.iter().enumerate() {
                let one = |cur: Option<&[u8]>, now: u64| f(i, cur, now);
                if !self.update_if(key, guard, holds, &one).await? {
                    return Ok(i);
                }
            }
            Ok(keys.len())
        }
        .boxed()
    }
    /// Stores `bytes` under `key` if nothing is there; returns what is stored then (the
    /// bytes given, or the ones another process stored first).
    fn put_if_absent<'a>(
        &'a self,
        key: &'a RecordKey,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<Vec<u8>, StoreError>>;
    /// Every key whose segments start with `under` (all of them when it is empty).
    fn list<'a>(&'a self, under: &'a [String])
    -> BoxFuture<'a, Result<Vec<RecordKey>, StoreError>>;
    /// Removes every record whose segments start with `under` (not empty); how many.
    fn remove_under<'a>(&'a self, under: &'a [String]) -> BoxFuture<'a, Result<usize, StoreError>>;
}

impl dyn RecordStore + '_ {
    /// The stored bytes of `key`, and the store's clock.
    pub(crate) async fn load(&self, key: &RecordKey) -> Result<(Option<Vec<u8>>, u64), StoreError> {
        let (mut found, now) = self.load_many(std::slice::from_ref(key)).await?;
        Ok((found.pop().flatten(), now))
    }
}

/// The readers' record store `config` asks for: the fleet's Redis with `--gate-store`, else
/// files in `dir` (a directory of the state directory), created on first write.
pub(crate) fn open(config: &Config, dir: &Path) -> Result<Arc<dyn RecordStore>, StoreError> {
    open_in(config, dir, "readers")
}

/// The record store of `namespace` (`rss:NAMESPACE:v1:…` in Redis) `config` asks for, else
/// files in `dir`.
pub(crate) fn open_in(
    config: &Config,
    dir: &Path,
    namespace: &str,
) -> Result<Arc<dyn RecordStore>, StoreError> {
    match &config.host_state {
        HostStateSetting::Redis(url) => Ok(Arc::new(redis::RedisRecords::open(url, namespace)?)),
        HostStateSetting::Files | HostStateSetting::Off => Ok(Arc::new(file::FileRecords::open(
            dir,
            config.wall_clock_skew_ms,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_safe_segments_only() {
        assert!(RecordKey::new(["_~digest", "marks", "0123abcd"]).is_some());
        for bad in ["", ".", "..", ".hidden", "a/b", "a\\b", "a b", "é"] {
            assert!(RecordKey::new(["g", bad]).is_none(), "{bad:?}");
        }
        assert!(RecordKey::new(Vec::<String>::new()).is_none());
    }

    /// What every backend must do, run on a fresh one.
    pub(super) async fn behaves(store: &dyn RecordStore) {
        let k = |s: &[&str]| RecordKey::new(s.iter().copied()).unwrap();
        let a = k(&["g1", "marks", "a"]);
        let b = k(&["g1", "marks", "b"]);
        let other = k(&["g2", "index"]);
        let (none, now) = store.load(&a).await.unwrap();
        assert!(none.is_none() && now > 1_600_000_000_000);
        let put = |cur: Option<&[u8]>, _: u64| {
            let n = cur.map_or(0, |c| c[0]) + 1;
            Change::Put(vec![n], None)
        };
        store.update(&a, &put).await.unwrap();
        store.update(&a, &put).await.unwrap();
        store.update(&b, &put).await.unwrap();
        store.update(&other, &put).await.unwrap();
        let (got, _) = store.load_many(&[a.clone(), b.clone()]).await.unwrap();
        assert_eq!(got, vec![Some(vec![2]), Some(vec![1])]);
        store.update(&b, &|_, _| Change::Keep).await.unwrap();
        assert_eq!(store.load(&b).await.unwrap().0, Some(vec![1]));
        let mut listed = store.list(&["g1".to_owned()]).await.unwrap();
        listed.sort();
        assert_eq!(listed, vec![a.clone(), b.clone()]);
        assert!(store.list(&[]).await.unwrap().len() >= 3);
        store.update(&b, &|_, _| Change::Delete).await.unwrap();
        assert!(store.load(&b).await.unwrap().0.is_none());
        // A change under a guard: made while the guard holds, not once it stops holding.
        let guard = k(&["g1", "index"]);
        let open = |g: Option<&[u8]>| g == Some(&b"open"[..]);
        assert!(!store.update_if(&b, &guard, &open, &put).await.unwrap());
        assert!(store.load(&b).await.unwrap().0.is_none());
        store
            .update(&guard, &|_, _| Change::Put(b"open".to_vec(), None))
            .await
            .unwrap();
        assert!(store.update_if(&b, &guard, &open, &put).await.unwrap());
        assert_eq!(store.load(&b).await.unwrap().0, Some(vec![1]));
        store.update(&guard, &|_, _| Change::Delete).await.unwrap();
        assert!(!store.update_if(&b, &guard, &open, &put).await.unwrap());
        assert_eq!(store.load(&b).await.unwrap().0, Some(vec![1]));
        store.update(&b, &|_, _| Change::Delete).await.unwrap();
        // Many changes under one guard (more than a file batch): none while it does not
        // hold, each with its own place while it does.
        let many: Vec<RecordKey> = (0..70)
            .map(|i| k(&["g1", "many", &i.to_string()]))
            .collect();
        let place = |i: usize, cur: Option<&[u8]>, _: u64| match i {
            0 => Change::Keep,
            _ => Change::Put(vec![i as u8, cur.map_or(0, |c| c[0])], None),
        };
        assert_eq!(
            store
                .update_all_if(&many, &guard, &open, &place)
                .await
                .unwrap(),
            0
        );
        assert!(
            store
                .list(&["g1".to_owned(), "many".to_owned()])
                .await
                .unwrap()
                .is_empty()
        );
        store
            .update(&guard, &|_, _| Change::Put(b"open".to_vec(), None))
            .await
            .unwrap();
        assert_eq!(
            store
                .update_all_if(&many, &guard, &open, &place)
                .await
                .unwrap(),
            70
        );
        let (got, _) = store.load_many(&many).await.unwrap();
        assert_eq!(got[0], None);
        for (i, g) in got.iter().enumerate().skip(1) {
            assert_eq!(g.as_deref(), Some(&[i as u8, 0][..]));
        }
        assert_eq!(
            store
                .remove_under(&["g1".to_owned(), "many".to_owned()])
                .await
                .unwrap(),
            69
        );
        store.update(&guard, &|_, _| Change::Delete).await.unwrap();
        let secret = k(&["g3"]);
        assert_eq!(store.put_if_absent(&secret, b"one").await.unwrap(), b"one");
        assert_eq!(store.put_if_absent(&secret, b"two").await.unwrap(), b"one");
        assert_eq!(store.remove_under(&["g1".to_owned()]).await.unwrap(), 1);
        assert!(store.load(&a).await.unwrap().0.is_none());
        assert_eq!(store.load(&other).await.unwrap().0, Some(vec![1]));
    }
}
