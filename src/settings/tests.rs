use std::time::Duration;

use super::*;
use crate::config::Config;

const PATH: &str = "/home/me/.config/rss/config.toml";

fn env(name: &str) -> Option<String> {
    match name {
        "FEED_PASSWORD" => Some("hunter2-SECRET".to_owned()),
        "WIKI_TOKEN" => Some("wiki-SECRET".to_owned()),
        "API_KEY" => Some("key-SECRET".to_owned()),
        _ => None,
    }
}

fn parse(text: &str) -> Result<Settings> {
    Settings::parse(text, Path::new(PATH), &env)
}

/// The error's code, line, column and message.
fn failure(text: &str) -> (String, Option<usize>, Option<usize>, String) {
    match parse(text).unwrap_err() {
        e @ Error::ConfigFile { .. } => {
            let Error::ConfigFile { line, column, .. } = &e else {
                unreachable!()
            };
            (e.code().as_str().to_owned(), *line, *column, e.to_string())
        }
        other => panic!("not a config file error: {other:?}"),
    }
}

const EXAMPLE: &str = r#"
[defaults]
user_agent = "feedbot/2.1 (+https://example.org/feedbot)"
host_concurrency = 2
max_freshness = "30m"

[[site]]
url_prefix = "https://feeds.example.com/private/"
auth.basic = { user = "me", password_env = "FEED_PASSWORD" }

[[site]]
site = "example.com"
user_agent = "polite/1.0"
min_interval = "20s"
host_concurrency = 1

[[site]]
host = "wiki.example.com"
auth = { bearer_env = "WIKI_TOKEN" }
headers = { "X-Api-Key" = { env = "API_KEY" }, "Accept-Language" = "en" }
proxy = "none"
"#;

#[test]
fn the_most_specific_rule_wins_and_only_its_settings_apply() {
    let s = parse(EXAMPLE).unwrap();
    assert_eq!(s.rules.len(), 3);
    let rule = |u: &str| s.rule_for(&Url::parse(u).unwrap()).map(|r| r.index);
    assert_eq!(rule("https://feeds.example.com/private/a.xml"), Some(1));
    assert_eq!(rule("https://feeds.example.com/public.xml"), Some(2));
    assert_eq!(rule("https://wiki.example.com/feed"), Some(3));
    assert_eq!(rule("https://example.org/feed"), None);
    assert_eq!(s.rules[1].min_interval, Some(Duration::from_secs(20)));
    assert_eq!(s.rules[2].proxy, Some(ProxyChoice::Direct));
    assert_eq!(s.defaults.host_concurrency, Some(2));
    assert_eq!(s.defaults.max_freshness_secs, Some(1800));
    assert!(s.rules.iter().all(|r| r.problems().is_empty()));
}

#[test]
fn no_secret_shows_in_any_formatting_of_the_settings() {
    let s = parse(EXAMPLE).unwrap();
    let shown = format!("{s:?} {s:#?}");
    assert!(!shown.contains("SECRET"), "{shown}");
    assert!(shown.contains("***"));
}

#[test]
fn a_file_that_does_not_parse_names_its_line_and_column() {
    let (code, line, column, msg) = failure("[defaults]\nuser_agent = \"x\nconcurrency = 2\n");
    assert_eq!(code, "USAGE_ERROR");
    assert_eq!(line, Some(2), "{msg}");
    assert!(column.is_some(), "{msg}");
    assert!(msg.starts_with(&format!("{PATH}:2:")), "{msg}");
}

#[test]
fn an_unknown_key_is_an_error_where_it_is_written() {
    let (_, line, column, msg) = failure(
        "[defaults]\nconcurrency = 2\n\n[[site]]\nhost = \"a.example\"\nuser_agnet = \"x\"\n",
    );
    assert_eq!((line, column), (Some(6), Some(1)), "{msg}");
    assert!(msg.contains("user_agnet"), "{msg}");
    let (_, line, _, msg) = failure("colour = true\n");
    assert_eq!(line, Some(1), "{msg}");
}

