//! `rss hosts`: the learned state of every host in the shared store, and forgetting it.

use crate::model::WarningCode;
use chrono::{DateTime, Utc};

use super::Context;
use crate::date;
use crate::error::{Error, Result};
use crate::gate::HostKey;
use crate::hosts::StoredHost;
use crate::model::{HostInfo, HostsOutput, SCHEMA_VERSION, Warning};

fn time(ms: u64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_millis(i64::try_from(ms).ok()?).map(|t| date::format(&t))
}

fn info(s: &StoredHost, now_ms: u64) -> HostInfo {
    let live = |t: Option<u64>| t.filter(|&t| t > now_ms);
    let warm = live(s.warm_until_ms);
    let floor_until = live(s.floor_until_ms).filter(|_| s.floor_ms.is_some());
    let spacing_until = live(s.spacing_until_ms).filter(|_| s.spacing_ms.is_some());
    let spacing_ms = s.spacing_ms.filter(|_| spacing_until.is_some());
    let crawl_until = live(s.crawl_delay_until_ms).filter(|_| s.crawl_delay_ms.is_some());
    let quota_until = live(s.quota_reset_ms).filter(|_| s.quota_remaining.is_some());
    HostInfo {
        host: s.host.clone(),
        cooling_down_until: live(s.next_allowed_ms).and_then(time),
        warm_until: warm.and_then(time),
        depth: if warm.is_some() { s.depth } else { 0 },
        floor_ms: s.floor_ms.filter(|_| floor_until.is_some()),
        floor_until: floor_until.and_then(time),
        spacing_ms,
        spacing_until: spacing_until.and_then(time),
        probe_after: spacing_ms.and_then(|good| {
            crate::gate::probe_after(good, s.floor_ms.filter(|_| floor_until.is_some()), s.run)
        }),
        last_retry_after_ms: s.last_retry_after_ms.filter(|_| warm.is_some()),
        last_status: s.last_status,
        crawl_delay_ms: s.crawl_delay_ms.filter(|_| crawl_until.is_some()),
        crawl_delay_until: crawl_until.and_then(time),
        quota_remaining: s.quota_remaining.filter(|_| quota_until.is_some()),
        quota_resets_at: quota_until.and_then(time),
        updated_at: time(s.updated_ms).unwrap_or_default(),
        lapses_at: s.lapses_ms().and_then(time),
    }
}

fn key_name(ctx: &Context) -> String {
    match ctx.client.key_mode() {
        crate::gate::KeyMode::Host => "host",
        crate::gate::KeyMode::Site => "site",
    }
    .to_owned()
}

/// Lists the live host state of the configured store (`rss hosts`): what the gate
/// enforces now. Lapsed entries and clear markers are left out.
pub async fn hosts_list(ctx: &Context) -> Result<HostsOutput> {
    let mut warnings: Vec<Warning> = ctx.standing_warnings();
    let Some(store) = ctx.client.hosts().store() else {
        return Ok(HostsOutput {
            host_key: key_name(ctx),
            schema_version: SCHEMA_VERSION.to_owned(),
            store: None,
            hosts: Vec::new(),
            warnings,
        });
    };
    let (listed, clock) = store.list().await.map_err(Error::HostStore)?;
    let now_ms = clock.wall_ms();
    let mut hosts = Vec::new();
    for entry in listed {
        match entry {
            Ok(s) if !s.is_expired(now_ms) && !s.is_clear_marker() => hosts.push(info(&s, now_ms)),
            Ok(_) => {}
            Err(e) => warnings.push(Warning::new(
                None,
                WarningCode::HostStateCorrupt,
                e.to_string(),
            )),
        }
    }
    hosts.sort_by(|a, b| a.host.cmp(&b.host));
    Ok(HostsOutput {
        host_key: key_name(ctx),
        schema_version: SCHEMA_VERSION.to_owned(),
        store: Some(store.describe()),
        hosts,
        warnings,
    })
}

/// Forgets the learned state of `host` (`host:port`, or a URL), or of every host
/// (`rss hosts clear [HOST]`); returns how many entries went.
pub async fn hosts_clear(ctx: &Context, host: Option<&str>) -> Result<usize> {
    let key = host
        .map(|h| {
            url::Url::parse(h)
                .ok()
                .and_then(|u| ctx.client.key_of(&u))
                .or_else(|| HostKey::parse(h))
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{h:?} is not a host: give host:port (example.com:443) or a URL"
                    ))
                })
        })
        .transpose()?;
    ctx.client.gate().forget(key.as_ref());
    ctx.client
        .hosts()
        .clear(ctx.client.gate().params(), key.as_ref())
        .await
        .map_err(Error::HostStore)
}
