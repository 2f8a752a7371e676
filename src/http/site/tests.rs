//! Credentials go only where they were meant: properties over generated rules and redirect
//! chains, checked against an oracle written from the URLs' parts.

use proptest::prelude::*;

use super::*;
use crate::redact::split_userinfo;

const HOSTS: &[&str] = &["a.test", "b.a.test", "c.b.a.test", "d.test"];
const PATHS: &[&str] = &["/", "/p", "/p/", "/p/q", "/pq", "/x/y"];

/// A URL from its parts.
#[derive(Debug, Clone)]
struct Parts {
    https: bool,
    host: &'static str,
    port: Option<u16>,
    path: &'static str,
}

impl Parts {
    fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }
    fn port(&self) -> u16 {
        self.port.unwrap_or(if self.https { 443 } else { 80 })
    }
    fn url(&self) -> String {
        let port = match self.port {
            Some(p) if p != if self.https { 443 } else { 80 } => format!(":{p}"),
            _ => String::new(),
        };
        format!("{}://{}{port}{}", self.scheme(), self.host, self.path)
    }
}

fn parts() -> impl Strategy<Value = Parts> {
    (
        any::<bool>(),
        prop::sample::select(HOSTS),
        prop::option::of(prop::sample::select(&[443u16, 80, 8443][..])),
        prop::sample::select(PATHS),
    )
        .prop_map(|(https, host, port, path)| Parts {
            https,
            host,
            port,
            path,
        })
}

#[derive(Debug, Clone)]
enum Gen {
    Prefix(Parts),
    Host(&'static str, Option<u16>),
    Site(&'static str),
}

impl Gen {
    fn toml(&self) -> String {
        match self {
            Gen::Prefix(p) => format!("url_prefix = {:?}", p.url()),
            Gen::Host(h, None) => format!("host = {h:?}"),
            Gen::Host(h, Some(p)) => format!("host = \"{h}:{p}\""),
            Gen::Site(s) => format!("site = {s:?}"),
        }
    }

    /// The oracle: whether this rule is for `u`.
    fn matches(&self, u: &Parts) -> bool {
        match self {
            Gen::Prefix(p) => {
                p.https == u.https
                    && p.host == u.host
                    && p.port() == u.port()
                    && u.path.strip_prefix(p.path).is_some_and(|rest| {
                        // A prefix ends at a segment: `/p` is `/p` and `/p/q`, not `/pq`.
                        p.path.ends_with('/') || rest.is_empty() || rest.starts_with('/')
                    })
            }
            Gen::Host(h, port) => *h == u.host && port.is_none_or(|p| p == u.port()),
            Gen::Site(s) => u.host == *s || u.host.ends_with(&format!(".{s}")),
        }
    }

    fn rank(&self) -> (u8, usize) {
        match self {
            Gen::Prefix(p) => (3, p.url().len()),
            Gen::Host(_, port) => (2, usize::from(port.is_some())),
            Gen::Site(s) => (1, s.len()),
        }
    }
}

fn rule() -> impl Strategy<Value = Gen> {
    prop_oneof![
        parts().prop_map(Gen::Prefix),
        (
            prop::sample::select(HOSTS),
            // 80 and 443 too: a rule's port is the port written, a default one included.
            prop::option::of(prop::sample::select(&[80u16, 443, 8443][..]))
        )
            .prop_map(|(h, p)| Gen::Host(h, p)),
        prop::sample::select(HOSTS).prop_map(Gen::Site),
    ]
}

fn token(i: usize) -> String {
    format!("tok-{i}-SECRET")
}

fn key(i: usize) -> String {
    format!("key-{i}-SECRET")
}

fn settings(rules: &[Gen]) -> Option<Settings> {
    let mut text = String::new();
    for (i, r) in rules.iter().enumerate() {
        text.push_str(&format!(
            "[[site]]\n{}\nheaders = {{ x-rule = \"r{i}\", x-key = {{ env = \"KEY{i}\" }} }}\nauth = {{ bearer_env = \"TOK{i}\" }}\n",
            r.toml()
        ));
    }
    let env = |name: &str| {
        let (kind, i) = name.split_at(3);
        let i: usize = i.parse().ok()?;
        match kind {
            "TOK" => Some(token(i)),
            "KEY" => Some(key(i)),
            _ => None,
        }
    };
    // Rules that match exactly alike are refused by the file's check: skip those cases.
    Settings::parse(&text, std::path::Path::new("/t/config.toml"), &env).ok()
}

/// The rule the oracle says wins for `u`.
fn winner(rules: &[Gen], u: &Parts) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, r) in rules.iter().enumerate().filter(|(_, r)| r.matches(u)) {
        if best.is_none_or(|b| r.rank() > rules[b].rank()) {
            best = Some(i);
        }
    }
    best
}

fn header<'h>(h: &'h HeaderMap, name: &str) -> Option<&'h str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_hop_carries_only_what_its_own_rule_and_origin_allow(
        rules in prop::collection::vec(rule(), 0..5),
        chain in prop::collection::vec(parts(), 1..5),
        parent in prop::collection::vec(parts(), 0..3),
        with_creds in any::<bool>(),
    ) {
        let Some(s) = settings(&rules) else { return Ok(()) };
        let first_raw = chain[0].url();
        let given = if with_creds {
            first_raw.replacen("://", "://me:URLPASS-SECRET@", 1)
        } else {
            first_raw.clone()
        };
        let (first, creds) = split_userinfo(&Url::parse(&given).unwrap());
        let url_basic = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("me:URLPASS-SECRET")
        );
        // What led to the request (a feed before its item's page, a page before its
        // robots.txt): its steps count as the chain's, and a request it led to is not the
        // caller's own, so no URL credentials of the request's go with it.
        let mut led_by = Lineage::none();
        for p in &parent {
            led_by = led_by.then(&Url::parse(&p.url()).unwrap());
        }
        let mut earlier: Vec<Url> = Vec::new();
        for (i, hop) in chain.iter().enumerate() {
            let url = Url::parse(&hop.url()).unwrap();
            let plan = plan(&s, &url, &first, &earlier, &led_by, creds.as_ref()).unwrap();
            // Plain http after any https step of the whole chain (not only the request's
            // first, nor only the request's own hops) is a downgrade.
            let downgraded = !hop.https
                && (parent.iter().any(|h| h.https) || chain[..i].iter().any(|h| h.https));
            earlier.push(url);
            let same_origin = chain[0].https == hop.https
                && chain[0].host == hop.host
                && chain[0].port() == hop.port();
            let expected = winner(&rules, hop);
            prop_assert_eq!(plan.rule.map(|r| r.index - 1), expected, "{}", hop.url());
            let rule_name = expected.map(|i| format!("r{i}"));
            prop_assert_eq!(header(&plan.headers, "x-rule"), rule_name.as_deref());
            let key_sent = expected.filter(|_| !downgraded).map(key);
            prop_assert_eq!(header(&plan.headers, "x-key"), key_sent.as_deref());
            let auth = if with_creds && same_origin && parent.is_empty() && !downgraded {
                Some(url_basic.clone())
            } else {
                expected.filter(|_| !downgraded).map(|i| format!("Bearer {}", token(i)))
            };
            prop_assert_eq!(header(&plan.headers, "authorization"), auth.as_deref());
            prop_assert_eq!(plan.credentials.is_some(), auth.is_some());
            // Nothing a hop carries can be printed.
            let shown = format!("{plan:?} {s:?}");
            prop_assert!(!shown.contains("SECRET"), "{}", shown);
        }
    }
}