#[test]
fn an_inline_secret_is_refused_without_being_repeated() {
    for text in [
        "[[site]]\nhost = \"a.example\"\nauth.basic = { user = \"me\", password = \"hunter2-SECRET\" }\n",
        "[[site]]\nhost = \"a.example\"\nauth = { token = \"hunter2-SECRET\" }\n",
        "[[site]]\nhost = \"a.example\"\nbearer = \"hunter2-SECRET\"\n",
        "[[site]]\nhost = \"a.example\"\nheaders = { Authorization = \"Bearer hunter2-SECRET\" }\n",
        "[[site]]\nhost = \"a.example\"\nheaders = { X-Api-Token = \"hunter2-SECRET\" }\n",
        // Underscores for hyphens, and names that say bearer or key, carry credentials too.
        "[[site]]\nhost = \"a.example\"\nheaders = { Api_Key = \"hunter2-SECRET\" }\n",
        "[[site]]\nhost = \"a.example\"\nheaders = { X-Bearer = \"hunter2-SECRET\" }\n",
        "[[site]]\nhost = \"a.example\"\nheaders = { Ocp-Apim-Subscription-Key = \"hunter2-SECRET\" }\n",
        "[[site]]\nhost = \"a.example\"\nproxy = \"http://u:hunter2-SECRET@proxy:3128\"\n",
        "[defaults]\ngate_store = \"redis://:hunter2-SECRET@redis:6379/0\"\n",
        "[defaults]\nconcurrency = \"hunter2-SECRET\"\n",
    ] {
        let (code, line, _, msg) = failure(text);
        assert_eq!(code, "USAGE_ERROR");
        assert!(line.is_some(), "{msg}");
        assert!(!msg.contains("SECRET"), "{msg}");
    }
}

#[test]
fn rules_are_checked_strictly() {
    for (text, says) in [
        (
            "[[site]]\nuser_agent = \"x\"\n",
            "exactly one of url_prefix, host or site",
        ),
        (
            "[[site]]\nhost = \"a.example\"\nsite = \"a.example\"\n",
            "exactly one",
        ),
        ("[[site]]\nsite = \"github.io\"\n", "public suffix"),
        ("[[site]]\nsite = \"com\"\n", "public suffix"),
        ("[[site]]\nhost = \"https://a.example/\"\n", "not a URL"),
        (
            "[[site]]\nurl_prefix = \"ftp://a.example/\"\n",
            "http(s) URL",
        ),
        (
            "[[site]]\nurl_prefix = \"https://a.example/x/\"\nhost_concurrency = 2\n",
            "whole host",
        ),
        (
            "[[site]]\nurl_prefix = \"https://a.example/x/\"\nmin_interval = 5\n",
            "whole host",
        ),
        (
            "[[site]]\nhost = \"a.example\"\nhost_concurrency = 0\n",
            "between 1 and 64",
        ),
        (
            "[[site]]\nhost = \"a.example\"\nmin_interval = \"soon\"\n",
            "not a duration",
        ),
        (
            "[[site]]\nhost = \"a.example\"\nheaders = { Host = \"b\" }\n",
            "managed by rss",
        ),
        (
            "[[site]]\nhost = \"a.example\"\nauth = { bearer_env = \"A\", bearer_file = \"/b\" }\n",
            "exactly one",
        ),
        (
            "[[site]]\nhost = \"a.example\"\n[[site]]\nhost = \"A.example.\"\n",
            "matches exactly what rule 1",
        ),
        ("[defaults]\nhost_concurrency = 65\n", "between 1 and 64"),
    ] {
        let (_, line, _, msg) = failure(text);
        assert!(msg.contains(says), "{text:?}: {msg}");
        assert!(line.is_some(), "{text:?}: {msg}");
    }
}

#[test]
fn an_unreadable_secret_leaves_the_rule_unusable_and_says_why() {
    let s = parse("[[site]]\nhost = \"a.example\"\nauth.basic = { user = \"me\", password_env = \"UNSET\" }\n").unwrap();
    assert_eq!(
        s.rules[0].problems(),
        ["the environment variable UNSET is not set (or holds what is not UTF-8 text)"]
    );
}

