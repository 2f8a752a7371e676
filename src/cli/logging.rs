//! Logs on stderr (never stdout), through the progress bar's writer so they do not tear it.

use std::io::IsTerminal;

/// The most rmcp may log.
const RMCP_CEILING: &str = "rmcp=info";

/// Sets up logging: `-q` errors only, `-v` info, `-vv` debug (`RUST_LOG` overrides).
pub(super) fn init(quiet: bool, verbose: u8) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    // rmcp logs every tool call's arguments at debug level (a feed URL with its password
    // among them), so it is held at info whatever RUST_LOG asks: no secret in any log.
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("rss={level}")))
        .add_directive(RMCP_CEILING.parse().expect("a valid directive"));
    let indicatif = tracing_indicatif::IndicatifLayer::new();
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(indicatif.get_stderr_writer())
        .with_target(false)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(filter);
    let registry = tracing_subscriber::registry()
        .with(fmt)
        .with(indicatif.with_filter(tracing_indicatif::filter::IndicatifFilter::new(false)));
    if verbose >= 2 && !quiet {
        // With -vv the libraries' own `log` records come through too.
        let _ = registry.try_init();
    } else {
        // Without the `log` bridge: the HTML parser logs every parse error at trace
        // level, and formatting those costs more than reading the page.
        let _ = tracing::subscriber::set_global_default(registry);
    }
}
