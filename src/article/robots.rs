//! robots.txt rules, for the page reads a model asks for (the MCP server's article fetches;
//! the CLI's with `--respect-robots`). Parsing and matching are the kept crate's
//! ([texting_robots](https://crates.io/crates/texting_robots)); this file reads which rule
//! matched, to name it, and the `Crawl-delay`.

use std::time::Duration;

use texting_robots::Robot;
use url::Url;

/// The longest `Crawl-delay` taken from a robots.txt (past it, the gate's cap applies).
const MAX_CRAWL_DELAY: Duration = Duration::from_secs(3600);

/// The parsed rules of one robots.txt for our user-agent token.
#[derive(Debug)]
pub(crate) struct Robots {
    robot: Option<Robot>,
    /// Our group's `Disallow` patterns, to name the rule that matched.
    disallows: Vec<String>,
    /// The group's `Crawl-delay`.
    pub crawl_delay: Option<Duration>,
}

/// The robots.txt of `url`'s origin.
pub(crate) fn robots_url(url: &Url) -> Option<Url> {
    let mut u = url.clone();
    u.set_path("/robots.txt");
    u.set_query(None);
    u.set_fragment(None);
    u.has_host().then_some(u)
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
        let Ok(robot) = Robot::new(token, txt) else {
            return Robots::allow_all();
        };
        let crawl_delay = robot
            .delay
            .filter(|d| d.is_finite() && *d > 0.0)
            .map(|d| Duration::from_secs_f32(d).min(MAX_CRAWL_DELAY));
        Robots {
            disallows: our_disallows(&String::from_utf8_lossy(txt), token),
            crawl_delay,
            robot: Some(robot),
        }
    }

    /// `None` when `url` may be read; else the rule that disallows it (`Disallow: /x`, the
    /// longest of our group's that matches, or a description when none can be named).
    pub(crate) fn disallowed(&self, url: &Url) -> Option<String> {
        let robot = self.robot.as_ref()?;
        if robot.allowed(url.as_str()) {
            return None;
        }
        let named = self
            .disallows
            .iter()
            .filter(|p| {
                Robot::new("x", format!("User-agent: *\nDisallow: {p}").as_bytes())
                    .is_ok_and(|r| !r.allowed(url.as_str()))
            })
            .max_by_key(|p| p.len())
            .map(|p| format!("Disallow: {p}"));
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
}
