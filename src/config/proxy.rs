//! The proxies the HTTP client takes from the environment, as `--deny-private-networks`
//! trusts them.

/// The host names of the proxies the HTTP client takes from the environment.
pub(super) fn proxy_hosts(env: &impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut hosts: Vec<String> = [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .filter_map(|v| env(v))
    .filter_map(|p| {
        let p = p.trim();
        // A proxy may be given without a scheme (`proxy.internal:3128`).
        let with_scheme = if p.contains("://") {
            p.to_owned()
        } else {
            format!("http://{p}")
        };
        url::Url::parse(&with_scheme)
            .ok()?
            .host_str()
            .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
    })
    .collect();
    hosts.sort();
    hosts.dedup();
    hosts
}
