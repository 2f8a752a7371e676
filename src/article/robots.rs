//! robots.txt rules, for the page reads a model asks for (the MCP server's article fetches;
//! the CLI's with `--respect-robots`). Parsing and matching are the kept crate's
//! ([texting_robots](https://crates.io/crates/texting_robots)); this file reads which rule
//! matched, to name it, and the `Crawl-delay`, and brings rules and paths to one spelling
//! first (RFC 9309 §2.2.2: an escaped unreserved character is the character itself), which
//! the crate does not.

use std::time::Duration;

use texting_robots::Robot;
use url::Url;

/// The longest `Crawl-delay` taken from a robots.txt (past it, the gate's cap applies).
const MAX_CRAWL_DELAY: Duration = Duration::from_secs(3600);

/// The parsed rules of one robots.txt for our user-agent token.
#[derive(Debug)]
pub(crate) struct Robots {
    robot: Option<Robot>,
    /// Our group's `Disallow` patterns as written, each with its normalized spelling, to
    /// name the rule that matched.
    disallows: Vec<(String, String)>,
    /// The group's `Crawl-delay`.
    pub crawl_delay: Option<Duration>,
}

/// The robots.txt of `url`'s origin.
pub(crate) fn robots_url(url: &Url) -> Option<Url> {
    let mut u = crate::redact::split_userinfo(url).0;
    u.set_path("/robots.txt");
    u.set_query(None);
    u.set_fragment(None);
    u.has_host().then_some(u)
}

