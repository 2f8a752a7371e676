//! The checks of `[defaults]` and of each `[[site]]` rule: every value in its range and
//! form, secrets only by reference, each error at its place in the file.

use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use toml::Spanned;
use url::Url;

use super::secret::{self, SecretRef, SecretSlot};
use super::{Auth, HeaderSource, Matcher, ProxyChoice, Rule, RuleHeader, Source, file};
use crate::config::{KeyMode, Overrides, limits, parse_duration};
use crate::error::{Error, Result};

/// Headers `rss` manages itself, which no rule may set.
const MANAGED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-connection",
    "if-none-match",
    "if-modified-since",
    "accept-encoding",
];

/// Parts of a header's name that say it carries a credential: its value may not be
/// written in the file.
const CREDENTIAL_WORDS: &[&str] = &[
    "authorization",
    "cookie",
    "token",
    "secret",
    "password",
    "key",
    "auth",
    "bearer",
    "credential",
    "session",
    "signature",
    "jwt",
];

/// Refuses an inline secret (`password`, `token` or `bearer` with a value).
fn refuse_inline(
    src: &Source<'_>,
    fields: [(&str, &Option<Spanned<toml::Value>>); 3],
    instead: &str,
) -> Result<()> {
    for (name, field) in fields {
        if let Some(v) = field {
            return Err(src.at(
                v,
                format!(
                    "`{name}` holds a secret written in the file, which is refused: name it with {instead} instead"
                ),
            ));
        }
    }
    Ok(())
}

fn in_range(
    src: &Source<'_>,
    v: &Spanned<u64>,
    range: std::ops::RangeInclusive<u64>,
    what: &str,
) -> Result<u64> {
    let n = *v.get_ref();
    if range.contains(&n) {
        return Ok(n);
    }
    Err(src.at(
        v,
        format!(
            "{what} must be between {} and {}, got {n}",
            range.start(),
            range.end()
        ),
    ))
}

fn duration(
    src: &Source<'_>,
    v: &Spanned<file::DurationValue>,
    max_secs: u64,
    what: &str,
) -> Result<Duration> {
    let d = match v.get_ref() {
        file::DurationValue::Seconds(n) => Some(Duration::from_secs(*n)),
        file::DurationValue::Text(t) => parse_duration(t),
    };
    match d {
        Some(d) if d.as_secs() <= max_secs => Ok(d),
        Some(_) => Err(src.at(v, format!("{what} must be at most {max_secs} seconds"))),
        None => Err(src.at(
            v,
            format!("{what} is not a duration (a number of seconds, or 90s, 30m, 2h, 7d)"),
        )),
    }
}

fn user_agent(src: &Source<'_>, v: &Spanned<String>) -> Result<String> {
    let ua = v.get_ref();
    if ua.trim().is_empty() || ua.chars().any(char::is_control) || ua.len() > 512 {
        return Err(src.at(v, "user_agent must be printable text of 1 to 512 bytes"));
    }
    Ok(ua.clone())
}

fn key_mode(k: file::KeyChoice) -> KeyMode {
    match k {
        file::KeyChoice::Host => KeyMode::Host,
        file::KeyChoice::Site => KeyMode::Site,
    }
}

