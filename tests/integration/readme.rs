//! The README's tables and lists say what the code does (issue 23: one place per fact).
//! Each list is written once in the code; these tests fail when the README drifts from it.

use std::collections::BTreeSet;

use rss::error::ErrorCode;
use rss::model::WarningCode;

use crate::helpers::*;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The part of the README from the heading `from` to the next heading of any level.
fn section(text: &str, from: &str) -> String {
    let start = text
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in the README"));
    let rest = &text[start + from.len()..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    rest[..end].to_owned()
}

/// Every `SCREAMING_CASE` code in backticks in `text`, in order.
fn codes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in text.split('`').skip(1).step_by(2) {
        if part.len() > 2
            && part
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
            && part.contains('_')
            && !out.iter().any(|c| c == part)
        {
            out.push(part.to_owned());
        }
    }
    out
}

#[test]
fn the_error_table_lists_every_error_code_in_order() {
    let text = readme();
    let table: Vec<String> = section(&text, "### Errors and exit codes")
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('`').nth(1).map(str::to_owned))
        .collect();
    let code: Vec<String> = ErrorCode::all().map(|c| c.as_str().to_owned()).collect();
    assert_eq!(table, code);
}

#[test]
fn the_warning_list_names_every_warning_code_in_order() {
    let text = readme();
    let start = text
        .find("Warnings (`warnings[].code`):")
        .expect("the warnings list");
    let para = &text[start..];
    let para = &para[..para.find("\n\n").unwrap_or(para.len())];
    let listed: Vec<String> = codes(para);
    let code: Vec<String> = WarningCode::all().map(|c| c.as_str().to_owned()).collect();
    assert_eq!(listed, code);
}

#[test]
fn the_configuration_table_names_every_environment_variable() {
    let text = readme();
    let table = section(&text, "## Configuration");
    let mut config =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/config.rs")).unwrap();
    // And the files of its parts (`src/config/`).
    let parts = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/config")).unwrap();
    for part in parts {
        config.push_str(&std::fs::read_to_string(part.unwrap().path()).unwrap());
    }
    let named: BTreeSet<&str> = config
        .split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("RSS_") && !s.starts_with("RSS_TEST_"))
        .collect();
    assert!(named.len() >= 10, "{named:?}");
    for var in named {
        assert!(
            table.contains(&format!("`{var}`")),
            "{var} is not in the README's table"
        );
    }
}

/// The long flags `rss SUBCOMMAND --help` lists.
fn flags_of(sub: &str) -> BTreeSet<String> {
    let out = rss_cmd().args([sub, "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    help.split_whitespace()
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(|w| {
            w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric())
                .split(['=', '[', '<', ','])
                .next()
                .unwrap()
                .to_owned()
        })
        .filter(|f| f != "--help" && f != "--version")
        .collect()
}

#[test]
fn every_flag_of_fetch_and_mcp_is_in_the_readme_and_every_flag_there_exists() {
    let text = readme();
    for sub in ["fetch", "mcp", "article"] {
        for flag in flags_of(sub) {
            assert!(
                text.contains(&format!("`{flag}")),
                "`rss {sub} {flag}` is not in the README"
            );
        }
    }
    let table = section(&text, "### `rss fetch` flags");
    let fetch = flags_of("fetch");
    for row in table.lines().filter(|l| l.starts_with("| `--")) {
        let flag = row[3..].split([' ', '`']).next().unwrap();
        assert!(
            fetch.contains(flag),
            "the README's {flag} is not a flag of rss fetch"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_and_argument_is_in_the_readme() {
    let text = readme();
    let mcp = section(&text, "## MCP server");
    let s = crate::mcp::spawn_with(&[], &[]).await;
    let tools = s.client.list_all_tools().await.unwrap();
    // Every schema we publish keeps to JSON Schema 2020-12's vocabulary (the conformance
    // suite's tools-list warns on the generator's `uint` / `uint64` formats).
    let listed = serde_json::to_string(&tools).unwrap();
    for odd in ["\"uint", "\"int", "\"double\"", "\"float\""] {
        assert!(
            !listed.contains(&format!("\"format\":{odd}")),
            "a tool schema has format {odd}"
        );
    }
    for t in &tools {
        assert!(
            mcp.contains(&format!("`{}`", t.name)),
            "tool {} is not in the README",
            t.name
        );
        let props = t.input_schema.get("properties").and_then(|p| p.as_object());
        for arg in props.into_iter().flat_map(|p| p.keys()) {
            assert!(
                mcp.contains(&format!("`{arg}`")),
                "{}'s argument {arg} is not in the README's MCP section",
                t.name
            );
        }
    }
    s.client.cancel().await.unwrap();
}

#[test]
fn the_example_config_file_is_one_the_checker_accepts() {
    let text = readme();
    let part = &text[text
        .find("### The config file")
        .expect("the config file section")..];
    let start = part.find("```toml\n").expect("a toml example") + "```toml\n".len();
    let example = &part[start..start + part[start..].find("```").unwrap()];
    let env = |name: &str| Some(format!("value of {name}"));
    let s = rss::internals::Settings::parse(example, std::path::Path::new("/x/config.toml"), &env)
        .unwrap_or_else(|e| panic!("the README's example: {e}"));
    assert_eq!(s.rules.len(), 3);
    assert!(s.defaults.user_agent.is_some() && s.defaults.call_timeout_secs.is_some());
}
