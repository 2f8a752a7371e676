//! The `rss` binary as tests and benchmarks run it: with no `RSS_*` setting inherited from
//! the developer's shell.

/// Environment variables a run never inherits.
pub const RSS_ENV: [&str; 8] = [
    "RSS_MCP_TOKEN",
    "RSS_HOST_CONCURRENCY",
    "RSS_MAX_COOLDOWN_SECS",
    "RSS_MAX_GATE_WAIT_SECS",
    "RSS_HOST_STATE",
    "RSS_GATE_STORE",
    "RSS_USER_AGENT",
    "RSS_CACHE_MAX_BYTES",
];

/// A `tokio` command for the binary with a clean environment.
pub fn rss_tokio() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_rss"));
    for var in RSS_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// A blocking command for the binary with a clean environment.
pub fn rss_blocking() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rss"));
    for var in RSS_ENV {
        cmd.env_remove(var);
    }
    cmd
}