/// `[defaults]` checked, as the flags' layer below the environment.
pub(super) fn defaults(src: &Source<'_>, d: file::Defaults) -> Result<Overrides> {
    let mut o = Overrides::default();
    if let Some(v) = &d.user_agent {
        o.user_agent = Some(user_agent(src, v)?);
    }
    if let Some(v) = &d.concurrency {
        o.concurrency = Some(in_range(src, v, limits::CONCURRENCY, "concurrency")? as usize);
    }
    if let Some(v) = &d.host_concurrency {
        o.host_concurrency =
            Some(in_range(src, v, limits::HOST_CONCURRENCY, "host_concurrency")? as usize);
    }
    if let Some(v) = &d.max_gate_wait {
        o.max_gate_wait_secs = Some(in_range(
            src,
            v,
            limits::MAX_GATE_WAIT_SECS,
            "max_gate_wait",
        )?);
    }
    if let Some(v) = &d.timeout {
        let secs = *v.get_ref();
        if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
            return Err(src.at(v, "timeout must be a number of seconds between 0 and 86400"));
        }
        o.timeout_secs = Some(secs);
    }
    if let Some(v) = &d.max_body_bytes {
        o.max_body_bytes = Some(in_range(src, v, limits::MAX_BODY_BYTES, "max_body_bytes")?);
    }
    o.cache_max_bytes = d.cache_max_bytes.map(|v| *v.get_ref());
    o.cache_dir = d.cache_dir.as_ref().map(|v| src.path(v.get_ref()));
    if let Some(v) = &d.max_freshness {
        let max = *limits::MAX_FRESHNESS_SECS.end();
        o.max_freshness_secs = Some(duration(src, v, max, "max_freshness")?.as_secs());
    }
    let watch_max = *crate::config::WATCH_INTERVAL_SECS.end();
    if let Some(v) = &d.watch_min_interval {
        let d = duration(src, v, watch_max, "watch_min_interval")?;
        o.watch.min_interval_secs = Some(d.as_secs().max(1));
    }
    if let Some(v) = &d.watch_max_interval {
        let d = duration(src, v, watch_max, "watch_max_interval")?;
        o.watch.max_interval_secs = Some(d.as_secs().max(1));
    }
    o.host_key = d.host_key.map(|k| match k {
        file::KeyChoice::Host => "host".to_owned(),
        file::KeyChoice::Site => "site".to_owned(),
    });
    o.deny_private_networks = d.deny_private_networks.unwrap_or(false);
    o.no_host_state = d.no_host_state.unwrap_or(false);
    if let Some(v) = &d.gate_store {
        let ok = Url::parse(v.get_ref())
            .ok()
            .filter(|u| matches!(u.scheme(), "redis" | "rediss") && u.has_host());
        match ok {
            None => {
                return Err(src.at(
                    v,
                    "gate_store must be a redis:// or rediss:// URL with a host",
                ));
            }
            Some(u) if u.password().is_some() => {
                return Err(src.at(
                    v,
                    "gate_store holds a password written in the file, which is refused: give the URL in RSS_GATE_STORE instead",
                ));
            }
            Some(_) => o.gate_store = Some(v.get_ref().clone()),
        }
    }
    if let Some(v) = &d.call_timeout {
        o.call_timeout_secs = Some(in_range(src, v, limits::CALL_TIMEOUT_SECS, "call_timeout")?);
    }
    o.respect_robots = d.respect_robots;
    Ok(o)
}

