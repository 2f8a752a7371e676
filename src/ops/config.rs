//! `rss config check`: the settings in force and each rule's, every secret as `***`; a
//! rule whose secret cannot be read makes the check fail, naming each such rule.

use url::Url;

use crate::config::{Config, HostStateSetting, KeyMode};
use crate::error::{Error, Result};
use crate::model::{
    ConfigAuthInfo, ConfigCheckOutput, ConfigRuleInfo, ConfigUrlMatch, EffectiveSettings,
    SCHEMA_VERSION,
};
use crate::redact::MASK;
use crate::settings::{Auth, HeaderSource, ProxyChoice, Rule, Settings};

fn key_name(k: KeyMode) -> &'static str {
    match k {
        KeyMode::Host => "host",
        KeyMode::Site => "site",
    }
}

fn effective(config: &Config) -> EffectiveSettings {
    EffectiveSettings {
        user_agent: config.user_agent.clone(),
        concurrency: config.concurrency,
        host_concurrency: config.gate.host_concurrency,
        max_gate_wait_seconds: config.gate.max_gate_wait.as_secs(),
        timeout_seconds: config.timeout.as_secs_f64(),
        max_body_bytes: config.max_body_bytes,
        cache_dir: config.cache_dir.as_ref().map(|d| d.display().to_string()),
        cache_max_bytes: config.cache_max_bytes,
        max_freshness_seconds: config.max_freshness.as_secs(),
        host_key: key_name(config.host_key).to_owned(),
        deny_private_networks: config.deny_private_networks,
        host_state: match &config.host_state {
            HostStateSetting::Files => "files".to_owned(),
            HostStateSetting::Off => "off".to_owned(),
            HostStateSetting::Redis(url) => crate::redact::text(url).into_owned(),
        },
        respect_robots: config.respect_robots,
        call_timeout_seconds: config.call_timeout.as_secs(),
        watch_min_interval_seconds: config.watch.min_interval.as_secs(),
        watch_max_interval_seconds: config.watch.max_interval.as_secs(),
    }
}

fn rule_info(config: &Config, r: &Rule) -> ConfigRuleInfo {
    let headers = r
        .headers
        .iter()
        .map(|h| {
            let shown = match &h.value {
                HeaderSource::Plain(v) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
                HeaderSource::Secret(s) => format!("{MASK} ({})", s.from.describe()),
            };
            (h.name.as_str().to_owned(), shown)
        })
        .collect();
    let auth = r.auth.as_ref().map(|a| match a {
        Auth::Basic { user, password } => ConfigAuthInfo {
            scheme: "basic".to_owned(),
            user: Some(user.clone()),
            secret: MASK.to_owned(),
            from: password.from.describe(),
        },
        Auth::Bearer(s) => ConfigAuthInfo {
            scheme: "bearer".to_owned(),
            user: None,
            secret: MASK.to_owned(),
            from: s.from.describe(),
        },
    });
    ConfigRuleInfo {
        index: r.index,
        line: r.line,
        match_by: r.matcher.kind().to_owned(),
        matches: r.matcher.value(),
        headers,
        auth,
        user_agent: r
            .user_agent
            .clone()
            .unwrap_or_else(|| config.user_agent.clone()),
        proxy: match &r.proxy {
            None => "environment".to_owned(),
            Some(ProxyChoice::Direct) => "none".to_owned(),
            Some(ProxyChoice::Via(u)) => crate::redact::url(u),
        },
        host_key: key_name(r.host_key.unwrap_or(config.host_key)).to_owned(),
        host_concurrency: r.host_concurrency.unwrap_or(config.gate.host_concurrency),
        min_interval_ms: r.min_interval.map(|d| d.as_millis() as u64),
        respect_robots: r.respect_robots,
        max_freshness_seconds: r.max_freshness.unwrap_or(config.max_freshness).as_secs(),
    }
}

/// Checks `settings` (as `config` resolved them) and describes them; `url` asks which rule
/// it gets.
pub fn config_check(
    config: &Config,
    settings: &Settings,
    url: Option<&str>,
) -> Result<ConfigCheckOutput> {
    let problems: Vec<String> = settings
        .rules
        .iter()
        .flat_map(|r| {
            r.problems()
                .into_iter()
                .map(move |p| format!("{}: {p}", r.describe()))
        })
        .collect();
    if !problems.is_empty() {
        let first = settings.rules.iter().find(|r| !r.problems().is_empty());
        return Err(Error::ConfigFile {
            path: settings
                .path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            line: first.map(|r| r.line),
            column: None,
            message: format!(
                "{} secret(s) cannot be read, so the requests of their rules would fail: {}",
                problems.len(),
                problems.join("; ")
            ),
        });
    }
    let url = url
        .map(|raw| {
            let parsed = Url::parse(raw.trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host())
                .ok_or_else(|| {
                    Error::usage(format!(
                        "--url {:?} is not an http(s) URL",
                        crate::error::echo(&crate::redact::text(raw))
                    ))
                })?;
            let mut matching: Vec<&Rule> = settings
                .rules
                .iter()
                .filter(|r| r.matcher.matches(&parsed))
                .collect();
            // Most specific first; equals keep their file order.
            matching.sort_by_key(|r| std::cmp::Reverse(r.matcher.rank()));
            Ok::<_, Error>(ConfigUrlMatch {
                url: crate::redact::url(&parsed),
                rule: settings.rule_for(&parsed).map(|r| r.index),
                matching: matching.iter().map(|r| r.index).collect(),
            })
        })
        .transpose()?;
    Ok(ConfigCheckOutput {
        schema_version: SCHEMA_VERSION.to_owned(),
        path: settings.path.as_ref().map(|p| p.display().to_string()),
        effective: effective(config),
        rules: settings
            .rules
            .iter()
            .map(|r| rule_info(config, r))
            .collect(),
        url,
    })
}
