//! The config file's format as serde reads it (every table refuses keys it does not know)
//! and as its JSON Schema describes it (`rss schema --command config`). Values whose
//! checks come after parsing keep their place in the file ([`Spanned`]) so an error can
//! name its line and column.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// The whole file: `[defaults]` and any number of `[[site]]` rules.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "rss config file",
    description = "The owner's settings for rss ($XDG_CONFIG_HOME/rss/config.toml, --config FILE or RSS_CONFIG). Secrets are named, never written here: an environment variable (env, *_env) or a file readable only by its owner (file, *_file)."
)]
pub struct FileConfig {
    /// Global defaults, by the names of the flags they stand for (`-` written `_`): a flag
    /// or an environment variable overrides each.
    #[serde(default)]
    pub defaults: Defaults,
    /// Rules for the URLs they match: each matches by exactly one of `url_prefix`, `host`
    /// or `site`; the most specific match wins, and only its settings apply.
    #[serde(default)]
    #[schemars(with = "Vec<SiteRule>")]
    pub site: Vec<Spanned<SiteRule>>,
}

/// `[defaults]`: what the flags of the same names set when neither they nor their
/// environment variables are given.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// `--user-agent`: the User-Agent sent (`name/version (+contact URL)`).
    #[schemars(with = "Option<String>")]
    pub user_agent: Option<Spanned<String>>,
    /// `--concurrency`: requests in flight across all hosts (1–1024).
    #[schemars(with = "Option<u64>")]
    pub concurrency: Option<Spanned<u64>>,
    /// `--host-concurrency`: requests in flight per host (1–64).
    #[schemars(with = "Option<u64>")]
    pub host_concurrency: Option<Spanned<u64>>,
    /// `--max-gate-wait`: the longest wait for a host, in seconds (0–86400).
    #[schemars(with = "Option<u64>")]
    pub max_gate_wait: Option<Spanned<u64>>,
    /// `--timeout`: the time limit for connecting and for reading a response, in seconds.
    #[schemars(with = "Option<f64>")]
    pub timeout: Option<Spanned<f64>>,
    /// `--max-body-bytes`: the largest body accepted, after decoding.
    #[schemars(with = "Option<u64>")]
    pub max_body_bytes: Option<Spanned<u64>>,
    /// `--cache-max-bytes`: the cap on the cache's bytes on disk (0: no cap).
    #[schemars(with = "Option<u64>")]
    pub cache_max_bytes: Option<Spanned<u64>>,
    /// `--cache-dir`: the cache directory (`~/` is your home; a relative path is taken
    /// from the config file's directory).
    #[schemars(with = "Option<String>")]
    pub cache_dir: Option<Spanned<String>>,
    /// `--max-freshness`: the longest a server's own freshness is trusted (`1h`, `90s`, or
    /// seconds).
    #[schemars(with = "Option<DurationSchema>")]
    pub max_freshness: Option<Spanned<DurationValue>>,
    /// `--watch-min-interval`: the shortest interval a watched feed that says nothing of its
    /// schedule is checked at (`5m`, or seconds).
    #[schemars(with = "Option<DurationSchema>")]
    pub watch_min_interval: Option<Spanned<DurationValue>>,
    /// `--watch-max-interval`: the longest interval between two checks of a watched feed
    /// (`24h`, or seconds).
    #[schemars(with = "Option<DurationSchema>")]
    pub watch_max_interval: Option<Spanned<DurationValue>>,
    /// `--host-key`: what the gate paces together, each `host` or each `site`.
    pub host_key: Option<KeyChoice>,
    /// `--deny-private-networks`.
    pub deny_private_networks: Option<bool>,
    /// `--no-host-state`.
    pub no_host_state: Option<bool>,
    /// `--gate-store`: the Redis URL of a fleet's host state (a password in it is refused:
    /// give the URL in `RSS_GATE_STORE`).
    #[schemars(with = "Option<String>")]
    pub gate_store: Option<Spanned<String>>,
    /// `--respect-robots` of `rss fetch --articles` and `rss article`.
    pub respect_robots: Option<bool>,
    /// `rss mcp --call-timeout`: every tool call's deadline, in seconds (1–86400).
    #[schemars(with = "Option<u64>")]
    pub call_timeout: Option<Spanned<u64>>,
}