fn matcher(src: &Source<'_>, at: usize, r: &file::SiteRule) -> Result<Matcher> {
    let given: Vec<&str> = [
        r.url_prefix.as_ref().map(|_| "url_prefix"),
        r.host.as_ref().map(|_| "host"),
        r.site.as_ref().map(|_| "site"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.len() != 1 {
        return Err(src.error(
            Some(at),
            format!(
                "a [[site]] rule matches by exactly one of url_prefix, host or site (this one gives {})",
                if given.is_empty() { "none".to_owned() } else { given.join(" and ") }
            ),
        ));
    }
    if let Some(p) = &r.url_prefix {
        let url = Url::parse(p.get_ref())
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
        let Some(mut url) = url else {
            return Err(src.at(p, "url_prefix must be an http(s) URL with a host"));
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(src.at(
                p,
                "url_prefix may not hold credentials: give them in the rule's auth",
            ));
        }
        url.set_fragment(None);
        return Ok(Matcher::UrlPrefix(url.to_string()));
    }
    let (raw, site) = match (&r.host, &r.site) {
        (Some(h), _) => (h, false),
        (_, Some(s)) => (s, true),
        _ => unreachable!("one matcher is given"),
    };
    let what = if site { "site" } else { "host" };
    let text = raw.get_ref().trim();
    if text.is_empty() || text.contains(['/', '@', '?', '#']) || text.contains("://") {
        return Err(src.at(
            raw,
            format!("{what} must be a host name such as example.com, not a URL"),
        ));
    }
    let Some(url) = Url::parse(&format!("http://{text}/"))
        .ok()
        .filter(|u| u.has_host())
    else {
        return Err(src.at(raw, format!("{what} {text:?} is not a host name")));
    };
    let host = url
        .host_str()
        .unwrap_or_default()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    // The port as written: the URL parser drops a scheme's default port (`:80` under
    // `http://`), which a second parse under another scheme keeps.
    let port = url.port().or_else(|| {
        Url::parse(&format!("https://{text}/"))
            .ok()
            .and_then(|u| u.port())
    });
    if !site {
        return Ok(Matcher::Host { host, port });
    }
    if port.is_some() {
        return Err(src.at(
            raw,
            "site is a domain, with no port: use host = \"name:port\" for one port",
        ));
    }
    if psl::suffix_str(&host).is_some_and(|s| s == host) {
        return Err(src.at(
            raw,
            format!(
                "site {host:?} is a public suffix: a rule for it would match every site under it"
            ),
        ));
    }
    Ok(Matcher::Site(host))
}

fn headers(
    src: &Source<'_>,
    given: std::collections::BTreeMap<Spanned<String>, Spanned<file::HeaderSpec>>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<RuleHeader>> {
    let mut out = Vec::with_capacity(given.len());
    for (name, value) in given {
        let Ok(parsed) = HeaderName::from_bytes(name.get_ref().as_bytes()) else {
            return Err(src.at(&name, format!("{:?} is not a header name", name.get_ref())));
        };
        let lower = parsed.as_str();
        if MANAGED_HEADERS.contains(&lower) || lower.starts_with("proxy-") {
            return Err(src.at(
                &name,
                format!("the {lower} header is managed by rss and may not be set"),
            ));
        }
        let source = match value.get_ref() {
            file::HeaderSpec::Plain(v) => {
                // `Api_Key` is `api-key` to a server that folds underscores.
                let words = lower.replace('_', "-");
                if CREDENTIAL_WORDS.iter().any(|w| words.contains(w)) {
                    return Err(src.at(
                        &value,
                        format!(
                            "the {lower} header carries a credential, so its value may not be written in the file: use {{ env = \"VARIABLE\" }} or {{ file = \"PATH\" }}"
                        ),
                    ));
                }
                match HeaderValue::from_str(v) {
                    Ok(hv) => HeaderSource::Plain(hv),
                    Err(_) => {
                        return Err(src.at(
                            &value,
                            format!("the {lower} header's value is not valid in a header"),
                        ));
                    }
                }
            }
            file::HeaderSpec::Env(var) => {
                HeaderSource::Secret(secret::load(SecretRef::Env(var.clone()), env))
            }
            file::HeaderSpec::File(p) => {
                HeaderSource::Secret(secret::load(SecretRef::File(src.path(p)), env))
            }
        };
        out.push(RuleHeader {
            name: parsed,
            value: source,
        });
    }
    Ok(out)
}

fn auth(
    src: &Source<'_>,
    a: Spanned<file::AuthSpec>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Auth> {
    let spec = a.get_ref();
    refuse_inline(
        src,
        [
            ("password", &spec.password),
            ("token", &spec.token),
            ("bearer", &spec.bearer),
        ],
        "bearer_env or bearer_file (or basic's password_env / password_file)",
    )?;
    let given = usize::from(spec.basic.is_some())
        + usize::from(spec.bearer_env.is_some())
        + usize::from(spec.bearer_file.is_some());
    if given != 1 {
        return Err(src.at(
            &a,
            "auth takes exactly one of basic, bearer_env or bearer_file",
        ));
    }
    let secret_of = |env_name: &Option<String>, file: &Option<String>| -> Option<SecretSlot> {
        match (env_name, file) {
            (Some(n), None) => Some(secret::load(SecretRef::Env(n.clone()), env)),
            (None, Some(f)) => Some(secret::load(SecretRef::File(src.path(f)), env)),
            _ => None,
        }
    };
    if let Some(b) = &spec.basic {
        refuse_inline(
            src,
            [
                ("password", &b.password),
                ("token", &b.token),
                ("bearer", &b.bearer),
            ],
            "password_env or password_file",
        )?;
        if b.user.contains(':') || b.user.chars().any(char::is_control) {
            return Err(src.at(&a, "auth.basic.user may not hold ':' or control characters"));
        }
        let Some(password) = secret_of(&b.password_env, &b.password_file) else {
            return Err(src.at(
                &a,
                "auth.basic takes exactly one of password_env or password_file",
            ));
        };
        return Ok(Auth::Basic {
            user: b.user.clone(),
            password,
        });
    }
    let slot = secret_of(&spec.bearer_env, &spec.bearer_file).expect("one of them is given");
    Ok(Auth::Bearer(slot))
}

pub(super) fn rule(
    src: &Source<'_>,
    index: usize,
    line: usize,
    at: usize,
    r: file::SiteRule,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Rule> {
    refuse_inline(
        src,
        [
            ("password", &r.password),
            ("token", &r.token),
            ("bearer", &r.bearer),
        ],
        "auth (password_env, password_file, bearer_env, bearer_file) or a header's { env } / { file }",
    )?;
    let matcher = matcher(src, at, &r)?;
    let whole_host = |what: &str, at: &dyn Fn(String) -> Error| -> Result<()> {
        if matches!(matcher, Matcher::UrlPrefix(_)) {
            return Err(at(format!(
                "{what} is a setting of a whole host: give it in a rule matched by host or site"
            )));
        }
        Ok(())
    };
    let host_concurrency = match &r.host_concurrency {
        Some(v) => {
            whole_host("host_concurrency", &|m| src.at(v, m))?;
            Some(in_range(src, v, limits::HOST_CONCURRENCY, "host_concurrency")? as usize)
        }
        None => None,
    };
    let min_interval = match &r.min_interval {
        Some(v) => {
            whole_host("min_interval", &|m| src.at(v, m))?;
            Some(duration(src, v, 86_400, "min_interval")?)
        }
        None => None,
    };
    let max_freshness = match &r.max_freshness {
        Some(v) => Some(duration(
            src,
            v,
            *limits::MAX_FRESHNESS_SECS.end(),
            "max_freshness",
        )?),
        None => None,
    };
    let proxy = match &r.proxy {
        None => None,
        Some(p) if p.get_ref().trim().eq_ignore_ascii_case("none") => Some(ProxyChoice::Direct),
        Some(p) => {
            let url = Url::parse(p.get_ref().trim())
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
            match url {
                None => {
                    return Err(src.at(
                        p,
                        "proxy must be an http(s) proxy URL (http://proxy:3128) or \"none\"",
                    ));
                }
                Some(u) if u.password().is_some() => {
                    return Err(src.at(
                        p,
                        "proxy holds a password written in the file, which is refused: set it in HTTPS_PROXY instead",
                    ));
                }
                Some(u) => Some(ProxyChoice::Via(u)),
            }
        }
    };
    let user_agent = r
        .user_agent
        .as_ref()
        .map(|v| user_agent(src, v))
        .transpose()?;
    let headers = headers(src, r.headers, env)?;
    let auth = r.auth.map(|a| auth(src, a, env)).transpose()?;
    if auth.is_some()
        && headers
            .iter()
            .any(|h| h.name == reqwest::header::AUTHORIZATION)
    {
        return Err(src.error(
            Some(at),
            "a rule sets auth or an Authorization header, not both",
        ));
    }
    Ok(Rule {
        index,
        line,
        matcher,
        headers,
        auth,
        user_agent,
        proxy,
        host_key: r.host_key.map(key_mode),
        host_concurrency,
        min_interval,
        respect_robots: r.respect_robots,
        max_freshness,
    })
}
