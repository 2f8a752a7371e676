//! What one hop of a request sends beyond the request itself, decided afresh for each hop
//! of a redirect chain: the headers, credentials and User-Agent of the config rule that
//! matches that hop's URL (and only of that rule), the caller's own URL's credentials for
//! its origin only, and the route (straight, the environment's proxies, or the rule's
//! proxy). A hop that leaves a rule's scope carries nothing of it (as curl without
//! `--location-trusted`). It is the one place that decides, for every request the process
//! makes (feeds, redirects, robots.txt, article pages, discovery): it sees what led to the
//! request ([`Lineage`]: the feed read over https that linked to a page, the hop a
//! robots.txt is read for), and a plain-http hop after any https step of that whole chain
//! carries no secret, however the step was taken.

use base64::Engine as _;
use reqwest::header::{self, HeaderMap, HeaderValue};
use url::Url;

use super::Lineage;
use crate::error::{Error, Result};
use crate::redact::{Secret, UrlCredentials};
use crate::settings::{Auth, HeaderSource, ProxyChoice, Rule, SecretSlot, Settings};

/// Which connection pool a hop goes through.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Route {
    /// The environment's proxies (`HTTPS_PROXY`, …).
    Env,
    /// Straight to the origin.
    Direct,
    /// Through a rule's proxy.
    Via(Url),
}

/// What a hop sends, and for whom.
#[derive(Debug)]
pub(super) struct Plan<'a> {
    /// The rule that matched the hop's URL.
    pub rule: Option<&'a Rule>,
    /// Headers to add (secret ones marked sensitive).
    pub headers: HeaderMap,
    /// Who the credentials sent belong to (a rule, or the URL itself); `None`: none sent.
    pub credentials: Option<String>,
    /// The connection pool.
    pub route: Route,
}

/// The origin of a URL: scheme, host, port.
fn origin(u: &Url) -> (String, Option<String>, Option<u16>) {
    (
        u.scheme().to_owned(),
        u.host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase()),
        u.port_or_known_default(),
    )
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

fn sensitive(value: String) -> Result<HeaderValue> {
    let mut v = HeaderValue::from_str(&value)
        .map_err(|_| Error::usage("a configured credential is not valid in a header"))?;
    v.set_sensitive(true);
    Ok(v)
}

fn basic(user: &str, password: Option<&Secret>) -> Result<HeaderValue> {
    let pair = format!("{user}:{}", password.map_or("", Secret::expose));
    sensitive(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))
}

/// A rule's secret, or the usage error that says why the rule cannot be used.
fn expose<'s>(rule: &Rule, slot: &'s SecretSlot) -> Result<&'s Secret> {
    slot.value.as_ref().map_err(|why| {
        Error::usage(format!(
            "{} cannot be used: {why} ({})",
            rule.describe(),
            slot.from.describe()
        ))
    })
}

/// What the hop to `hop` sends, for a request that `led_by` led to (empty: the caller's
/// own), that started at `first` (without its credentials, which are `creds`) and reached
/// `hop` through `earlier` (its own hops so far, `first` among them; empty for the first):
/// a plain-http hop after any https step of the whole chain is a downgrade, and carries no
/// secret. A URL's own credentials are the caller's only in a request of the caller's own:
/// those of a link a document gave (an item's page) are dropped like a `Location`'s.
pub(super) fn plan<'a>(
    settings: &'a Settings,
    hop: &Url,
    first: &Url,
    earlier: &[Url],
    led_by: &Lineage,
    creds: Option<&UrlCredentials>,
) -> Result<Plan<'a>> {
    let rule = settings.rule_for(hop);
    let downgraded = hop.scheme() == "http"
        && (led_by.went_https() || earlier.iter().any(|u| u.scheme() == "https"));
    let mut headers = HeaderMap::new();
    let mut credentials = None;
    if let Some(r) = rule {
        for h in &r.headers {
            match &h.value {
                HeaderSource::Plain(v) => {
                    headers.insert(h.name.clone(), v.clone());
                }
                HeaderSource::Secret(_) if downgraded => {}
                HeaderSource::Secret(slot) => {
                    let v = sensitive(expose(r, slot)?.expose().to_owned())?;
                    headers.insert(h.name.clone(), v);
                    credentials = Some(r.describe());
                }
            }
        }
        if let Some(a) = r.auth.as_ref().filter(|_| !downgraded) {
            let v = match a {
                Auth::Basic { user, password } => basic(user, Some(expose(r, password)?))?,
                Auth::Bearer(slot) => sensitive(format!("Bearer {}", expose(r, slot)?.expose()))?,
            };
            headers.insert(header::AUTHORIZATION, v);
            credentials = Some(r.describe());
        }
        if let Some(ua) = &r.user_agent
            && let Ok(v) = HeaderValue::from_str(ua)
        {
            headers.insert(header::USER_AGENT, v);
        }
    }
    // The URL's own credentials are for its origin, and win over a rule's there.
    if let Some(c) = creds
        && led_by.is_empty()
        && !downgraded
        && origin(hop) == origin(first)
    {
        headers.insert(header::AUTHORIZATION, basic(&c.user, c.password.as_ref())?);
        credentials = Some("the URL itself".to_owned());
    }
    let route = match rule.and_then(|r| r.proxy.as_ref()) {
        Some(ProxyChoice::Direct) => Route::Direct,
        Some(ProxyChoice::Via(p)) => Route::Via(p.clone()),
        None if is_loopback(hop) => Route::Direct,
        None => Route::Env,
    };
    Ok(Plan {
        rule,
        headers,
        credentials,
        route,
    })
}

/// The plan of a request's first hop, for the fingerprint of what it sends.
fn first_hop<'a>(settings: &'a Settings, url: &Url, led_by: &Lineage) -> Option<Plan<'a>> {
    let (bare, creds) = crate::redact::split_userinfo(url);
    plan(settings, &bare, &bare, &[], led_by, creds.as_ref()).ok()
}

/// Whether a request for `url` that `led_by` led to sends credentials on its first hop.
pub(super) fn sends_credentials(settings: &Settings, url: &Url, led_by: &Lineage) -> bool {
    first_hop(settings, url, led_by).is_some_and(|p| p.credentials.is_some())
}

/// Who a request for `url` that `led_by` led to is made as (`None`: no credentials): an
/// HMAC of what its first hop sends beyond the request (every header but the User-Agent)
/// under the cache's own `key`, so the fingerprint a cached private body keeps cannot be
/// checked against guessed passwords without that key.
pub(super) fn credential_id(
    settings: &Settings,
    url: &Url,
    led_by: &Lineage,
    key: &crate::cache::CredentialKey,
) -> Option<String> {
    use hmac::Mac;
    let plan = first_hop(settings, url, led_by)?;
    plan.credentials.as_ref()?;
    let mut mac = key.mac();
    mac.update(b"rss credentials v2\0");
    let mut names: Vec<_> = plan.headers.keys().map(|k| k.as_str()).collect();
    names.sort_unstable();
    for name in names {
        if name == "user-agent" {
            continue;
        }
        mac.update(name.as_bytes());
        for v in plan.headers.get_all(name) {
            mac.update(b"\0");
            mac.update(v.as_bytes());
        }
        mac.update(b"\n");
    }
    Some(hex::encode(&mac.finalize().into_bytes()[..16]))
}

#[cfg(test)]
mod tests;
