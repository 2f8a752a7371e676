//! The shared host state through the file store, as two processes of one machine see it
//! (two gates, two links, one directory).

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::gate::{GateParams, Outcome};

fn key() -> HostKey {
    HostKey::parse("a.test:80").unwrap()
}

/// A process: its own gate and its link to the store in `dir`.
fn process(dir: &std::path::Path) -> (Gate, SharedHosts, Arc<dyn HostStore>) {
    let store: Arc<dyn HostStore> = Arc::new(file::FileStore::open(dir, 0).unwrap());
    (
        Gate::new(GateParams::default()),
        SharedHosts::with_store(store.clone()),
        store,
    )
}

/// One refused send with `Retry-After: ra`, learned and published.
async fn refused(gate: &Gate, hosts: &SharedHosts, ra: u64) {
    let k = key();
    let mut notes = Notes::default();
    let mut p = gate.acquire(&k, tokio::time::Instant::now()).await.unwrap();
    let before = gate.state_of(&k);
    let start = p.start_send();
    hosts.publish(gate, &k, before, start, &mut notes).await;
    let before = gate.state_of(&k);
    let end = p.record(
        Outcome::Refused {
            retry_after: Some(Duration::from_secs(ra)),
        },
        Some(429),
    );
    hosts.publish(gate, &k, before, end, &mut notes).await;
    assert!(notes.into_vec().is_empty());
}

fn entry(last_admitted_ago_ms: u64, floor_until_in_ms: i64) -> StoredHost {
    let now = Clock::local(0).wall_ms();
    StoredHost {
        host: "a.test:80".into(),
        next_allowed_ms: None,
        warm_until_ms: None,
        depth: 0,
        last_retry_after_ms: None,
        floor_ms: Some(5_000),
        floor_until_ms: Some(now.saturating_add_signed(floor_until_in_ms)),
        last_admitted_ms: Some(now - last_admitted_ago_ms),
        last_status: Some(429),
        crawl_delay_ms: None,
        crawl_delay_until_ms: None,
        quota_remaining: None,
        quota_reset_ms: None,
        updated_ms: now - 600_000,
        cleared_until_ms: None,
        ..StoredHost::default()
    }
}

#[tokio::test]
async fn issue_19_a_floor_past_its_lifetime_is_ignored_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (gate, hosts, store) = process(dir.path());
    let put = |_: Option<StoredHost>, _: Clock| Some(entry(1_000, -1_000));
    store.update(&key(), &put).await.unwrap();
    hosts.refresh(&gate, &key(), &mut Notes::default()).await;
    assert_eq!(
        gate.state_of(&key()).pacing(tokio::time::Instant::now()),
        Duration::ZERO
    );
    assert_eq!(store.load(&key()).await.unwrap().stored, None, "deleted");
}

#[tokio::test]
async fn issue_19_a_floor_within_its_lifetime_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let (gate, hosts, store) = process(dir.path());
    let put = |_: Option<StoredHost>, _: Clock| Some(entry(1_000, 60_000));
    store.update(&key(), &put).await.unwrap();
    hosts.refresh(&gate, &key(), &mut Notes::default()).await;
    let pacing = gate.state_of(&key()).pacing(tokio::time::Instant::now());
    // The host refused a gap of 5 s: the next send clears it by a tenth, 5.5 s after the
    // admitted send a second ago.
    assert!(
        pacing > Duration::from_millis(4_000) && pacing <= Duration::from_millis(4_500),
        "{pacing:?}"
    );
    assert!(store.load(&key()).await.unwrap().stored.is_some());
}

#[tokio::test]
async fn issue_19_a_clear_reaches_a_running_process_on_its_next_read() {
    let dir = tempfile::tempdir().unwrap();
    let (server_gate, server_hosts, _) = process(dir.path());
    refused(&server_gate, &server_hosts, 30).await;
    let now = tokio::time::Instant::now();
    assert!(server_gate.state_of(&key()).pacing(now) > Duration::from_secs(25));
    // `rss hosts clear`, in another process.
    let (_, clearing, store) = process(dir.path());
    let params = GateParams::default();
    assert_eq!(clearing.clear(&params, None).await.unwrap(), 1);
    // The running process forgets what it knew on its next re-read...
    server_hosts
        .refresh(&server_gate, &key(), &mut Notes::default())
        .await;
    let now = tokio::time::Instant::now();
    assert_eq!(server_gate.state_of(&key()).pacing(now), Duration::ZERO);
    // ...and a send it makes then does not bring the old state back.
    let k = key();
    let mut notes = Notes::default();
    let mut p = server_gate.acquire(&k, now).await.unwrap();
    let before = server_gate.state_of(&k);
    let start = p.start_send();
    server_hosts
        .publish(&server_gate, &k, before, start, &mut notes)
        .await;
    let before = server_gate.state_of(&k);
    let end = p.record(Outcome::Success, Some(200));
    server_hosts
        .publish(&server_gate, &k, before, end, &mut notes)
        .await;
    let stored = store.load(&k).await.unwrap().stored.unwrap();
    assert!(stored.is_clear_marker(), "{stored:?}");
    // Nothing to list: the marker is no state.
    let (listed, _) = store.list().await.unwrap();
    assert!(listed.iter().all(|e| e.as_ref().unwrap().is_clear_marker()));
}

#[tokio::test]
async fn issue_19_a_warning_belongs_to_the_operation_that_met_it() {
    // A store that cannot be written: the operation that met the failure has the warning,
    // another operation does not.
    let dir = tempfile::tempdir().unwrap();
    let (gate, hosts, _) = process(dir.path());
    std::fs::remove_dir_all(dir.path()).unwrap();
    std::fs::write(dir.path(), b"not a directory").unwrap();
    let mut met = Notes::default();
    let k = key();
    let mut p = gate.acquire(&k, tokio::time::Instant::now()).await.unwrap();
    let before = gate.state_of(&k);
    let end = p.record(Outcome::Refused { retry_after: None }, Some(429));
    hosts.publish(&gate, &k, before, end, &mut met).await;
    let other = Notes::default();
    let met = met.into_vec();
    assert_eq!(met.len(), 1, "{met:?}");
    assert_eq!(met[0].code, WarningCode::GateStoreUnavailable);
    assert!(other.into_vec().is_empty());
}