/// Whether `b` is an unreserved character of RFC 3986 (`ALPHA / DIGIT / "-" / "." / "_" /
/// "~"`): escaped or not, it is the same character.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// `s` with every `%HH` of an unreserved character decoded and every other escape's hex
/// in capitals, so a rule and a path that name one resource compare equal (`/%7Ejoe/` and
/// `/~joe/`; `/%70rivate` and `/private`; `%2f` and `%2F`). Reserved characters stay
/// escaped (`%2F` is not `/`), and a `%` that starts no escape is kept.
fn normalize_escapes(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%'
            && let (Some(h), Some(l)) = (
                s.get(i + 1).copied().and_then(hex),
                s.get(i + 2).copied().and_then(hex),
            )
        {
            let byte = (h * 16 + l) as u8;
            if unreserved(byte) {
                out.push(byte);
            } else {
                out.push(b'%');
                out.push(s[i + 1].to_ascii_uppercase());
                out.push(s[i + 2].to_ascii_uppercase());
            }
            i += 3;
            continue;
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// The path and query of `url` as the rules are matched against them, normalized.
fn match_target(url: &Url) -> String {
    let raw = &url[url::Position::BeforePath..url::Position::AfterQuery];
    String::from_utf8_lossy(&normalize_escapes(raw.as_bytes())).into_owned()
}

/// The product token robots.txt groups are matched on: `rss` of `rss/0.1.0 (…)`.
pub(crate) fn agent_token(user_agent: &str) -> String {
    user_agent
        .split(['/', ' '])
        .next()
        .unwrap_or("rss")
        .trim()
        .to_ascii_lowercase()
}

/// The `Disallow` patterns of the group that applies to `token`: its own group when one
/// names it, else `*`'s. (The crate decides; this is only for naming the rule.)
fn our_disallows(txt: &str, token: &str) -> Vec<String> {
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut in_agents = false;
    for line in txt.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
        match k.as_str() {
            "user-agent" => {
                if !in_agents {
                    groups.push((Vec::new(), Vec::new()));
                }
                in_agents = true;
                if let Some(g) = groups.last_mut() {
                    g.0.push(v.to_ascii_lowercase());
                }
            }
            "disallow" | "allow" | "crawl-delay" => {
                in_agents = false;
                if k == "disallow"
                    && !v.is_empty()
                    && let Some(g) = groups.last_mut()
                {
                    g.1.push(v);
                }
            }
            _ => {}
        }
    }
    let named = groups
        .iter()
        .filter(|g| {
            g.0.iter()
                .any(|a| a != "*" && token.starts_with(a.as_str()))
        })
        .flat_map(|g| g.1.clone())
        .collect::<Vec<_>>();
    if !named.is_empty() {
        return named;
    }
    groups
        .into_iter()
        .filter(|g| g.0.iter().any(|a| a == "*"))
        .flat_map(|g| g.1)
        .collect()
}

impl Robots {
    /// Every page allowed (no robots.txt, or a `4xx` for it).
    pub(crate) fn allow_all() -> Robots {
        Robots {
            robot: None,
            disallows: Vec::new(),
            crawl_delay: None,
        }
    }

    /// The rules of robots.txt `txt` for the user-agent `token`; one that does not parse
    /// allows everything.
    pub(crate) fn parse(token: &str, txt: &[u8]) -> Robots {
        let Ok(robot) = Robot::new(token, &normalize_escapes(txt)) else {
            return Robots::allow_all();
        };
        let crawl_delay = robot
            .delay
            // A delay past what an f32 holds (`1e39`, `inf`) is capped like any long one.
            .and_then(|d| crate::date::span_seconds(f64::from(d)))
            .filter(|d| !d.is_zero())
            .map(|d| d.min(MAX_CRAWL_DELAY));
        Robots {
            disallows: our_disallows(&String::from_utf8_lossy(txt), token)
                .into_iter()
                .map(|p| {
                    let n = String::from_utf8_lossy(&normalize_escapes(p.as_bytes())).into_owned();
                    (p, n)
                })
                .collect(),
            crawl_delay,
            robot: Some(robot),
        }
    }

    /// `None` when `url` may be read; else the rule that disallows it (`Disallow: /x`, the
    /// longest of our group's that matches, or a description when none can be named).
    pub(crate) fn disallowed(&self, url: &Url) -> Option<String> {
        let robot = self.robot.as_ref()?;
        let target = match_target(url);
        if robot.allowed(&target) {
            return None;
        }
        let named = self
            .disallows
            .iter()
            .filter(|(_, n)| {
                Robot::new("x", format!("User-agent: *\nDisallow: {n}").as_bytes())
                    .is_ok_and(|r| !r.allowed(&target))
            })
            .max_by_key(|(_, n)| n.len())
            .map(|(p, _)| format!("Disallow: {p}"));
        Some(named.unwrap_or_else(|| "a Disallow rule".to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn our_group_applies_over_the_star_one_and_the_rule_is_named() {
        let txt = b"User-agent: *\nDisallow: /\n\nUser-agent: rss\nUser-agent: other\nDisallow: /private\nDisallow: /private/deep\nAllow: /private/deep/open\nCrawl-delay: 2.5\n";
        let r = Robots::parse("rss", txt);
        assert_eq!(r.disallowed(&url("https://a.example/public")), None);
        assert_eq!(
            r.disallowed(&url("https://a.example/private/x")).as_deref(),
            Some("Disallow: /private")
        );
        assert_eq!(
            r.disallowed(&url("https://a.example/private/deep/x"))
                .as_deref(),
            Some("Disallow: /private/deep")
        );
        assert_eq!(
            r.disallowed(&url("https://a.example/private/deep/open")),
            None
        );
        assert_eq!(r.crawl_delay, Some(Duration::from_millis(2500)));
        // Another agent gets the `*` group.
        let other = Robots::parse("feedbot", txt);
        assert_eq!(
            other
                .disallowed(&url("https://a.example/public"))
                .as_deref(),
            Some("Disallow: /")
        );
    }

    #[test]
    fn issue_27_escapes_of_unreserved_characters_are_decoded_on_both_sides() {
        let r = Robots::parse(
            "rss",
            b"User-agent: *\nDisallow: /private\nDisallow: /%7Ejoe/\nDisallow: /a%2fb\nAllow: /open%2Fx\n",
        );
        for (path, rule) in [
            ("/%70rivate/page", "Disallow: /private"),
            ("/%70%72ivate", "Disallow: /private"),
            ("/~joe/notes", "Disallow: /%7Ejoe/"),
            ("/%7ejoe/notes", "Disallow: /%7Ejoe/"),
            ("/%7Ejoe/", "Disallow: /%7Ejoe/"),
            ("/a%2Fb", "Disallow: /a%2fb"),
            ("/privat%65", "Disallow: /private"),
        ] {
            let u = url(&format!("https://a.example{path}"));
            assert_eq!(r.disallowed(&u).as_deref(), Some(rule), "{path}");
        }
        // A reserved character stays escaped: `%2F` is not a path's `/`.
        for path in [
            "/a/b",
            "/public/%70age",
            "/priv",
            "/%25private",
            "/open%2fx",
        ] {
            let u = url(&format!("https://a.example{path}"));
            assert_eq!(r.disallowed(&u), None, "{path}");
        }
        assert_eq!(normalize_escapes(b"/%7e%2f%zz%4"), b"/~%2F%zz%4".to_vec());
    }

    #[test]
    fn tokens_urls_and_garbage() {
        assert_eq!(agent_token("rss/0.1.0"), "rss");
        assert_eq!(agent_token("FeedBot/2.1 (+https://x.example)"), "feedbot");
        assert_eq!(
            robots_url(&url("https://a.example:8443/p/q?x=1#f"))
                .unwrap()
                .as_str(),
            "https://a.example:8443/robots.txt"
        );
        let r = Robots::parse("rss", b"\x00\xff garbage <html>");
        assert_eq!(r.disallowed(&url("https://a.example/x")), None);
        let huge = Robots::parse("rss", b"User-agent: *\nCrawl-delay: 1e12\n");
        assert_eq!(huge.crawl_delay, Some(MAX_CRAWL_DELAY));
    }

    #[test]
    fn issue_27_a_crawl_delay_past_any_duration_is_capped_not_a_panic() {
        for v in [
            "1e20", "3.4e38", "1e39", "1e308", "1e400", "inf", "Infinity", "NaN", "-5", "0",
        ] {
            let r = Robots::parse(
                "rss",
                format!("User-agent: *\nCrawl-delay: {v}\n").as_bytes(),
            );
            let expected = match v {
                "1e20" | "3.4e38" | "1e39" | "1e308" | "1e400" | "inf" | "Infinity" => {
                    Some(MAX_CRAWL_DELAY)
                }
                _ => None,
            };
            assert_eq!(r.crawl_delay, expected, "{v}");
        }
    }
}
