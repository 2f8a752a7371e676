//! Signing keys kept in a record store: each drawn once (32 random bytes, hex) and stored
//! only if absent, so every process and node of one store signs with the key the first of
//! them drew, and a key another store drew signs nothing this one honours.

use super::{RecordKey, RecordStore};
use crate::hosts::StoreError;

/// Why a shared key could not be had.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    /// The store failed.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// What the store holds under the name is not a key.
    #[error("the signing key {0:?} in the store is damaged")]
    Damaged(String),
    /// The system gave no randomness to draw a key with.
    #[error("no system randomness to draw a key with: {0}")]
    NoRandomness(getrandom::Error),
}

/// The key named `name` in `store`: the one stored, or one drawn now and stored.
pub(crate) async fn shared_key(store: &dyn RecordStore, name: &str) -> Result<[u8; 32], KeyError> {
    let key = RecordKey::new([name]).ok_or_else(|| KeyError::Damaged(name.to_owned()))?;
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(KeyError::NoRandomness)?;
    let stored = store
        .put_if_absent(&key, hex::encode(fresh).as_bytes())
        .await?;
    let mut k = [0u8; 32];
    hex::decode_to_slice(stored.trim_ascii(), &mut k)
        .map_err(|_| KeyError::Damaged(name.to_owned()))?;
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_key_is_drawn_once_and_read_back_by_every_opener() {
        let dir = tempfile::tempdir().unwrap();
        let a = super::super::file::FileRecords::open(dir.path(), 0);
        let b = super::super::file::FileRecords::open(dir.path(), 0);
        let first = shared_key(&a, "cursor").await.unwrap();
        assert_eq!(shared_key(&b, "cursor").await.unwrap(), first);
        assert_ne!(shared_key(&a, "other").await.unwrap(), first);
        let elsewhere = tempfile::tempdir().unwrap();
        let c = super::super::file::FileRecords::open(elsewhere.path(), 0);
        assert_ne!(shared_key(&c, "cursor").await.unwrap(), first);
        std::fs::write(dir.path().join("broken.json"), "not hex").unwrap();
        assert!(matches!(
            shared_key(&a, "broken").await,
            Err(KeyError::Damaged(_))
        ));
    }
}
