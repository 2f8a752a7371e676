//! Selection across one run: `--query`, `--dedupe` (issue 22), decided in one place for the
//! streaming (no limit) and the collecting (with a limit) pipeline alike.

use rss::Selection;
use rss::internals::parse_since;
use rss::model::{DuplicateKind, FetchOutput};
use rss::ops::{Dedupe, FetchOptions, FetchRequest};

use crate::helpers::*;

fn path(name: &str) -> String {
    fixture_path(&format!("selection/{name}"))
        .to_str()
        .unwrap()
        .to_owned()
}

async fn run(names: &[&str], opts: FetchOptions) -> FetchOutput {
    let ctx = context(config(None));
    let urls: Vec<String> = names.iter().map(|n| path(n)).collect();
    fetch(&ctx, &urls, &opts).await
}

fn query_opts(query: &str, limit: Option<usize>) -> FetchOptions {
    let mut o = FetchRequest {
        query: Some(query.into()),
        limit,
        no_cache: true,
        ..FetchRequest::default()
    }
    .options()
    .expect("a valid query");
    o.selection.since = None;
    o
}

fn titles(out: &FetchOutput) -> Vec<String> {
    out.feeds[0]
        .items
        .iter()
        .map(|i| i.title.clone().unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn a_query_keeps_items_holding_every_word_and_phrase_and_no_excluded_one() {
    for limit in [None, Some(50)] {
        let out = run(
            &["query.xml"],
            query_opts(r#"rust "async runtime" -tokio"#, limit),
        )
        .await;
        assert_eq!(
            titles(&out),
            [
                "Choosing an async runtime in Rust",
                "An old Rust post",
                "Undated: the body says it",
            ],
            "limit {limit:?}"
        );
        assert_eq!(
            out.truncation.query.as_deref(),
            Some(r#"rust "async runtime" -tokio"#)
        );
        assert_eq!(out.truncation.items_omitted_by_query, 6, "limit {limit:?}");
    }
}

#[tokio::test]
async fn a_query_ignores_case_accents_and_markup_and_matches_whole_words() {
    let hits =
        |q: &'static str| async move { titles(&run(&["query.xml"], query_opts(q, None)).await) };
    assert_eq!(hits("cafe creme strasse").await, ["CAFÉ CRÈME and Straße"]);
    assert_eq!(hits("東京").await, ["東京の天気"]);
    // "Rustacean" is not the word "rust"; class names inside tags are not text.
    let rust = hits("rust").await;
    assert!(!rust.contains(&"Rustacean meetup".to_owned()), "{rust:?}");
    assert!(hits("nothing -rust").await == ["Markup is not text"]);
}

#[tokio::test]
async fn a_query_comes_after_since_and_before_limit() {
    let mut opts = query_opts("rust", Some(1));
    opts.selection.since = Some(parse_since("2026-01-01", chrono::Utc::now()).unwrap());
    let out = run(&["query.xml"], opts).await;
    assert_eq!(titles(&out), ["Choosing an async runtime in Rust"]);
    // The 2024 post goes to since, the rest that match stay counted for the limit.
    assert_eq!(out.truncation.items_omitted_by_since, 1);
    assert_eq!(out.truncation.items_omitted_by_limit, 3);
    assert_eq!(out.truncation.items_omitted_by_query, 4);
}

#[tokio::test]
async fn a_query_that_cannot_be_parsed_is_a_usage_error_saying_where() {
    for (q, said) in [
        (r#"rust "async"#, "no closing quote at character 6"),
        ("", "empty"),
        ("- rust", "a - with nothing after it at character 1"),
        ("a\"b", "quote inside a word"),
    ] {
        let e = FetchRequest {
            query: Some(q.into()),
            ..FetchRequest::default()
        }
        .options()
        .unwrap_err();
        assert_eq!(e.code().as_str(), "USAGE_ERROR", "{q}");
        assert!(e.to_string().contains(said), "{q}: {e}");
    }
    let out = rss_cmd()
        .args(["fetch", "--query", "\"open", &path("query.xml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("no closing quote"), "{said}");
}

#[tokio::test]
async fn the_same_story_in_two_feeds_is_reported_by_guid_address_and_body() {
    let opts = FetchOptions {
        selection: Selection::default(),
        ..no_cache()
    };
    let out = run(&["dupes-a.xml", "dupes-b.xml"], opts).await;
    assert_eq!(out.total_items, 9, "report keeps every item");
    let id = |feed: usize, title: &str| item(&out.feeds[feed], title).id.clone();
    let groups: Vec<(DuplicateKind, Vec<String>)> = out
        .duplicates
        .iter()
        .map(|d| (d.kind, d.items.iter().map(|i| i.id.clone()).collect()))
        .collect();
    assert_eq!(
        groups,
        [
            (
                DuplicateKind::Guid,
                vec![
                    id(0, "One story, one tag guid"),
                    id(1, "Story one, as B tells it"),
                    id(1, "Story one again, by its address"),
                ]
            ),
            (
                DuplicateKind::Url,
                vec![
                    id(0, "Story two, tracked link"),
                    id(1, "Story two, same page")
                ]
            ),
            (
                DuplicateKind::ContentHash,
                vec![
                    id(0, "Press release: the wires launch a joint service"),
                    id(
                        1,
                        "Press release: The wires launch a joint service | Wire B"
                    )
                ]
            ),
        ]
    );
    assert_eq!(out.duplicates[0].key, "tag:wire.example.com,2026:story-1");
    assert_eq!(out.duplicates[1].key, "news.example.com/s/2");
    assert_eq!(out.duplicates[0].items[1].feed_url, path("dupes-b.xml"));
    // A short guid ("7") names an item only inside its own feed.
    assert!(out.duplicates.iter().all(|d| d.items.len() < 4));
}

#[tokio::test]
async fn drop_keeps_the_first_of_each_story_and_counts_the_rest() {
    let opts = FetchOptions {
        dedupe: Dedupe::Drop,
        ..no_cache()
    };
    let out = run(&["dupes-a.xml", "dupes-b.xml"], opts).await;
    assert_eq!(out.feeds[0].item_count, 4);
    assert_eq!(
        out.feeds[1]
            .items
            .iter()
            .map(|i| i.title.clone().unwrap())
            .collect::<Vec<_>>(),
        ["Local guid seven in B"]
    );
    assert_eq!(out.feeds[1].item_count, 1);
    assert_eq!(out.total_items, 5);
    assert_eq!(out.truncation.items_omitted_as_duplicates, 4);
    assert_eq!(out.duplicates.len(), 3, "dropped items are still listed");
    let tokens: usize = out
        .feeds
        .iter()
        .flat_map(|f| &f.items)
        .map(|i| i.content_tokens_est)
        .sum();
    assert_eq!(out.total_content_tokens_est, tokens);

    let off = run(
        &["dupes-a.xml", "dupes-b.xml"],
        FetchOptions {
            dedupe: Dedupe::Off,
            ..no_cache()
        },
    )
    .await;
    assert!(off.duplicates.is_empty());
    assert_eq!(off.total_items, 9);
}

#[tokio::test]
async fn issue_35_a_body_repeated_inside_a_feed_is_boilerplate_and_joins_no_story() {
    // Every body of both feeds is the same teaser line (issue 27 made sure no two items of
    // one feed became one story; they were still paired off across the feeds, and `drop`
    // left out every post of B). A teaser is no identity: four posts, four stories.
    for mode in [Dedupe::Report, Dedupe::Drop] {
        let opts = FetchOptions {
            dedupe: mode,
            ..no_cache()
        };
        let out = run(&["boiler-a.xml", "boiler-b.xml"], opts).await;
        assert!(out.duplicates.is_empty(), "{mode:?}: {:?}", out.duplicates);
        assert_eq!(out.total_items, 4, "{mode:?}");
        assert_eq!(out.truncation.items_omitted_as_duplicates, 0, "{mode:?}");
    }
}

#[tokio::test]
async fn issue_35_a_body_shared_once_by_two_feeds_joins_only_items_whose_titles_agree() {
    // teaser-a and teaser-b each use one teaser once (so it is no boilerplate of either),
    // on two different posts; and each carries one wire story, its title suffixed in B.
    for mode in [Dedupe::Report, Dedupe::Drop] {
        let opts = FetchOptions {
            dedupe: mode,
            ..no_cache()
        };
        let out = run(&["teaser-a.xml", "teaser-b.xml"], opts).await;
        let groups: Vec<Vec<String>> = out
            .duplicates
            .iter()
            .map(|d| {
                d.items
                    .iter()
                    .map(|i| {
                        let f = out.feeds.iter().position(|f| f.feed_url == i.feed_url);
                        format!("{}:{}", f.unwrap(), &i.id[..4])
                    })
                    .collect()
            })
            .collect();
        assert_eq!(groups.len(), 1, "{mode:?}: {:?}", out.duplicates);
        assert_eq!(out.duplicates[0].kind, DuplicateKind::ContentHash);
        let titles: Vec<&str> = out
            .feeds
            .iter()
            .flat_map(|f| &f.items)
            .filter_map(|i| i.title.as_deref())
            .collect();
        assert!(titles.contains(&"A post about gardens"), "{titles:?}");
        assert!(titles.contains(&"A post about rivers"), "{titles:?}");
        let expected = if mode == Dedupe::Drop { 3 } else { 4 };
        assert_eq!(out.total_items, expected, "{mode:?}: {titles:?}");
    }
}

#[test]
fn the_cli_takes_dedupe_and_refuses_a_bad_value() {
    let out = rss_cmd()
        .args([
            "fetch",
            "--dedupe",
            "drop",
            &path("dupes-a.xml"),
            &path("dupes-b.xml"),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["truncation"]["items_omitted_as_duplicates"], 4);
    assert_eq!(v["duplicates"].as_array().unwrap().len(), 3);
    let bad = rss_cmd()
        .args(["fetch", "--dedupe", "sometimes", &path("dupes-a.xml")])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_drop_the_page_of_a_dropped_duplicate_is_never_read() {
    let page = fixture("articles/story.html");
    let srv = TestServer::start(move |req| {
        let feed = |links: &[&str]| {
            let items: String = links
                .iter()
                .enumerate()
                .map(|(i, l)| format!("<item><title>S{i}</title><link>{l}</link></item>"))
                .collect();
            Reply::xml(format!(
                "<rss><channel><title>F</title>{items}</channel></rss>"
            ))
        };
        match req.path.as_str() {
            "/a.xml" => feed(&["/story/1", "/story/2"]),
            "/b.xml" => feed(&["/story/1/?utm_source=b", "/story/3"]),
            _ => Reply::ok(page.clone(), "text/html; charset=utf-8"),
        }
    })
    .await;
    let story1 = |srv: &TestServer| {
        srv.hits()
            .iter()
            .filter(|h| h.path.starts_with("/story/1"))
            .count()
    };
    for (mode, reads) in [("drop", 1), ("report", 2)] {
        let before = story1(&srv);
        let out = rss_cmd()
            .args(["fetch", "--articles", "--no-cache", "--dedupe", mode])
            .args([srv.url("/a.xml"), srv.url("/b.xml")])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["duplicates"].as_array().unwrap().len(), 1, "{mode}");
        assert_eq!(
            story1(&srv) - before,
            reads,
            "{mode}: the shared story's page reads"
        );
        // The kept item of each story has its article.
        assert_eq!(
            v["feeds"][0]["items"][0]["article"]["status"], "ok",
            "{mode}"
        );
    }
}
