//! One deadline for a whole call (`rss mcp --call-timeout`): the gate's waits are cut to
//! it, and whatever is still under way when it comes is answered as `RATE_LIMITED` with
//! the wait its host still asks for, so the call answers in time with what finished.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::Context;
use crate::error::Error;

/// The least wait a cut-off fetch is told to leave before asking again.
const LEAST_RETRY: Duration = Duration::from_secs(1);

/// The gate's deadline for a call: `--max-gate-wait` from now, or the call's own deadline
/// when that comes first.
pub(crate) fn gate_deadline(ctx: &Context, call: Option<Instant>) -> Instant {
    let gate = ctx.client.deadline();
    call.map_or(gate, |c| c.min(gate))
}

/// Runs `work` until `call` (no limit when `None`); past it, the work is dropped (which
/// frees its host at once) and `cut()` answers instead.
pub(crate) async fn within<T>(
    call: Option<Instant>,
    work: impl Future<Output = T>,
    cut: impl FnOnce() -> T,
) -> T {
    match call {
        None => work.await,
        Some(at) => tokio::time::timeout_at(at, work)
            .await
            .unwrap_or_else(|_| cut()),
    }
}

/// What a fetch of `url` cut off by the call's deadline answers: `RATE_LIMITED`, with the
/// wait the gate still holds for its host (at least a second).
pub fn cut_off(ctx: &Context, url: &Url) -> Error {
    let key = ctx.client.key_of(url);
    let wait = key
        .as_ref()
        .map(|k| ctx.client.gate().state_of(k).pacing(Instant::now()))
        .unwrap_or_default()
        .max(LEAST_RETRY);
    Error::RateLimited {
        wait,
        http_status: None,
        retry_after: None,
        host: key.map_or_else(
            || url.host_str().unwrap_or("").to_owned(),
            |k| k.as_str().to_owned(),
        ),
    }
}
