//! The `rss` binary end to end: inputs, formats, exit codes, usage errors, schemas.

use std::io::Read;
use std::process::Stdio;

use crate::helpers::*;

fn validator(kind: &str) -> jsonschema::Validator {
    let out = rss_cmd()
        .args(["schema", "--command", kind])
        .output()
        .unwrap();
    assert!(out.status.success());
    let schema = json(&out.stdout);
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

fn assert_valid(v: &jsonschema::Validator, doc: &serde_json::Value) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_fetch_validates_against_the_printed_schema() {
    let srv = fixture_server().await;
    let urls: Vec<String> = [
        "/rss20.xml",
        "/atom10.xml",
        "/jsonfeed11.json",
        "/malformed.xml",
        "/missing.xml",
    ]
    .iter()
    .map(|p| srv.url(p))
    .collect();
    let mut args = vec!["fetch".to_owned(), "--no-cache".to_owned()];
    args.extend(urls.clone());
    let out = rss_cmd().args(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&out.stdout);
    assert_valid(&validator("fetch"), &doc);
    assert_eq!(doc["schema_version"], "1");
    assert_eq!(doc["feeds"].as_array().unwrap().len(), 5);
    // Optional fields are null, never omitted.
    assert!(doc["feeds"][3]["title"].is_null());
    assert!(doc["feeds"][0]["error"].is_null());
    assert_eq!(doc["errors"].as_array().unwrap().len(), 2);
    assert_eq!(doc["feeds"][4]["error"]["code"], "FEED_FETCH_FAILED");
    assert_eq!(doc["feeds"][4]["error"]["details"]["http_status"], 404);

    let mut nd_args = args.clone();
    nd_args.extend(["--format".into(), "ndjson".into()]);
    let out = rss_cmd().args(&nd_args).output().unwrap();
    let item_schema = validator("ndjson");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert!(lines.len() >= 6);
    for line in &lines {
        assert_valid(&item_schema, &json(line.as_bytes()));
    }

    nd_args.push("--ndjson-records".into());
    let out = rss_cmd().args(&nd_args).output().unwrap();
    let record_schema = validator("ndjson-records");
    let text = String::from_utf8(out.stdout).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| json(l.as_bytes())).collect();
    for r in &records {
        assert_valid(&record_schema, r);
    }
    assert_eq!(records.iter().filter(|r| r["type"] == "error").count(), 2);
    let last = records.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(last["feeds_failed"], 2);
}

