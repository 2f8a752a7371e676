//! The signals that end a run: `SIGINT` (Ctrl-C) and `SIGTERM`.

use std::future::Future;

/// Installs the handlers now (so a signal that comes early is not the default, fatal one)
/// and returns a future that resolves with the signal's name when `SIGINT` or `SIGTERM`
/// arrives (never, when the handlers cannot be installed). Call it inside the runtime.
pub(crate) fn shutdown() -> impl Future<Output = &'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let handlers = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    );
    async move {
        let (Ok(mut int), Ok(mut term)) = handlers else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = int.recv() => "SIGINT",
            _ = term.recv() => "SIGTERM",
        }
    }
}