/// One `[[site]]` rule.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SiteRule {
    /// Matches every URL that starts with this http(s) URL
    /// (`https://feeds.example.com/private/`).
    #[schemars(with = "Option<String>")]
    pub url_prefix: Option<Spanned<String>>,
    /// Matches this host only, any scheme (`example.com`; `example.com:8443` for that port
    /// only).
    #[schemars(with = "Option<String>")]
    pub host: Option<Spanned<String>>,
    /// Matches this domain and all its subdomains (`example.com`: `a.example.com` too). A
    /// public suffix (`com`, `github.io`) is refused.
    #[schemars(with = "Option<String>")]
    pub site: Option<Spanned<String>>,
    /// Headers sent with each request the rule matches: a plain value, or `{ env = "VAR" }`
    /// / `{ file = "PATH" }` for one that carries a secret (an API key).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, HeaderSchema>")]
    pub headers: BTreeMap<Spanned<String>, Spanned<HeaderSpec>>,
    /// Credentials for the URLs the rule matches (never sent anywhere else).
    #[schemars(with = "Option<AuthSpec>")]
    pub auth: Option<Spanned<AuthSpec>>,
    /// The User-Agent sent to these URLs instead of the global one.
    #[schemars(with = "Option<String>")]
    pub user_agent: Option<Spanned<String>>,
    /// The proxy for these URLs (`http://proxy.internal:3128`), or `"none"` to go direct.
    #[schemars(with = "Option<String>")]
    pub proxy: Option<Spanned<String>>,
    /// What the gate paces together for these URLs: each `host`, or each `site`.
    pub host_key: Option<KeyChoice>,
    /// Requests in flight to the host at once (1–64); a host's setting, so only in a rule
    /// matched by `host` or `site`.
    #[schemars(with = "Option<u64>")]
    pub host_concurrency: Option<Spanned<u64>>,
    /// The least time between two requests' starts to the host (`20s`, or seconds), on
    /// top of what the gate learns; a host's setting, so only in a rule matched by `host`
    /// or `site`.
    #[schemars(with = "Option<DurationSchema>")]
    pub min_interval: Option<Spanned<DurationValue>>,
    /// Whether pages read from these URLs honour robots.txt (it overrides both
    /// `--respect-robots` and the MCP server, which honours it otherwise).
    pub respect_robots: Option<bool>,
    /// The longest the server's own freshness of these URLs is trusted (`1h`, or seconds).
    #[schemars(with = "Option<DurationSchema>")]
    pub max_freshness: Option<Spanned<DurationValue>>,
    /// Refused: a secret is named by `password_env` / `password_file`, never written.
    #[serde(default)]
    #[schemars(skip)]
    pub password: Option<Spanned<toml::Value>>,
    /// Refused, as `password`.
    #[serde(default)]
    #[schemars(skip)]
    pub token: Option<Spanned<toml::Value>>,
    /// Refused, as `password`.
    #[serde(default)]
    #[schemars(skip)]
    pub bearer: Option<Spanned<toml::Value>>,
}

/// `auth`: Basic (`basic = { user, password_env | password_file }`) or a bearer token
/// (`bearer_env` or `bearer_file`); exactly one.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuthSpec {
    /// HTTP Basic.
    pub basic: Option<BasicSpec>,
    /// The environment variable holding a bearer token (`Authorization: Bearer …`).
    pub bearer_env: Option<String>,
    /// A file (readable only by its owner) holding a bearer token.
    pub bearer_file: Option<String>,
    /// Refused: a secret is named by `bearer_env` / `bearer_file`, never written.
    #[serde(default)]
    #[schemars(skip)]
    pub password: Option<Spanned<toml::Value>>,
    /// Refused, as `password`.
    #[serde(default)]
    #[schemars(skip)]
    pub token: Option<Spanned<toml::Value>>,
    /// Refused, as `password`.
    #[serde(default)]
    #[schemars(skip)]
    pub bearer: Option<Spanned<toml::Value>>,
}

/// `auth.basic`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BasicSpec {
    /// The user name (not a secret: it is shown by `rss config check`).
    pub user: String,
    /// The environment variable holding the password.
    pub password_env: Option<String>,
    /// A file (readable only by its owner) holding the password.
    pub password_file: Option<String>,
    /// Refused: name the password with `password_env` or `password_file`.
    #[serde(default)]
    #[schemars(skip)]
    pub password: Option<Spanned<toml::Value>>,
    /// Refused, as `password`.
    #[serde(default)]
    #[schemars(skip)]
    pub token: Option<Spanned<toml::Value>>,
    /// Refused, as `password`.
    #[serde(default)]
    #[schemars(skip)]
    pub bearer: Option<Spanned<toml::Value>>,
}

/// `host` or `site`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyChoice {
    /// Each `host:port` is its own host.
    Host,
    /// Hosts are grouped by registrable domain.
    Site,
}

/// A header's value as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderSpec {
    /// Sent as written.
    Plain(String),
    /// The value of this environment variable.
    Env(String),
    /// The contents of this file.
    File(String),
}

impl<'de> Deserialize<'de> for HeaderSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const WHAT: &str =
            "a header's value is a string, { env = \"VARIABLE\" } or { file = \"PATH\" }";
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => Ok(HeaderSpec::Plain(s)),
            toml::Value::Table(t) if t.len() == 1 => match t.iter().next() {
                Some((k, toml::Value::String(v))) if k == "env" => Ok(HeaderSpec::Env(v.clone())),
                Some((k, toml::Value::String(v))) if k == "file" => Ok(HeaderSpec::File(v.clone())),
                _ => Err(D::Error::custom(WHAT)),
            },
            _ => Err(D::Error::custom(WHAT)),
        }
    }
}

/// A duration as written: seconds, or a number with a unit (`90s`, `30m`, `2h`, `7d`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationValue {
    /// Whole seconds.
    Seconds(u64),
    /// Text such as `20s`.
    Text(String),
}

impl<'de> Deserialize<'de> for DurationValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::Integer(n) if n >= 0 => Ok(DurationValue::Seconds(n as u64)),
            toml::Value::String(s) => Ok(DurationValue::Text(s)),
            _ => Err(D::Error::custom(
                "a duration is a whole number of seconds or text such as \"30s\", \"10m\", \"1h\"",
            )),
        }
    }
}

/// How a header's value is written (for the schema).
#[derive(JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
#[allow(dead_code)]
enum HeaderSchema {
    /// Sent as written.
    Plain(String),
    /// The value of an environment variable.
    Env {
        /// The variable's name.
        env: String,
    },
    /// The contents of a file readable only by its owner.
    File {
        /// The file's path.
        file: String,
    },
}

/// How a duration is written (for the schema).
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum DurationSchema {
    /// Whole seconds.
    Seconds(u64),
    /// A number with a unit: `90s`, `30m`, `2h`, `7d`, `1w`.
    Text(String),
}
