//! What a long-running server needs of the shared store beyond host state: the keys it
//! signs what clients carry between calls with (page cursors; delivery tokens are signed
//! with the readers' own key, kept the same way), and whether the store answers.
//!
//! A key is drawn once and kept in the store (`STATE/keys/NAME.json` on one machine,
//! `rss:keys:v1:{NAME}` in the fleet's Redis), so a cursor one node gave is honoured by
//! every node of the store, and one changed by a character, or given by another store, is
//! still refused.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use tokio::time::Instant;

use super::pages::CursorKey;
use crate::config::{Config, HostStateSetting};
use crate::error::{Error, Result};
use crate::hosts::records::{self, RecordStore, keys};

/// The cursor key's name in the store.
const CURSOR_KEY: &str = "cursor";
/// How long a readiness answer is reused (a balancer's checks cost the store one round
/// trip per this, whatever their rate).
const READY_REUSE: Duration = Duration::from_secs(1);

/// Where a server's keys come from and whether its store answers.
#[derive(Debug)]
pub struct Service {
    /// The keys' store; `None` when no state directory is known and no Redis is set.
    store: Option<Arc<dyn RecordStore>>,
    /// Whether the store is the fleet's Redis (otherwise it is deliberately local).
    remote: bool,
    /// The last readiness answer and when it was had.
    last: Mutex<Option<(Instant, std::result::Result<(), &'static str>)>>,
}

/// Where the cursor key came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The shared store: every process of the store honours this one's cursors.
    Shared,
    /// This process alone (no store is known): its cursors end with it.
    Process,
}

impl Service {
    /// The store `config` names for keys: the fleet's Redis with `--gate-store`, else files
    /// under the state directory (none when no state directory is known).
    pub fn open(config: &Config) -> Result<Service> {
        let remote = matches!(config.host_state, HostStateSetting::Redis(_));
        let store = match (&config.state_dir, remote) {
            (None, false) => None,
            (dir, _) => {
                let dir = dir.clone().unwrap_or_default().join("keys");
                Some(records::open_in(config, &dir, "keys").map_err(Error::HostStore)?)
            }
        };
        Ok(Service {
            store,
            remote,
            last: Mutex::new(None),
        })
    }

    /// Whether the store is the fleet's Redis (not a local one).
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// The key page cursors are signed with: the store's (drawn now if it has none), or,
    /// with no store, one of this process's own.
    pub async fn cursor_key(&self) -> Result<(CursorKey, KeySource)> {
        let Some(store) = &self.store else {
            return Ok((CursorKey::default(), KeySource::Process));
        };
        let key = keys::shared_key(store.as_ref(), CURSOR_KEY)
            .await
            .map_err(|e| Error::internal_from("cannot read the cursor key from the store", e))?;
        Ok((CursorKey::from_bytes(key), KeySource::Shared))
    }

    /// Whether the store answers: `Ok` for a local store (files, or none: deliberately
    /// local), else whether Redis answered a read within its timeout; the reason when not.
    /// An answer is reused for a second.
    pub async fn ready(&self) -> std::result::Result<(), &'static str> {
        let Some(store) = self.store.as_ref().filter(|_| self.remote) else {
            return Ok(());
        };
        let mut last = self.last.lock().await;
        if let Some((at, answer)) = *last
            && at.elapsed() < READY_REUSE
        {
            return answer;
        }
        let answer = match store.load_many(&[]).await {
            Ok(_) => Ok(()),
            Err(_) => Err("the shared store does not answer"),
        };
        *last = Some((Instant::now(), answer));
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(state: Option<&std::path::Path>) -> Config {
        let mut c = Config::resolve(Default::default(), |_| None).unwrap();
        c.state_dir = state.map(|p| p.to_path_buf());
        c
    }

    #[tokio::test]
    async fn two_servers_of_one_state_directory_sign_cursors_with_one_key() {
        let dir = tempfile::tempdir().unwrap();
        let a = Service::open(&config(Some(dir.path()))).unwrap();
        let b = Service::open(&config(Some(dir.path()))).unwrap();
        let (ka, sa) = a.cursor_key().await.unwrap();
        let (kb, _) = b.cursor_key().await.unwrap();
        assert_eq!(sa, KeySource::Shared);
        assert!(ka.same_as(&kb));
        let other = tempfile::tempdir().unwrap();
        let (kc, _) = Service::open(&config(Some(other.path())))
            .unwrap()
            .cursor_key()
            .await
            .unwrap();
        assert!(!ka.same_as(&kc));
        assert!(a.ready().await.is_ok());
    }

    #[tokio::test]
    async fn with_no_store_the_key_is_the_process_own_and_the_server_is_ready() {
        let s = Service::open(&config(None)).unwrap();
        assert_eq!(s.cursor_key().await.unwrap().1, KeySource::Process);
        assert!(s.ready().await.is_ok());
    }

    #[tokio::test]
    async fn a_redis_that_does_not_answer_is_not_ready() {
        let mut c = config(None);
        // Nothing listens on port 1 of loopback.
        c.host_state = HostStateSetting::Redis("redis://127.0.0.1:1/0".into());
        let s = Service::open(&c).unwrap();
        assert_eq!(s.ready().await, Err("the shared store does not answer"));
        assert!(s.cursor_key().await.is_err());
    }
}
