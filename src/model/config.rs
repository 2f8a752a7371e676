//! What `rss config check` prints: the settings in force and each rule's, every secret as
//! `***` with where it comes from.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The result of `rss config check`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConfigCheckOutput {
    /// Contract version.
    pub schema_version: String,
    /// The file checked; `null` when there is none (nothing is configured).
    pub path: Option<String>,
    /// The global settings in force: each flag's, else its environment variable's, else the
    /// file's `[defaults]`, else the built-in default.
    pub effective: EffectiveSettings,
    /// The file's `[[site]]` rules, in file order.
    pub rules: Vec<ConfigRuleInfo>,
    /// Which rule `--url` gets; `null` without `--url`.
    pub url: Option<ConfigUrlMatch>,
}

/// The global settings in force.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EffectiveSettings {
    /// The User-Agent sent where no rule sets one.
    pub user_agent: String,
    /// Requests in flight across all hosts.
    pub concurrency: usize,
    /// Requests in flight per host where no rule sets it.
    pub host_concurrency: usize,
    /// The longest wait for a host, in seconds.
    pub max_gate_wait_seconds: u64,
    /// The time limit for connecting and for reading a response, in seconds.
    pub timeout_seconds: f64,
    /// The largest body accepted, in bytes.
    pub max_body_bytes: u64,
    /// The cache directory.
    pub cache_dir: Option<String>,
    /// The cap on the cache's bytes on disk (0: no cap).
    pub cache_max_bytes: u64,
    /// The longest a server's own freshness is trusted, in seconds, where no rule sets it.
    pub max_freshness_seconds: u64,
    /// `host` or `site`, where no rule sets it.
    pub host_key: String,
    /// Whether non-public addresses are refused.
    pub deny_private_networks: bool,
    /// Where host state is kept: `files`, `off`, or the Redis URL (its password as `***`).
    pub host_state: String,
    /// Whether the CLI's page reads honour robots.txt without `--respect-robots`.
    pub respect_robots: bool,
    /// The MCP server's deadline per call, in seconds.
    pub call_timeout_seconds: u64,
    /// The shortest interval a watched feed that says nothing of its schedule is checked
    /// at, in seconds.
    pub watch_min_interval_seconds: u64,
    /// The longest interval between two checks of a watched feed, in seconds.
    pub watch_max_interval_seconds: u64,
}

/// One rule as it is in force.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConfigRuleInfo {
    /// Its place among the rules, from 1.
    pub index: usize,
    /// The line its `[[site]]` table starts on.
    pub line: usize,
    /// How it matches: `url_prefix`, `host` or `site`.
    pub match_by: String,
    /// What it matches, normalised.
    pub matches: String,
    /// The headers it sends: a plain value as written, a secret as `*** (env VAR)` or
    /// `*** (file PATH)`.
    pub headers: BTreeMap<String, String>,
    /// Its credentials, if any.
    pub auth: Option<ConfigAuthInfo>,
    /// The User-Agent its URLs get (the rule's, else the global one).
    pub user_agent: String,
    /// Where its requests go: `environment` (the environment's proxies), `none` (direct)
    /// or the proxy's URL.
    pub proxy: String,
    /// What the gate keys its URLs on: `host` or `site`.
    pub host_key: String,
    /// Requests in flight to its host at once.
    pub host_concurrency: usize,
    /// The least time between two requests' starts to its host, in milliseconds; `null`:
    /// none beyond what the gate learns.
    pub min_interval_ms: Option<u64>,
    /// Whether page reads honour robots.txt there; `null`: as the caller decides (the MCP
    /// server yes, the CLI with `--respect-robots`).
    pub respect_robots: Option<bool>,
    /// The longest its server's freshness is trusted, in seconds.
    pub max_freshness_seconds: u64,
}

/// A rule's credentials, the secret shown as `***`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConfigAuthInfo {
    /// `basic` or `bearer`.
    pub scheme: String,
    /// The user name (`basic`), or `null`.
    pub user: Option<String>,
    /// Always `***`.
    pub secret: String,
    /// Where the secret is read from: `env VAR` or `file PATH`.
    pub from: String,
}

/// Which rule a URL gets.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ConfigUrlMatch {
    /// The URL as given (a password in it as `***`).
    pub url: String,
    /// The index of the rule that wins for it; `null`: none matches, the global settings
    /// apply.
    pub rule: Option<usize>,
    /// Every rule that matches it, most specific first.
    pub matching: Vec<usize>,
}
