//! Where host state lives: the file store, none, or the fleet's Redis, and the Redis
//! password, which comes from the environment or a file, never from the command line (any
//! user of the machine reads every process's command line).

use std::path::PathBuf;

use super::{Config, ENV_GATE_STORE, ENV_GATE_STORE_PASSWORD_FILE, ENV_HOST_STATE, Overrides};
use crate::error::{Error, Result};

/// Where the gate's learned host state is kept.
#[derive(Clone, PartialEq, Eq, Default)]
pub enum HostStateSetting {
    /// Under the cache directory, shared by every process using it (the default).
    #[default]
    Files,
    /// Inside the process only (`--no-host-state`, `RSS_HOST_STATE=off`).
    Off,
    /// In Redis at this URL, shared by every worker of a fleet (`--gate-store`,
    /// `RSS_GATE_STORE`).
    Redis(String),
}

impl std::fmt::Debug for HostStateSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostStateSetting::Files => f.write_str("Files"),
            HostStateSetting::Off => f.write_str("Off"),
            // The URL may hold the store's password: never printed.
            HostStateSetting::Redis(url) => write!(f, "Redis({})", crate::redact::text(url)),
        }
    }
}

/// A `--gate-store` / `RSS_GATE_STORE` value checked: a `redis://` or `rediss://` URL with
/// a host. The message never repeats a password.
fn gate_store_url(url: &str) -> Result<String> {
    let parsed = url::Url::parse(url).ok();
    match parsed {
        Some(u) if matches!(u.scheme(), "redis" | "rediss") && u.has_host() => Ok(url.to_owned()),
        Some(u) => Err(Error::usage(format!(
            "--gate-store / {ENV_GATE_STORE} must be a redis:// or rediss:// URL with a host, not a {}: URL",
            crate::error::echo(u.scheme())
        ))),
        None => Err(Error::usage(format!(
            "--gate-store / {ENV_GATE_STORE} is not a URL (redis://host:port/db)"
        ))),
    }
}

/// The host-state setting and the Redis password file the layers give: flags over `env`
/// over `file` (the config file's `[defaults]`). A password in `--gate-store` is a usage
/// error.
pub(super) fn resolve(
    overrides: &Overrides,
    env: &impl Fn(&str) -> Option<String>,
    file: &Overrides,
) -> Result<(HostStateSetting, Option<PathBuf>)> {
    if let Some(flag) = &overrides.gate_store
        && url::Url::parse(flag.trim()).is_ok_and(|u| u.password().is_some())
    {
        return Err(Error::usage(format!(
            "--gate-store holds a password, which every user of this machine can read in the process list: give the URL in {ENV_GATE_STORE}, or the password in a file named by --gate-store-password-file ({ENV_GATE_STORE_PASSWORD_FILE})"
        )));
    }
    let password_file = overrides.gate_store_password_file.clone().or_else(|| {
        env(ENV_GATE_STORE_PASSWORD_FILE)
            .filter(|s| !s.trim().is_empty())
            .map(PathBuf::from)
    });
    let gate_store = overrides
        .gate_store
        .clone()
        .or_else(|| env(ENV_GATE_STORE))
        .filter(|s| !s.trim().is_empty());
    let host_state_env = env(ENV_HOST_STATE).filter(|v| !v.trim().is_empty());
    let host_state = if overrides.no_host_state {
        HostStateSetting::Off
    } else if let Some(url) = gate_store {
        HostStateSetting::Redis(gate_store_url(url.trim())?)
    } else if let Some(v) = host_state_env {
        match v.trim() {
            "on" | "1" | "true" | "files" => HostStateSetting::Files,
            "off" | "0" | "false" => HostStateSetting::Off,
            other => {
                return Err(Error::usage(format!(
                    "{ENV_HOST_STATE}={other:?} is not one of on, off"
                )));
            }
        }
    } else if file.no_host_state {
        HostStateSetting::Off
    } else if let Some(url) = &file.gate_store {
        HostStateSetting::Redis(gate_store_url(url.trim())?)
    } else {
        HostStateSetting::Files
    };
    Ok((host_state, password_file))
}

impl Config {
    /// This configuration with `password` (read from `--gate-store-password-file`) as its
    /// Redis store's password. A usage error when no Redis store is set, or its URL holds a
    /// password already.
    pub fn with_store_password(mut self, password: &crate::redact::Secret) -> Result<Config> {
        let HostStateSetting::Redis(url) = &self.host_state else {
            return Err(Error::usage(
                "--gate-store-password-file is given, but no Redis store (--gate-store or RSS_GATE_STORE)",
            ));
        };
        let mut u = url::Url::parse(url.as_str())
            .map_err(|_| Error::usage(format!("{ENV_GATE_STORE} is not a URL")))?;
        if u.password().is_some() {
            return Err(Error::usage(
                "the Redis URL holds a password and --gate-store-password-file gives another: give one",
            ));
        }
        let pw = password.expose().trim_end_matches(['\r', '\n']);
        if pw.is_empty() || u.set_password(Some(pw)).is_err() {
            return Err(Error::usage(
                "the file of --gate-store-password-file holds no password",
            ));
        }
        self.host_state = HostStateSetting::Redis(u.to_string());
        Ok(self)
    }
}