/// Issue 35: every error `code` an output can carry is stated by its schema as an enum of
/// the contract's codes; a page's error never says `FEED_FETCH_FAILED`, a feed's never
/// `PAGE_FETCH_FAILED`; a code outside the list fails validation.
#[test]
fn every_error_code_in_every_output_schema_is_an_enum_of_codes() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let mut seen = 0;
    for kind in [
        "fetch",
        "ndjson",
        "ndjson-records",
        "article",
        "article-ndjson",
        "discover",
        "show",
        "cache-list",
        "hosts",
        "readers",
        "readers-forget",
        "ack",
        "watch",
        "config-check",
    ] {
        let out = rss_cmd()
            .args(["schema", "--command", kind])
            .output()
            .unwrap();
        let schema = json(&out.stdout);
        for (def, never) in [
            ("ErrorObject", "PAGE_FETCH_FAILED"),
            ("PageError", "FEED_FETCH_FAILED"),
        ] {
            let Some(code) = schema.pointer(&format!("/$defs/{def}/properties/code")) else {
                continue;
            };
            seen += 1;
            let codes: Vec<&str> = code["enum"]
                .as_array()
                .unwrap_or_else(|| panic!("{kind} {def}.code is not an enum: {code}"))
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect();
            assert!(codes.contains(&"RATE_LIMITED"), "{kind} {def}: {codes:?}");
            assert!(!codes.contains(&never), "{kind} {def}: {codes:?}");
            for c in &codes {
                assert!(
                    readme.contains(&format!("`{c}`")),
                    "{c} is not in the README"
                );
            }
            let mut made_up = schema["$defs"][def].clone();
            made_up["$defs"] = schema["$defs"].clone();
            let v = jsonschema::validator_for(&made_up).unwrap();
            let mut doc =
                serde_json::json!({"code": "RATE_LIMITED", "message": "m", "details": {}});
            let key = if def == "ErrorObject" {
                "feed_url"
            } else {
                "url"
            };
            doc[key] = serde_json::Value::Null;
            assert_valid(&v, &doc);
            doc["code"] = "SOMETHING_ELSE".into();
            assert!(!v.is_valid(&doc), "{kind} {def} accepted a made-up code");
        }
    }
    assert!(seen >= 9, "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_xml_fails_alone_and_the_batch_exits_3() {
    let srv = fixture_server().await;
    let out = rss_cmd()
        .args([
            "fetch",
            "--no-cache",
            &srv.url("/malformed.xml"),
            &srv.url("/rss20.xml"),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&out.stdout);
    assert_eq!(doc["feeds"][0]["status"], "error");
    assert_eq!(doc["feeds"][0]["error"]["code"], "FEED_PARSE_FAILED");
    assert_eq!(doc["feeds"][1]["status"], "ok");
    assert_eq!(doc["total_items"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_points_at_discover_and_discover_finds_its_feeds() {
    let srv = fixture_server().await;
    let page = srv.url("/page.html");
    let out = rss_cmd()
        .args(["fetch", "--no-cache", &page])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let doc = json(&out.stdout);
    let err = &doc["feeds"][0]["error"];
    assert_eq!(err["code"], "FEED_PARSE_FAILED");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(&format!("rss discover {page}")),
        "{err}"
    );

    let out = rss_cmd().args(["discover", &page]).output().unwrap();
    assert!(out.status.success());
    let doc = json(&out.stdout);
    assert_valid(&validator("discover"), &doc);
    assert_eq!(doc["is_feed"], false);
    let urls: Vec<&str> = doc["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        vec![
            srv.url("/feed.xml").as_str(),
            srv.url("/atom.xml").as_str(),
            "https://example.com/feed.json"
        ]
    );
    assert_eq!(doc["feeds"][1]["title"], "Example Atom");
    assert_eq!(doc["feeds"][1]["format"], "atom");

    let out = rss_cmd()
        .args(["discover", &srv.url("/rss20.xml")])
        .output()
        .unwrap();
    let doc = json(&out.stdout);
    assert_eq!(doc["is_feed"], true);
    assert_eq!(doc["feeds"][0]["title"], "Example Engineering Blog");
}

#[test]
fn usage_errors_exit_2_with_json_on_stderr_and_nothing_on_stdout() {
    for args in [
        vec!["fetch", "--bogus-flag", "x"],
        vec!["fetch", "--limit", "-1", "x"],
        vec![
            "fetch",
            "--since",
            "yesterdayish",
            "tests/fixtures/rss20.xml",
        ],
        vec!["fetch"],
        vec!["fetch", "--max-age", "soon", "tests/fixtures/rss20.xml"],
        vec!["schema", "--command", "nope"],
        vec!["frobnicate"],
    ] {
        let out = rss_cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: stdout {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        let err = json(&out.stderr);
        assert_eq!(err["code"], "USAGE_ERROR", "{args:?}");
        assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
}

#[test]
fn an_invalid_environment_value_is_a_usage_error() {
    let out = rss_cmd()
        .env("RSS_MAX_GATE_WAIT_SECS", "a while")
        .args(["fetch", "tests/fixtures/rss20.xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        json(&out.stderr)["message"]
            .as_str()
            .unwrap()
            .contains("RSS_MAX_GATE_WAIT_SECS")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_merge_from_args_stdin_input_files_and_opml() {
    let srv = fixture_server().await;
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("list.txt");
    std::fs::write(
        &list,
        format!(
            "# comment\n\n{}\n{}\n",
            srv.url("/rss093.xml"),
            srv.url("/rss20.xml")
        ),
    )
    .unwrap();
    let opml = dir.path().join("subs.opml");
    std::fs::write(
        &opml,
        format!(
            "<opml version=\"2.0\"><body><outline text=\"g\"><outline xmlUrl=\"{}\"/></outline><outline xmlUrl=\"{}\"/></body></opml>",
            srv.url("/rss094.xml"),
            srv.url("/rss20.xml")
        ),
    )
    .unwrap();
    let out = rss_cmd()
        .args([
            "fetch",
            "--no-cache",
            "--content",
            "none",
            &srv.url("/rss20.xml"),
            "-",
            "ftp://nope/x",
            "tests/fixtures/rss090.xml",
        ])
        .args([
            "--input",
            list.to_str().unwrap(),
            "--opml",
            opml.to_str().unwrap(),
        ])
        .write_stdin(format!("{}\n# skipped\n", srv.url("/atom03.xml")))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&out.stdout);
    let urls: Vec<&str> = doc["feeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["feed_url"].as_str().unwrap())
        .collect();
    assert_eq!(
        urls,
        vec![
            srv.url("/rss20.xml").as_str(),
            srv.url("/atom03.xml").as_str(),
            "ftp://nope/x",
            "tests/fixtures/rss090.xml",
            srv.url("/rss093.xml").as_str(),
            srv.url("/rss094.xml").as_str(),
        ]
    );
    assert_eq!(doc["feeds"][2]["error"]["code"], "INVALID_URL");
    assert_eq!(doc["feeds"][3]["status"], "ok");
    assert_eq!(doc["feeds"][3]["attempts"], 0);
    assert_eq!(
        srv.hits_for("/rss20.xml").len(),
        1,
        "duplicates are fetched once"
    );
}

#[test]
fn text_format_is_a_human_summary_without_colour_on_a_pipe() {
    let out = rss_cmd()
        .args(["fetch", "--format", "text", "tests/fixtures/rss20.xml"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Example Engineering Blog"));
    assert!(text.contains("2026-06-01  Shipping the new parser & more"));
    assert!(!text.contains('\x1b'));
}

#[test]
fn a_closed_stdout_pipe_exits_quietly() {
    let mut big = String::from("<rss><channel><title>Big</title>");
    for i in 0..20_000 {
        big.push_str(&format!(
            "<item><title>Item {i}</title><link>https://x.example/{i}</link></item>"
        ));
    }
    big.push_str("</channel></rss>");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.xml");
    std::fs::write(&path, big).unwrap();
    let mut child = rss_std(dir.path())
        .args(["fetch", "--format", "ndjson", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn the_readme_demo_command_works_offline() {
    let out = rss_cmd()
        .args(["fetch", "--format", "text", "tests/fixtures/rss20.xml"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let head: Vec<&str> = readme.lines().take(12).collect();
    assert!(
        head.iter()
            .any(|l| l.contains(" fetch ") && l.contains("tests/fixtures/")),
        "{head:#?}"
    );
    assert!(
        head.iter()
            .any(|l| l.contains(".ci/run") || l.contains("cargo test")),
        "{head:#?}"
    );
}

#[test]
fn rss_alone_prints_the_help_and_exits_2() {
    let out = rss_cmd().output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Usage: rss"), "{err}");
    assert!(err.contains("fetch"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn usage_errors_are_json_for_scripts_and_words_when_asked() {
    let out = rss_cmd().args(["fetch", "--bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out.stderr)["code"], "USAGE_ERROR");
    let out = rss_cmd()
        .args(["fetch", "--bogus", "--error-format", "text"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: unexpected argument '--bogus'"),
        "{err}"
    );
    assert!(err.contains("Usage: rss fetch"), "{err}");
    let out = rss_cmd()
        .args(["--error-format=text", "fetch", "--max-age", "soon", "x.xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: --max-age"), "{err}");
}

#[test]
fn every_subcommand_help_ends_with_examples() {
    for sub in subcommands() {
        let out = rss_cmd().args([sub.as_str(), "--help"]).output().unwrap();
        assert!(out.status.success(), "{sub}");
        let help = String::from_utf8_lossy(&out.stdout);
        let examples = help.rsplit("Examples:").next().unwrap();
        assert!(help.contains("Examples:"), "{sub}: {help}");
        assert!(examples.matches("\n  ").count() >= 2, "{sub}: {examples}");
    }
}

/// Issue 31, for people at a terminal: counts in the singular and plural, one hint per
/// failure line, article text as text, `rss hosts` as a table, global options apart.
#[test]
fn people_read_counts_hints_text_tables_and_help_as_they_expect() {
    let out = rss_cmd()
        .args(["fetch", "--format", "text", "--no-color"])
        .arg(fixture_path("page.html"))
        .arg(fixture_path("parsing/items-one-field.xml"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("2 feeds, "), "{text}");
    assert!(
        !text.contains("1 feeds") && !text.contains("1 items"),
        "{text}"
    );
    let failure = text.lines().find(|l| l.contains("failed:")).unwrap();
    assert_eq!(failure.matches(" — ").count(), 1, "{failure}");
    assert_eq!(failure.matches("rss discover").count(), 1, "{failure}");

    let out = rss_cmd()
        .args(["article", "--format", "text", "--no-color"])
        .arg(fixture_path("articles/story.html"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("For ninety-one years"), "{text}");
    assert!(
        !text.contains("](") && !text.contains("## "),
        "markdown in text: {text}"
    );

    // Piped (as here), `rss hosts` prints JSON; a table when asked.
    let out = rss_cmd().args(["hosts"]).output().unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok());
    let out = rss_cmd()
        .args(["hosts", "--format", "table"])
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.starts_with("0 hosts with learned state"), "{table}");
    let out = rss_cmd()
        .args(["hosts", "--format", "json"])
        .output()
        .unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok());

    let out = rss_cmd().args(["fetch", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let global = help
        .find("Global options:")
        .expect("a heading for global options");
    assert!(
        help.find("--limit").unwrap() < global,
        "fetch's own options first"
    );
    assert!(help[global..].contains("--cache-dir") && !help[..global].contains("--cache-dir"));
}
