//! Parsing at feedparser's level: one fixture per rule in `tests/fixtures/parsing/`.

use rss::model::{FeedResult, FeedStatus};

use crate::helpers::*;

async fn parse(name: &str) -> FeedResult {
    let path = fixture_path(&format!("parsing/{name}"));
    let ctx = context(config(None));
    let out = fetch(&ctx, &[path.to_str().unwrap().to_owned()], &no_cache()).await;
    out.feeds.into_iter().next().unwrap()
}

async fn ok(name: &str) -> FeedResult {
    let f = parse(name).await;
    assert_eq!(f.status, FeedStatus::Ok, "{name}: {:?}", f.error);
    f
}

#[tokio::test]
async fn an_empty_feed_is_a_feed_with_its_metadata() {
    let f = ok("empty-rss-with-metadata.xml").await;
    assert_eq!(f.item_count, 0);
    assert_eq!(f.meta.title, None);
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://empty.example.com/")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2025-06-10T04:00:00Z"));
    assert_eq!(f.meta.language.as_deref(), Some("en-gb"));
    assert_eq!(
        f.meta.icon.as_deref(),
        Some("https://empty.example.com/logo.png")
    );
    assert_eq!(f.meta.authors, ["The Editor"]);

    let f = ok("empty-atom.xml").await;
    assert_eq!(f.meta.format.as_deref(), Some("atom"));
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://atom-empty.example.com/")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2025-06-10T04:00:00Z"));
    assert_eq!(f.meta.authors, ["Nobody"]);

    let f = ok("empty-rdf.xml").await;
    assert_eq!(f.meta.format.as_deref(), Some("rdf"));
    assert_eq!(f.meta.updated.as_deref(), Some("2025-06-10T04:00:00Z"));
}

#[tokio::test]
async fn a_truncated_document_that_yields_nothing_is_not_a_feed() {
    let f = parse("truncated.xml").await;
    assert_eq!(f.status, FeedStatus::Error);
    assert_eq!(f.error.unwrap().code, "FEED_PARSE_FAILED");
}

#[tokio::test]
async fn issue_22_only_an_item_with_nothing_in_it_is_not_an_item() {
    let f = ok("empty-items.xml").await;
    let titles: Vec<_> = f.items.iter().map(|i| i.title.as_deref()).collect();
    assert_eq!(titles, [Some("Real one"), None, None]);
    assert_eq!(f.items[1].categories, ["only a category"]);
    assert_eq!(f.items[2].guid.as_deref(), Some("just-a-guid"));
}

#[tokio::test]
async fn issue_22_an_item_with_any_one_field_is_kept_with_that_field() {
    let path = fixture_path("parsing/items-one-field.xml");
    let out = fetch(
        &context(config(None)),
        &[path.to_string_lossy().into_owned()],
        &no_cache(),
    )
    .await;
    let f = &out.feeds[0];
    assert_eq!(f.items.len(), 6, "{:?}", f.items);
    let it = |i: usize| &f.items[i];
    assert_eq!(it(0).authors, ["Ada Lovelace"]);
    assert_eq!(it(1).categories, ["Engines"]);
    assert_eq!(
        it(2).comments.as_deref(),
        Some("https://one.example.com/comments/3")
    );
    let source = it(3).source.as_ref().unwrap();
    assert_eq!(source.title.as_deref(), Some("The Other Feed"));
    assert_eq!(
        source.url.as_deref(),
        Some("https://other.example.com/feed.xml")
    );
    assert_eq!(it(4).duration_seconds, Some(3723));
    assert_eq!(it(5).enclosures[0].url, "https://one.example.com/a.mp3");
    // Every one has its own stable id.
    let ids: std::collections::HashSet<_> = f.items.iter().map(|i| &i.id).collect();
    assert_eq!(ids.len(), 6);
    // The truly empty ones are left out, and said so.
    let w = out
        .warnings
        .iter()
        .find(|w| w.code == "ELEMENT_SKIPPED")
        .expect("a warning for the empty items");
    assert!(
        w.message.starts_with("3 empty item element(s)"),
        "{}",
        w.message
    );
}

