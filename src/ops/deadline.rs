//! One deadline for a whole call (`rss mcp --call-timeout`): the gate's waits are cut to
//! it, and whatever is still under way when it comes is answered as `RATE_LIMITED` with
//! the wait its host still asks for, so the call answers in time with what finished.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;
use url::Url;

use super::Context;
use crate::error::Error;
use crate::inputs::{Input, Source};

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

/// The web addresses among `inputs` (what [`holding_back`] looks at).
pub fn web_urls(inputs: &[crate::inputs::Input]) -> Vec<Url> {
    inputs
        .iter()
        .filter_map(|i| match &i.source {
            crate::inputs::Source::Http(u) => Some(u.clone()),
            _ => None,
        })
        .collect()
}

/// The hosts of `urls` that the gate holds back now, with how long each still waits
/// (longest first): what a call that has not finished is waiting for.
pub fn holding_back(ctx: &Context, urls: &[Url]) -> Vec<(String, Duration)> {
    let now = Instant::now();
    let mut seen = std::collections::BTreeSet::new();
    let mut out: Vec<(String, Duration)> = urls
        .iter()
        .filter_map(|u| ctx.client.key_of(u))
        .filter(|k| seen.insert(k.clone()))
        .filter_map(|k| {
            let wait = ctx.client.gate().state_of(&k).pacing(now);
            (!wait.is_zero()).then(|| (k.as_str().to_owned(), wait))
        })
        .collect();
    out.sort_by_key(|(_, wait)| std::cmp::Reverse(*wait));
    out
}

/// Runs `work` on `input` until `call`; past it, `failed(input, error)` answers for it,
/// the error being [`cut_off`]'s for a web address.
pub(crate) async fn input_within<T, F: Future<Output = T>>(
    ctx: &Context,
    call: Option<Instant>,
    input: Input,
    work: impl FnOnce(Input) -> F,
    failed: impl FnOnce(&str, &Error) -> T,
) -> T {
    let name = input.feed_url.clone();
    let url = match &input.source {
        Source::Http(u) => Some(u.clone()),
        _ => None,
    };
    within(call, work(input), || {
        failed(&name, &cut_error(ctx, url.as_ref()))
    })
    .await
}

/// Runs a one-request operation on `url` (as given) until `call`; past it, [`cut_off`]'s
/// error.
pub async fn url_within<T>(
    ctx: &Context,
    call: Instant,
    url: &str,
    work: impl Future<Output = crate::error::Result<T>>,
) -> crate::error::Result<T> {
    let parsed = Url::parse(url.trim()).ok();
    within(Some(call), work, || Err(cut_error(ctx, parsed.as_ref()))).await
}

fn cut_error(ctx: &Context, url: Option<&Url>) -> Error {
    match url {
        Some(u) => cut_off(ctx, u),
        None => Error::internal("a local read outlived the call's deadline"),
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
