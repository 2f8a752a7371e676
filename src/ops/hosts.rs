//! `rss hosts`: the learned state of every host in the shared store, and forgetting it.

use crate::model::WarningCode;
use chrono::{DateTime, Utc};

use super::Context;
use crate::error::{Error, Result};
use crate::feed::date;
use crate::gate::HostKey;
use crate::hosts::{Clock, StoredHost};
use crate::model::{HostInfo, HostsOutput, SCHEMA_VERSION, Warning};

fn time(ms: u64) -> Option<String> {
    DateTime::<Utc>::from_timestamp_millis(i64::try_from(ms).ok()?).map(|t| date::format(&t))
}

fn info(s: &StoredHost, now_ms: u64) -> HostInfo {
    HostInfo {
        host: s.host.clone(),
        cooling_down_until: s.next_allowed_ms.filter(|&t| t > now_ms).and_then(time),
        warm_until: s.warm_until_ms.filter(|&t| t > now_ms).and_then(time),
        depth: s.depth,
        floor_ms: s.floor_ms,
        last_retry_after_ms: s.last_retry_after_ms,
        last_status: s.last_status,
        updated_at: time(s.updated_ms).unwrap_or_default(),
    }
}

/// Lists the live host state of the configured store (`rss hosts`); lapsed entries are
/// left out.
pub async fn hosts_list(ctx: &Context) -> Result<HostsOutput> {
    let mut warnings: Vec<Warning> = ctx.standing_warnings();
    let Some(store) = ctx.client.hosts().store() else {
        return Ok(HostsOutput {
            schema_version: SCHEMA_VERSION.to_owned(),
            store: None,
            hosts: Vec::new(),
            warnings,
        });
    };
    let params = *ctx.client.gate().params();
    let listed = store.list().await.map_err(Error::HostStore)?;
    let now_ms = Clock::now().wall_ms();
    let mut hosts = Vec::new();
    for entry in listed {
        match entry {
            Ok(s) if !s.is_expired(&params) => hosts.push(info(&s, now_ms)),
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
                .and_then(|u| HostKey::from_url(&u))
                .or_else(|| HostKey::parse(h))
                .ok_or_else(|| {
                    Error::usage(format!(
                        "{h:?} is not a host: give host:port (example.com:443) or a URL"
                    ))
                })
        })
        .transpose()?;
    ctx.client.gate().forget(key.as_ref());
    let Some(store) = ctx.client.hosts().store() else {
        return Ok(0);
    };
    store.clear(key.as_ref()).await.map_err(Error::HostStore)
}
