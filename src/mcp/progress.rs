//! Progress notifications for a call whose client gave a `progressToken`: one as each feed
//! or page finishes, and a heartbeat at least every [`HEARTBEAT`] while the call waits (in
//! the gate, or on a slow host), so clients that reset their request timeout on progress
//! (the TypeScript SDK's `resetTimeoutOnProgress`) keep waiting for the answer.

use std::future::Future;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::inputs::Input;
use crate::ops::{self, Context};

/// The longest a call goes without a progress notification.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// What a call still waits for, in words: the hosts the gate holds back (with how long),
/// else the answers of the requests under way.
fn describe(held: &[(String, Duration)]) -> String {
    if held.is_empty() {
        return "the answers of the requests under way".to_owned();
    }
    let named: Vec<String> = held
        .iter()
        .take(5)
        .map(|(host, wait)| format!("{host} (its turn in {} s)", wait.as_secs_f64().ceil()))
        .collect();
    let more = held.len().saturating_sub(named.len());
    let tail = if more > 0 {
        format!(" and {more} more hosts")
    } else {
        String::new()
    };
    format!("{}{tail}", named.join(", "))
}

/// What a call's progress is told from: the `(done, total)` its operation reports, and
/// the web addresses it waits on.
pub struct Tracker {
    rx: UnboundedReceiver<(usize, usize)>,
    total: usize,
    urls: Vec<url::Url>,
}

/// A tracker for a call over `inputs`, and the callback its operation reports on.
pub fn track(inputs: &[Input]) -> (Tracker, impl Fn(usize, usize) + Sync + Send + use<>) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(usize, usize)>();
    let tracker = Tracker {
        rx,
        total: inputs.len(),
        urls: ops::web_urls(inputs),
    };
    (tracker, move |done: usize, total: usize| {
        let _ = tx.send((done, total));
    })
}

impl Tracker {
    /// Runs `work` (the operation reporting to this tracker), telling the client of its
    /// progress; `noun` names what is counted ("feeds").
    pub async fn report<T>(
        self,
        work: impl Future<Output = T>,
        ctx: &Context,
        context: &RequestContext<RoleServer>,
        noun: &str,
    ) -> T {
        let urls = self.urls;
        let waiting = || describe(&ops::holding_back(ctx, &urls));
        report(work, self.rx, self.total, context, noun, waiting).await
    }
}

/// Runs `work`, telling the client (when it asked) of every `(done, total)` that `rx`
/// brings, and of the wait between them. `noun` names what is counted ("feeds").
async fn report<T>(
    work: impl Future<Output = T>,
    mut rx: UnboundedReceiver<(usize, usize)>,
    total: usize,
    context: &RequestContext<RoleServer>,
    noun: &str,
    waiting_for: impl Fn() -> String,
) -> T {
    let token = context.meta.get_progress_token();
    // Progress must grow with every notification: a heartbeat adds less and less to the
    // count done, never reaching the next whole one.
    let notify = |progress: f64, total: usize, message: String| {
        let peer = context.peer.clone();
        let token = token.clone();
        async move {
            if let Some(token) = token {
                let p = ProgressNotificationParam::new(token, progress)
                    .with_total(total as f64)
                    .with_message(message);
                let _ = peer.notify_progress(p).await;
            }
        }
    };
    tokio::pin!(work);
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    let (mut done, mut total, mut beats) = (0usize, total, 0i32);
    let out = loop {
        tokio::select! {
            out = &mut work => break out,
            Some((d, t)) = rx.recv() => {
                (done, total, beats) = (d, t, 0);
                notify(d as f64, t, format!("{d}/{t} {noun} done")).await;
                beat.reset();
            }
            _ = beat.tick() => {
                beats += 1;
                let progress = done as f64 + 1.0 - 0.5f64.powi(beats);
                let message = format!("{done}/{total} {noun} done; waiting for {}", waiting_for());
                notify(progress, total, message).await;
            }
        }
    };
    while let Ok((d, t)) = rx.try_recv() {
        notify(d as f64, t, format!("{d}/{t} {noun} done")).await;
    }
    out
}
