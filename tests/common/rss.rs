//! The `rss` binary as tests and benchmarks run it: with no `RSS_*` setting inherited from
//! the developer's shell.

/// The `RSS_*` variables of this process's environment: a run never inherits them.
pub fn rss_vars() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("RSS_"))
        .collect()
}

/// A `tokio` command for the binary with a clean environment.
pub fn rss_tokio() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_rss"));
    for var in rss_vars() {
        cmd.env_remove(var);
    }
    cmd
}

/// A blocking command for the binary with a clean environment.
pub fn rss_blocking() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rss"));
    for var in rss_vars() {
        cmd.env_remove(var);
    }
    cmd
}