#[test]
fn a_flag_beats_the_environment_which_beats_the_file_which_beats_the_default() {
    let s = parse("[defaults]\nhost_concurrency = 3\nmax_gate_wait = 20\nuser_agent = \"file/1\"\ndeny_private_networks = true\nrespect_robots = true\n").unwrap();
    let none = |_: &str| None;
    let c = Config::resolve_layers(Overrides::default(), none, &s.defaults).unwrap();
    assert_eq!(c.gate.host_concurrency, 3);
    assert_eq!(c.gate.max_gate_wait, Duration::from_secs(20));
    assert_eq!(c.user_agent, "file/1");
    assert!(c.deny_private_networks && c.respect_robots);
    let env = |n: &str| match n {
        "RSS_HOST_CONCURRENCY" => Some("4".to_owned()),
        "RSS_USER_AGENT" => Some("env/1".to_owned()),
        "RSS_DENY_PRIVATE_NETWORKS" => Some("0".to_owned()),
        _ => None,
    };
    let c = Config::resolve_layers(Overrides::default(), env, &s.defaults).unwrap();
    assert_eq!(c.gate.host_concurrency, 4);
    assert_eq!(c.gate.max_gate_wait, Duration::from_secs(20));
    assert_eq!(c.user_agent, "env/1");
    assert!(!c.deny_private_networks);
    let flags = Overrides {
        host_concurrency: Some(5),
        user_agent: Some("flag/1".into()),
        ..Overrides::default()
    };
    let c = Config::resolve_layers(flags, env, &s.defaults).unwrap();
    assert_eq!(c.gate.host_concurrency, 5);
    assert_eq!(c.user_agent, "flag/1");
    let c = Config::resolve_layers(Overrides::default(), none, &Overrides::default()).unwrap();
    assert_eq!(c.gate.host_concurrency, 1);
    assert!(!c.respect_robots);
}

#[test]
fn a_missing_default_file_is_no_settings_but_a_named_one_must_exist() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    let default = ConfigFile {
        path: Some(path.clone()),
        explicit: false,
    };
    assert!(Settings::load(&default).unwrap().rules.is_empty());
    let named = ConfigFile {
        path: Some(path),
        explicit: true,
    };
    assert_eq!(
        Settings::load(&named).unwrap_err().code().as_str(),
        "USAGE_ERROR"
    );
}

#[test]
fn serde_messages_lose_the_values_they_quote() {
    assert_eq!(
        without_values("invalid type: string \"hunter2\", expected u64"),
        "invalid type: string, expected u64"
    );
    assert_eq!(without_values("unknown field `x`"), "unknown field `x`");
}

#[test]
fn issue_35_a_rules_port_is_the_port_written_default_ports_included() {
    let s = parse(
        "[[site]]\nhost = \"a.example:80\"\nauth = { bearer_env = \"WIKI_TOKEN\" }\n[[site]]\nhost = \"a.example\"\n[[site]]\nhost = \"b.example:443\"\n",
    )
    .expect("a host with port 80 and the same host without a port are two rules");
    let url = |u: &str| Url::parse(u).unwrap();
    let rule_of = |u: &str| s.rule_for(&url(u)).map(|r| r.index);
    assert_eq!(s.rules[0].matcher.value(), "a.example:80");
    assert_eq!(s.rules[2].matcher.value(), "b.example:443");
    assert_eq!(rule_of("http://a.example/feed"), Some(1));
    assert_eq!(rule_of("http://a.example:80/feed"), Some(1));
    assert_eq!(rule_of("http://a.example:8080/feed"), Some(2));
    assert_eq!(rule_of("https://a.example/feed"), Some(2));
    assert_eq!(rule_of("https://b.example/feed"), Some(3));
    assert_eq!(rule_of("http://b.example/feed"), None);
    assert_eq!(rule_of("https://b.example:8443/feed"), None);
    let (_, _, _, msg) = failure("[[site]]\nsite = \"example.com:80\"\n");
    assert!(msg.contains("no port"), "{msg}");
}
