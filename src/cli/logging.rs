//! Logs on stderr (never stdout), through the progress bar's writer so they do not tear it:
//! lines for a person, or one JSON object a line (`--log-format json`) for a server's log
//! collector. Neither ever carries a secret (see `RMCP_CEILING`).

use std::io::IsTerminal;

/// Sets up logging: `-q` errors only, `-v` info, `-vv` debug (`RUST_LOG` overrides), the
/// MCP library's lines included (never above info: its debug lines quote every tool call's
/// arguments, a feed URL with its password among them); `json` writes one JSON object a line.
pub(super) fn init(quiet: bool, verbose: u8, json: bool) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    let (filter, rmcp) = match EnvFilter::try_from_default_env() {
        // RUST_LOG may raise any library's level but rmcp's, held at info at most.
        Ok(f) => (f, "info"),
        Err(_) => (
            EnvFilter::new(format!("rss={level}")),
            if level == "debug" { "info" } else { level },
        ),
    };
    let filter = filter.add_directive(format!("rmcp={rmcp}").parse().expect("a valid directive"));
    let indicatif = tracing_indicatif::IndicatifLayer::new();
    let text = (!json).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(indicatif.get_stderr_writer())
            .with_target(false)
            .with_ansi(std::io::stderr().is_terminal())
    });
    let lines = json.then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_target(false)
            .with_current_span(false)
            .with_span_list(false)
    });
    let registry = tracing_subscriber::registry()
        .with(text.with_filter(filter.clone()))
        .with(lines.with_filter(filter))
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