#[tokio::test]
async fn rss_in_a_namespace_reads_as_rss() {
    let f = ok("rss-prefixed-userland.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("Prefixed RSS"));
    let i = item(&f, "Prefixed item");
    assert_eq!(i.url.as_deref(), Some("https://prefixed.example.com/1"));
    assert_eq!(i.published.as_deref(), Some("2025-06-10T04:00:00Z"));

    let f = ok("rss-unknown-namespace.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("Odd default namespace"));
    // The feed's own elements win over a module's with the same local name.
    let i = item(&f, "Item title");
    assert_eq!(i.summary.as_deref(), Some("The description"));
    assert_eq!(i.published.as_deref(), Some("2025-06-10T04:00:00Z"));
}

#[tokio::test]
async fn atom_under_draft_and_odd_namespaces_reads_as_atom() {
    let f = ok("atom-draft-namespace.xml").await;
    assert_eq!(f.meta.format.as_deref(), Some("atom"));
    assert_eq!(f.meta.updated.as_deref(), Some("2005-06-10T04:00:00Z"));
    let i = item(&f, "Draft entry");
    assert_eq!(i.url.as_deref(), Some("https://draft.example.com/1"));
    assert_eq!(i.guid.as_deref(), Some("tag:draft.example.com,2005:1"));

    let f = ok("atom-odd-namespace.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("Odd Atom"));
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://oddatom.example.com/")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2005-06-10T04:00:00Z"));
    let i = item(&f, "Odd entry");
    assert_eq!(i.guid.as_deref(), Some("urn:x:1"));
    assert_eq!(i.published.as_deref(), Some("2005-06-10T04:00:00Z"));
}

#[tokio::test]
async fn feed_level_dates_fill_updated() {
    let f = ok("feed-dates.xml").await;
    assert_eq!(f.meta.updated.as_deref(), Some("2025-06-09T04:00:00Z"));
}

#[tokio::test]
async fn people_are_names_not_addresses() {
    let f = ok("people.xml").await;
    let authors: Vec<Vec<String>> = f.items.iter().map(|i| i.authors.clone()).collect();
    for (title, want) in [
        ("1", "Example Editor"),
        ("2", "Example Editor"),
        ("3", "Dee Author"),
        ("4", "Cee Creator"),
        ("5", "only@example.com"),
    ] {
        assert_eq!(item(&f, title).authors, [want], "{authors:?}");
    }
}

#[tokio::test]
async fn categories_come_from_every_vocabulary() {
    let f = ok("categories.xml").await;
    assert_eq!(f.meta.categories, ["Technology", "Software How-To", "News"]);
    assert_eq!(
        item(&f, "1").categories,
        [
            "Plain",
            "Own text",
            "Media cat",
            "Subject",
            "Arts",
            "Design"
        ]
    );
}

#[tokio::test]
async fn issue_22_a_permalink_guid_is_the_address_of_an_item_without_a_link() {
    let f = ok("guid-permalink.xml").await;
    let url = |t: &str| item(&f, t).url.clone();
    assert_eq!(
        url("perma").as_deref(),
        Some("https://g.example.com/post/1")
    );
    assert_eq!(url("not perma"), None);
    // Resolved against the base like any link (here the channel link: a local file).
    assert_eq!(
        url("relative perma").as_deref(),
        Some("https://g.example.com/post-3")
    );
    assert_eq!(
        url("perma true").as_deref(),
        Some("https://g.example.com/posts/5")
    );
    assert_eq!(url("not a web address"), None);
    assert_eq!(
        url("link wins").as_deref(),
        Some("https://g.example.com/real/4")
    );
}

#[tokio::test]
async fn internal_dtd_entities_expand_and_external_ones_are_never_read() {
    let f = ok("dtd-entities.xml").await;
    assert_eq!(f.meta.site_url.as_deref(), Some("https://dtd.example.com/"));
    let i = item(&f, "Entity item");
    assert_eq!(i.guid.as_deref(), Some("tag:example.com,2006:1"));
    assert_eq!(i.url.as_deref(), Some("https://dtd.example.com/posts/1"));
    let s = i.summary.as_deref().unwrap();
    assert!(!s.contains("root:"), "{s}");
}

#[tokio::test]
async fn a_billion_laughs_costs_nothing() {
    let f = ok("billion-laughs.xml").await;
    let t = f.items[0].title.as_deref().unwrap();
    assert!(t.len() < 10_000, "{} bytes", t.len());
}

#[tokio::test]
async fn undeclared_legacy_encodings_are_detected() {
    for (name, title) in [
        ("undeclared-euc-jp.xml", "日本語のフィード"),
        ("undeclared-shift-jis.xml", "日本語のフィード"),
        ("undeclared-gb2312.xml", "中文新闻频道"),
        ("undeclared-big5.xml", "繁體中文新聞頻道"),
        ("undeclared-euc-kr.xml", "한국어 피드"),
        ("undeclared-windows-1251.xml", "Русская лента новостей"),
    ] {
        let f = ok(name).await;
        assert_eq!(f.meta.title.as_deref(), Some(title), "{name}");
    }
}

#[test]
fn an_empty_feed_and_a_truncated_one_in_a_batch_exit_3_and_alone_4() {
    let empty = fixture_path("parsing/empty-rss-with-metadata.xml");
    let truncated = fixture_path("parsing/truncated.xml");
    let out = rss_cmd()
        .args([
            "fetch",
            empty.to_str().unwrap(),
            truncated.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let doc = json(&out.stdout);
    assert_eq!(doc["feeds"][0]["status"], "ok");
    assert_eq!(doc["feeds"][0]["item_count"], 0);
    assert_eq!(doc["feeds"][1]["error"]["code"], "FEED_PARSE_FAILED");
    let out = rss_cmd()
        .args(["fetch", truncated.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let out = rss_cmd()
        .args(["fetch", empty.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test]
async fn issue_40_a_name_beside_an_address_is_the_name_in_every_order_and_element() {
    let f = ok("people-shapes.xml").await;
    assert_eq!(f.meta.authors, ["Morgan Desk"]);
    for (title, want) in [
        ("name then address", "Robin Quill"),
        ("address then name", "Robin Quill"),
        ("mailto and name", "Sam Inkwell"),
        ("creator with mailto", "Sam Inkwell"),
        ("only an address", "lee@people.example.org"),
        ("a remark, no address", "Lee Pen (guest)"),
    ] {
        assert_eq!(item(&f, title).authors, [want], "{title}");
    }
}

#[tokio::test]
async fn issue_40_dc_description_is_the_summary_when_there_is_no_description() {
    let f = ok("dc-description.xml").await;
    assert_eq!(
        item(&f, "Only Dublin Core").summary.as_deref(),
        Some("The summary lives in dc:description.")
    );
    assert_eq!(
        item(&f, "Both").summary.as_deref(),
        Some("The description wins.")
    );
}

#[tokio::test]
async fn issue_40_a_category_of_escaped_markup_is_read_as_its_text() {
    let f = ok("category-markup.xml").await;
    assert_eq!(
        item(&f, "one").categories,
        ["Gardening", "Compost & soil", "Plain"]
    );
}

#[tokio::test]
async fn issue_40_atom_text_of_an_unknown_type_is_read_as_text() {
    let f = ok("atom-unknown-type.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("Kinds of text"));
    let it = item(&f, "A title of a made-up type");
    assert_eq!(
        it.summary.as_deref(),
        Some("A summary of a media type, not base64 at all.")
    );
    assert_eq!(
        it.content.as_deref(),
        Some("Content of a media type, not base64 either.")
    );
    assert_eq!(
        item(&f, "Real base64").content.as_deref(),
        Some("Decoded from base64.")
    );
    assert!(
        f.items.len() == 2,
        "nothing is dropped: {:?}",
        f.items.iter().map(|i| &i.title).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn issue_40_rfc_822_dates_in_other_languages_are_read() {
    let f = ok("dates-other-languages.xml").await;
    assert_eq!(f.meta.updated.as_deref(), Some("2022-11-17T07:30:00Z"));
    for (title, want) in [
        ("fr", "2022-11-16T09:00:00Z"),
        ("de", "2022-11-15T09:00:00Z"),
        ("es", "2022-11-14T09:00:00Z"),
        ("it", "2022-12-13T09:00:00Z"),
        ("en", "2022-11-12T09:00:00Z"),
    ] {
        assert_eq!(item(&f, title).published.as_deref(), Some(want), "{title}");
    }
}

#[tokio::test]
async fn issue_40_titles_carry_no_control_characters() {
    let f = ok("control-characters.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("Bell and start"));
    let titles: Vec<_> = f.items.iter().filter_map(|i| i.title.clone()).collect();
    assert!(
        titles.contains(&"Backspace and more".to_owned()),
        "{titles:?}"
    );
    assert!(
        titles.contains(&"Tab here and newline".to_owned()),
        "{titles:?}"
    );
}

#[tokio::test]
async fn issue_40_an_atom_entry_document_is_a_feed_of_one_entry() {
    let f = ok("atom-entry-document.xml").await;
    assert_eq!(f.meta.format.as_deref(), Some("atom"));
    assert_eq!(f.item_count, 1);
    let it = &f.items[0];
    assert_eq!(it.title.as_deref(), Some("One entry on its own"));
    assert_eq!(
        it.url.as_deref(),
        Some("https://solo.example.com/posts/one-entry")
    );
    assert_eq!(
        it.guid.as_deref(),
        Some("tag:solo.example.com,2025:entry-1")
    );
    assert_eq!(it.authors, ["Solo Writer"]);
    assert_eq!(it.updated.as_deref(), Some("2025-04-05T06:07:08Z"));
}

#[tokio::test]
async fn issue_40_atom_names_in_an_rss_item_and_the_full_item_elements_are_read() {
    let f = ok("rss-atom-names.xml").await;
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://mixed.example.net/")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2024-02-03T04:05:06Z"));
    assert_eq!(f.meta.authors, ["Channel Person"]);
    assert_eq!(f.meta.language.as_deref(), Some("pt-BR"));
    assert_eq!(f.meta.categories, ["rivers", "boats"]);
    let it = item(&f, "Atom words in RSS");
    assert_eq!(it.url.as_deref(), Some("https://mixed.example.net/1"));
    assert_eq!(
        it.guid.as_deref(),
        Some("urn:uuid:5d0c7b0e-0000-4000-8000-000000000001")
    );
    assert_eq!(it.updated.as_deref(), Some("2024-02-02T01:00:00Z"));
    assert_eq!(it.summary.as_deref(), Some("An Atom-style summary."));
    assert_eq!(it.content.as_deref(), Some("The *whole* item."));
    assert_eq!(
        item(&f, "Body element").content.as_deref(),
        Some("Body **markup** here.")
    );
}

#[tokio::test]
async fn issue_40_a_cdf_channel_reads_as_a_feed() {
    let f = ok("cdf.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("A channel definition"));
    assert_eq!(f.meta.site_url.as_deref(), Some("https://cdf.example.org/"));
    assert_eq!(
        f.meta.description.as_deref(),
        Some("What the channel is about")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2004-04-07T04:05:43Z"));
    let it = item(&f, "First item");
    assert_eq!(it.url.as_deref(), Some("https://cdf.example.org/item/1"));
    assert_eq!(it.summary.as_deref(), Some("What the item is about"));
    assert_eq!(it.updated.as_deref(), Some("2004-04-06T01:02:03Z"));
}

#[tokio::test]
async fn issue_40_an_html_doctype_in_front_of_a_feed_root_is_still_a_feed() {
    let f = ok("doctype-before-rss.xml").await;
    assert_eq!(f.meta.title.as_deref(), Some("Behind an HTML doctype"));
    assert_eq!(f.item_count, 1);
}

#[tokio::test]
async fn issue_40_an_item_element_in_an_atom_feed_is_an_entry_and_published_beats_issued() {
    let f = ok("atom-item-element.xml").await;
    assert_eq!(f.item_count, 2);
    item(&f, "An item in an Atom feed");
    assert_eq!(
        item(&f, "Dates").published.as_deref(),
        Some("2010-01-01T00:00:00Z")
    );
}

#[tokio::test]
async fn issue_40_podcast_tags_are_typed_fields_of_feed_and_episode() {
    let f = ok("podcast.xml").await;
    let show = f.meta.podcast.as_deref().expect("the show's tags");
    assert_eq!(show.show_type.as_deref(), Some("serial"));
    assert_eq!(show.explicit, Some(false));
    assert_eq!(show.block, Some(false));
    assert_eq!(
        show.image.as_deref(),
        Some("https://tides.example.org/art/show.jpg")
    );
    assert_eq!(show.owner_name.as_deref(), Some("Harbour Media"));
    assert_eq!(
        show.guid.as_deref(),
        Some("c3a1b7e2-5d4f-5a8b-9c0d-1e2f3a4b5c6d")
    );
    assert_eq!(show.locked, Some(true));
    assert_eq!(
        show.locked_owner.as_deref(),
        Some("shows@tides.example.org")
    );
    assert_eq!(show.medium.as_deref(), Some("podcast"));
    assert_eq!(show.funding[0].url, "https://tides.example.org/support");
    assert_eq!(show.persons[0].name, "Ana Quay");
    assert_eq!(
        show.location.as_ref().unwrap().osm.as_deref(),
        Some("R2319")
    );

    let ep = item(&f, "Neap tide");
    assert_eq!(ep.duration_seconds, Some(3723));
    let p = ep.podcast.as_deref().expect("the episode's tags");
    assert_eq!(p.episode, Some(7.0));
    assert_eq!(p.episode_display.as_deref(), Some("Ep. 7"));
    assert_eq!(p.season, Some(2));
    assert_eq!(p.season_name.as_deref(), Some("The North Sea"));
    assert_eq!(p.episode_type.as_deref(), Some("full"));
    assert_eq!(p.explicit, Some(true));
    assert_eq!(p.block, Some(true));
    assert_eq!(
        p.image.as_deref(),
        Some("https://tides.example.org/art/ep7.jpg")
    );
    let t: Vec<_> = p.transcripts.iter().map(|t| t.url.as_str()).collect();
    assert_eq!(
        t,
        [
            "https://tides.example.org/ep7.vtt",
            "https://tides.example.org/ep7.json"
        ],
        "a link that is not http(s) is no transcript"
    );
    assert_eq!(p.transcripts[0].mime_type.as_deref(), Some("text/vtt"));
    assert_eq!(p.transcripts[0].language.as_deref(), Some("en"));
    assert_eq!(p.transcripts[0].rel.as_deref(), Some("captions"));
    assert_eq!(
        p.chapters.as_ref().unwrap().url,
        "https://tides.example.org/ep7-chapters.json"
    );
    assert_eq!(p.persons[0].name, "Ole Berg");
    assert_eq!(p.persons[0].role.as_deref(), Some("guest"));
    assert_eq!(p.soundbites.len(), 1, "a negative start is no soundbite");
    assert_eq!(p.soundbites[0].start_seconds, 73.5);
    assert_eq!(p.soundbites[0].duration_seconds, 42.25);
    assert_eq!(p.location.as_ref().unwrap().name, "Stavanger");
    assert_eq!(
        item(&f, "Trailer")
            .podcast
            .as_ref()
            .unwrap()
            .episode_type
            .as_deref(),
        Some("trailer")
    );
    assert!(item(&f, "No podcast tags").podcast.is_none());
    assert!(item(&f, "No podcast tags").transcript.is_none());
}

#[tokio::test]
async fn issue_40_an_itunes_link_to_the_artwork_is_the_feed_icon() {
    let f = ok("itunes-link-image.xml").await;
    assert_eq!(
        f.meta.icon.as_deref(),
        Some("https://ferry.example.net/art/cover.png")
    );
}

#[tokio::test]
async fn issue_40_an_atom_0_3_entry_created_is_its_published_date_after_issued() {
    let f = ok("atom03-created.xml").await;
    let it = item(&f, "Only created");
    assert_eq!(it.published.as_deref(), Some("2005-03-04T05:06:07Z"));
    assert_eq!(it.updated.as_deref(), Some("2005-03-05T00:00:00Z"));
    assert_eq!(
        item(&f, "Issued and created").published.as_deref(),
        Some("2005-02-01T00:00:00Z")
    );
}
