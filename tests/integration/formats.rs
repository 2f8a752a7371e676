//! One fixture per format, fetched over loopback HTTP and checked field by field.

use crate::helpers::*;
use rss::internals::parse_since;
use rss::model::{FeedStatus, IdSource};
use rss::{ContentFormat, RenderOptions, Selection};

#[tokio::test]
async fn rss_2_0_with_every_content_namespace() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/rss20.xml")).await;
    assert_eq!(f.status, FeedStatus::Ok);
    assert_eq!(f.meta.format.as_deref(), Some("rss"));
    assert_eq!(f.meta.title.as_deref(), Some("Example Engineering Blog"));
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://blog.example.com/")
    );
    assert_eq!(
        f.meta.description.as_deref(),
        Some("Notes from the example team & friends")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2026-06-01T12:00:00Z"));
    assert_eq!(f.meta.language.as_deref(), Some("en-us"));
    assert_eq!(
        f.meta.icon.as_deref(),
        Some("https://blog.example.com/logo.png")
    );
    assert_eq!(f.item_count, 3);
    assert_eq!(f.final_url.as_deref(), Some(srv.url("/rss20.xml").as_str()));
    assert_eq!(f.attempts, 1);

    let a = item(&f, "Shipping the new parser & more");
    assert_eq!(
        a.url.as_deref(),
        Some("https://blog.example.com/2026/06/new-parser")
    );
    assert_eq!(
        a.guid.as_deref(),
        Some("https://blog.example.com/2026/06/new-parser")
    );
    assert_eq!(a.id_source, IdSource::Link);
    assert_eq!(
        a.id,
        rss::internals::item_id(
            &srv.url("/rss20.xml"),
            "https://blog.example.com/2026/06/new-parser"
        )
    );
    assert_eq!(a.authors, vec!["Ada Lovelace"]);
    assert_eq!(a.published.as_deref(), Some("2026-06-01T08:00:00Z"));
    assert_eq!(a.updated, None);
    assert_eq!(a.categories, vec!["parsing", "rust"]);
    assert_eq!(
        a.summary.as_deref(),
        Some("A short teaser about the parser.")
    );
    let content = a.content.as_deref().unwrap();
    assert!(content.contains("We rewrote the **parser**"), "{content}");
    // Relative links resolve against the URL the feed was read from, not the channel link.
    assert!(
        content.contains(&format!("[the docs]({})", srv.url("/docs/parser"))),
        "{content}"
    );
    assert!(
        content.contains(&format!("![Chart]({})", srv.url("/img/chart.png"))),
        "{content}"
    );
    assert!(!content.contains("alert"), "{content}");
    assert_eq!(a.content_format, "markdown");
    assert_eq!(
        a.content_tokens_est,
        rss::internals::estimate_tokens(content)
    );
    assert_eq!(a.content_hash.as_ref().map(String::len), Some(16));
    assert_eq!(a.enclosures.len(), 1);
    assert_eq!(a.enclosures[0].url, "https://cdn.example.com/talk.mp3");
    assert_eq!(a.enclosures[0].mime_type.as_deref(), Some("audio/mpeg"));
    assert_eq!(a.enclosures[0].length, Some(1_234_567));

    let b = item(&f, "Rate limits, politely");
    assert_eq!(b.authors, vec!["Grace Hopper"]);
    assert_eq!(b.guid.as_deref(), Some("post-41"));
    assert_eq!(b.published.as_deref(), Some("2026-05-15T13:30:00Z"));
    assert_eq!(
        b.content.as_deref(),
        Some("How we back off when a host says `429`.")
    );
    assert_eq!(b.enclosures[0].url, "https://cdn.example.com/video.mp4");
    assert_eq!(b.enclosures[0].length, Some(9999));

    let c = item(&f, "An item with no date");
    assert_eq!(c.url, None);
    assert_eq!(c.id_source, IdSource::Guid);
    assert_eq!(c.published, None);
    // Newest first, undated last.
    let order: Vec<_> = f.items.iter().map(|i| i.title.clone().unwrap()).collect();
    assert_eq!(order[2], "An item with no date");
}

#[tokio::test]
async fn rss_0_90_rdf() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/rss090.xml")).await;
    assert_eq!(f.meta.format.as_deref(), Some("rdf"));
    assert_eq!(f.meta.title.as_deref(), Some("Mozilla Dot Org"));
    assert_eq!(
        f.meta.icon.as_deref(),
        Some("http://www.mozilla.org/images/moz.gif")
    );
    assert_eq!(f.items.len(), 2);
    assert_eq!(
        item(&f, "Bugzilla Reorganized").url.as_deref(),
        Some("http://www.mozilla.org/bugs/")
    );
    assert_eq!(item(&f, "Bugzilla Reorganized").guid, None);
}

#[tokio::test]
async fn rss_0_91_with_html_entities_from_its_dtd() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/rss091.xml")).await;
    assert_eq!(f.meta.title.as_deref(), Some("WriteTheWeb"));
    assert_eq!(f.meta.language.as_deref(), Some("en-us"));
    let a = &f.items[0];
    assert_eq!(
        a.title.as_deref(),
        Some("Giving the world a pluggable Gnutella\u{a0}\u{2014} café")
    );
    assert_eq!(
        a.url.as_deref(),
        Some("http://writetheweb.com/read.php?item=24")
    );
    assert_eq!(a.guid, None);
}

#[tokio::test]
async fn rss_0_92_in_latin_1_with_an_item_that_has_only_a_description() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/rss092.xml")).await;
    assert_eq!(f.meta.title.as_deref(), Some("Café Radio"));
    let a = item(&f, "Épisode 1");
    assert_eq!(a.summary.as_deref(), Some("Première émission"));
    assert_eq!(a.categories, vec!["Music"]);
    assert_eq!(a.enclosures[0].length, Some(12_216_320));
    let b = f.items.iter().find(|i| i.title.is_none()).unwrap();
    assert_eq!(
        b.summary.as_deref(),
        Some("An item with only a description, as 0.92 allows.")
    );
    assert_eq!(b.id_source, IdSource::Content);
}

#[tokio::test]
async fn rss_0_93_0_94_odd_and_missing_versions_and_the_userland_namespace() {
    let srv = fixture_server().await;
    let cases = [
        (
            "/rss093.xml",
            "Version 0.93",
            "Item 0.93",
            Some("http://v093.example.org/1"),
        ),
        (
            "/rss094.xml",
            "Version 0.94",
            "Item 0.94",
            Some("http://v094.example.org/1"),
        ),
        (
            "/rss-odd-version.xml",
            "Odd Version",
            "Item A",
            Some("http://odd.example.org/a"),
        ),
        (
            "/rss-no-version.xml",
            "No Version",
            "Item B",
            Some("http://nov.example.org/b"),
        ),
        (
            "/rss-userland.xml",
            "Scripting News",
            "Userland namespace item",
            Some("http://www.scripting.com/2002/09/30.html#item1"),
        ),
    ];
    for (path, title, item_title, url) in cases {
        let f = fetch_one(&srv.url(path)).await;
        assert_eq!(f.status, FeedStatus::Ok, "{path}");
        assert_eq!(f.meta.title.as_deref(), Some(title), "{path}");
        assert_eq!(item(&f, item_title).url.as_deref(), url, "{path}");
    }
    let f = fetch_one(&srv.url("/rss093.xml")).await;
    assert_eq!(
        f.items[0].published.as_deref(),
        Some("2002-01-05T16:00:00Z")
    );
    assert_eq!(
        f.items[0].enclosures[0].mime_type.as_deref(),
        Some("audio/ogg")
    );
    let f = fetch_one(&srv.url("/rss094.xml")).await;
    assert_eq!(
        f.items[0].guid.as_deref(),
        Some("http://v094.example.org/1#guid")
    );
    assert_eq!(f.items[0].categories, vec!["cat"]);
}

#[tokio::test]
async fn rss_1_0_with_dublin_core_and_content() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/rss10.xml")).await;
    assert_eq!(f.meta.format.as_deref(), Some("rdf"));
    assert_eq!(f.meta.language.as_deref(), Some("en"));
    assert_eq!(f.meta.updated.as_deref(), Some("2026-04-01T09:00:00Z"));
    let a = item(&f, "XML: A Disruptive Technology");
    assert_eq!(
        a.guid.as_deref(),
        Some("http://c.moreover.com/click/here.pl?r123")
    );
    assert_eq!(a.authors, vec!["Simon St.Laurent"]);
    assert_eq!(a.categories, vec!["XML"]);
    assert_eq!(a.published.as_deref(), Some("2026-03-30T18:45:00Z"));
    assert_eq!(a.updated.as_deref(), Some("2026-03-31T08:00:00Z"));
    assert_eq!(a.content.as_deref(), Some("Full **body**."));
    let b = item(&f, "RDF item without a link");
    assert_eq!(b.url, None);
    assert_eq!(b.guid.as_deref(), Some("urn:example:no-link"));
}

#[tokio::test]
async fn atom_1_0_with_every_text_type_and_link_relation() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/atom10.xml")).await;
    assert_eq!(f.meta.format.as_deref(), Some("atom"));
    assert_eq!(f.meta.title.as_deref(), Some("Atom Example"));
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://atom.example.org/blog/")
    );
    assert_eq!(
        f.meta.description.as_deref(),
        Some("All the Atom constructs")
    );
    assert_eq!(f.meta.language.as_deref(), Some("en-GB"));
    assert_eq!(
        f.meta.icon.as_deref(),
        Some("https://atom.example.org/favicon.ico")
    );
    let a = item(&f, "XHTML title");
    assert_eq!(
        a.url.as_deref(),
        Some("https://atom.example.org/blog/2026/06/first")
    );
    assert_eq!(a.guid.as_deref(), Some("tag:atom.example.org,2026:1"));
    assert_eq!(a.authors, vec!["Jane Doe"]);
    assert_eq!(a.published.as_deref(), Some("2026-06-02T09:00:00Z"));
    assert_eq!(a.updated.as_deref(), Some("2026-06-02T12:00:00Z"));
    assert_eq!(a.categories, vec!["atom", "feeds"]);
    assert_eq!(a.summary.as_deref(), Some("Plain <text> summary"));
    assert_eq!(
        a.content.as_deref(),
        Some("Hello [relative](https://atom.example.org/content/rel/link) world.")
    );
    assert_eq!(
        a.enclosures[0].url,
        "https://atom.example.org/blog/media/first.mp3"
    );
    assert_eq!(a.enclosures[0].length, Some(1337));
    let b = item(&f, "HTML <title> bold");
    assert_eq!(
        b.url.as_deref(),
        Some("https://atom.example.org/blog/2026/06/second")
    );
    assert_eq!(b.content.as_deref(), Some("Escaped *HTML* body"));
    let c = item(&f, "Base64 content");
    assert_eq!(c.content.as_deref(), Some("Hello from base64"));
}

#[tokio::test]
async fn atom_0_3() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/atom03.xml")).await;
    assert_eq!(f.meta.format.as_deref(), Some("atom"));
    assert_eq!(f.meta.title.as_deref(), Some("dive into mark"));
    assert_eq!(
        f.meta.description.as_deref(),
        Some("A lot of effort went into making this effortless")
    );
    assert_eq!(f.meta.updated.as_deref(), Some("2003-12-13T18:30:02Z"));
    assert_eq!(f.items.len(), 2);
    let a = item(&f, "Atom 0.3 snapshot");
    assert_eq!(a.published.as_deref(), Some("2003-12-13T12:29:29Z"));
    assert_eq!(a.updated.as_deref(), Some("2003-12-13T18:30:02Z"));
    assert_eq!(a.authors, vec!["Mark Pilgrim"]);
    assert_eq!(a.summary.as_deref(), Some("Summary in 0.3"));
    assert_eq!(a.content.as_deref(), Some("Escaped **content**"));
    assert_eq!(
        item(&f, "Base64 mode").content.as_deref(),
        Some("From **base64**")
    );
}

#[tokio::test]
async fn json_feed_1_0_and_1_1() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/jsonfeed10.json")).await;
    assert_eq!(f.meta.format.as_deref(), Some("json"));
    assert_eq!(f.meta.title.as_deref(), Some("JSON Feed 1.0"));
    assert_eq!(
        f.meta.site_url.as_deref(),
        Some("https://json.example.org/")
    );
    assert_eq!(
        f.meta.icon.as_deref(),
        Some("https://json.example.org/icon.png")
    );
    let a = item(&f, "First");
    assert_eq!(a.guid.as_deref(), Some("1"));
    assert_eq!(a.authors, vec!["Item Author"]);
    assert_eq!(a.published.as_deref(), Some("2026-06-01T17:00:00Z"));
    assert_eq!(a.updated.as_deref(), Some("2026-06-01T18:00:00Z"));
    assert_eq!(a.categories, vec!["json", "feeds"]);
    // Relative links resolve against the URL the feed was read from.
    assert_eq!(
        a.content,
        Some(format!("Hello **JSON** [x]({})", srv.url("/x")))
    );
    assert_eq!(a.summary.as_deref(), Some("First summary"));
    let b = f
        .items
        .iter()
        .find(|i| i.guid.as_deref() == Some("2"))
        .unwrap();
    assert_eq!(b.published, None, "a garbage date is null, not a failure");
    assert_eq!(b.content.as_deref(), Some("Text only item"));
    assert_eq!(b.authors, vec!["Feed Author"]);

    let f = fetch_one(&srv.url("/jsonfeed11.json")).await;
    assert_eq!(f.meta.language.as_deref(), Some("de-DE"));
    let a = &f.items[0];
    assert_eq!(a.authors, vec!["Host A", "Host B"]);
    assert_eq!(a.url.as_deref(), Some("https://json11.example.org/a"));
    assert_eq!(a.enclosures[0].url, "https://json11.example.org/a.mp3");
    assert_eq!(a.enclosures[0].length, Some(4242));
}

#[tokio::test]
async fn relative_links_resolve_against_the_request_url_and_xml_base() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/relative.xml")).await;
    let a = item(&f, "Relative link");
    // The channel <link> is the site's address, not a base for items.
    assert_eq!(a.url.as_deref(), Some(srv.url("/posts/one.html").as_str()));
    assert_eq!(a.enclosures[0].url, srv.url("/media/one.mp3"));
    let content = a.content.as_deref().unwrap();
    assert!(
        content.contains(&format!("[about]({})", srv.url("/about"))),
        "{content}"
    );
    assert!(
        content.contains(&format!("![]({})", srv.url("/pic.png"))),
        "{content}"
    );
    assert_eq!(
        item(&f, "With xml:base").url.as_deref(),
        Some("https://cdn.example.net/base/two.html")
    );
}

#[tokio::test]
async fn odd_and_garbage_dates_never_fail_the_feed() {
    let srv = fixture_server().await;
    let f = fetch_one(&srv.url("/dates.xml")).await;
    assert_eq!(f.status, FeedStatus::Ok);
    let date = |t: &str| item(&f, t).published.clone();
    assert_eq!(date("PDT zone").as_deref(), Some("2003-06-10T11:00:00Z"));
    assert_eq!(
        date("Numeric zone without day name").as_deref(),
        Some("2003-06-09T22:30:00Z")
    );
    assert_eq!(
        date("Military Z and two-digit year").as_deref(),
        Some("2003-06-10T04:00:00Z")
    );
    assert_eq!(
        date("ISO without zone").as_deref(),
        Some("2003-06-10T04:00:00Z")
    );
    assert_eq!(
        date("GMT offset form").as_deref(),
        Some("2003-06-10T02:00:00Z")
    );
    assert_eq!(date("Garbage date"), None);
    assert_eq!(
        f.items.last().unwrap().title.as_deref(),
        Some("Garbage date")
    );
}

#[tokio::test]
async fn a_charset_given_only_in_the_http_header_is_honoured() {
    let body = b"<rss><channel><title>Caf\xe9</title><item><title>\xc0 la carte</title></item></channel></rss>".to_vec();
    let srv = TestServer::with_routes(vec![(
        "/f",
        Reply::ok(body, "text/xml; charset=iso-8859-1"),
    )])
    .await;
    let f = fetch_one(&srv.url("/f")).await;
    assert_eq!(f.meta.title.as_deref(), Some("Café"));
    assert_eq!(f.items[0].title.as_deref(), Some("À la carte"));
}

#[tokio::test]
async fn issue_40_content_of_a_media_type_that_is_not_base64_is_read_as_its_text() {
    let body = r#"<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title>
      <entry><title>ok</title><id>1</id><content type="application/octet-stream">!!!not base64!!!</content><updated>2026-01-01T00:00:00Z</updated></entry>
    </feed>"#;
    let srv = TestServer::with_routes(vec![("/f", Reply::xml(body))]).await;
    let ctx = context(config(None));
    let out = fetch(&ctx, &[srv.url("/f")], &no_cache()).await;
    let f = &out.feeds[0];
    assert_eq!(f.status, FeedStatus::Ok);
    assert_eq!(f.items[0].title.as_deref(), Some("ok"));
    assert_eq!(f.items[0].updated.as_deref(), Some("2026-01-01T00:00:00Z"));
    let content = f.items[0].content.as_deref().unwrap_or_default();
    assert!(content.contains("not base64"), "{content:?}");
    assert!(
        !out.warnings.iter().any(|w| w.code == "ELEMENT_SKIPPED"),
        "{:?}",
        out.warnings
    );
}

#[tokio::test]
async fn a_ten_thousand_item_feed_parses_whole_and_limits_newest_first() {
    let mut body = String::from(
        "<rss version=\"2.0\"><channel><title>Big</title><link>https://big.example/</link>",
    );
    for i in 0..10_000 {
        body.push_str(&format!(
            "<item><title>Item {i}</title><link>https://big.example/{i}</link><pubDate>{}</pubDate><description>&lt;p&gt;Body {i}&lt;/p&gt;</description></item>",
            httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + i * 60))
        ));
    }
    body.push_str("</channel></rss>");
    let srv = TestServer::with_routes(vec![("/big", Reply::xml(body))]).await;
    let f = fetch_one(&srv.url("/big")).await;
    assert_eq!(f.item_count, 10_000);
    assert_eq!(f.items[0].title.as_deref(), Some("Item 9999"));
    assert_eq!(f.items[9_999].title.as_deref(), Some("Item 0"));
    let ids: std::collections::HashSet<_> = f.items.iter().map(|i| i.id.clone()).collect();
    assert_eq!(ids.len(), 10_000);

    let ctx = context(config(None));
    let opts = with_selection(Selection {
        limit: Some(5),
        ..Selection::default()
    });
    let out = fetch(&ctx, &[srv.url("/big")], &opts).await;
    let titles: Vec<_> = out.feeds[0]
        .items
        .iter()
        .map(|i| i.title.clone().unwrap())
        .collect();
    assert_eq!(
        titles,
        vec![
            "Item 9999",
            "Item 9998",
            "Item 9997",
            "Item 9996",
            "Item 9995"
        ]
    );
    assert_eq!(out.truncation.items_omitted_by_limit, 9_995);
}

#[tokio::test]
async fn since_and_content_options_apply() {
    let srv = fixture_server().await;
    let ctx = context(config(None));
    let opts = rss::ops::FetchOptions {
        selection: Selection {
            since: Some(parse_since("2026-05-20", chrono::Utc::now()).unwrap()),
            ..Selection::default()
        },
        render: RenderOptions {
            format: ContentFormat::Text,
            max_content_chars: Some(10),
        },
        ..no_cache()
    };
    let out = fetch(&ctx, &[srv.url("/rss20.xml")], &opts).await;
    let f = &out.feeds[0];
    // The May item is older than the cutoff; the undated item stays.
    assert_eq!(f.items.len(), 2);
    assert_eq!(out.truncation.items_omitted_by_since, 1);
    let a = &f.items[0];
    assert_eq!(a.content_format, "text");
    assert_eq!(a.content.as_deref(), Some("We rewrote"));
    assert!(a.content_truncated);
    assert_eq!(out.truncation.items_content_truncated, 2);

    let none = with_render(RenderOptions {
        format: ContentFormat::None,
        max_content_chars: None,
    });
    let out = fetch(&ctx, &[srv.url("/rss20.xml")], &none).await;
    assert!(
        out.feeds[0]
            .items
            .iter()
            .all(|i| i.content.is_none() && i.content_tokens_est == 0)
    );
    assert_eq!(out.total_content_tokens_est, 0);

    let html = with_render(RenderOptions {
        format: ContentFormat::Html,
        max_content_chars: None,
    });
    let out = fetch(&ctx, &[srv.url("/rss20.xml")], &html).await;
    let c = out.feeds[0].items[0].content.clone().unwrap();
    assert!(
        c.contains(&format!(
            "<a href=\"{}\" rel=\"noopener noreferrer nofollow\">",
            srv.url("/docs/parser")
        )),
        "{c}"
    );
    assert!(!c.contains("script") && !c.contains("alert"), "{c}");
}

#[tokio::test]
async fn every_item_undated_gives_a_warning() {
    let srv = fixture_server().await;
    let ctx = context(config(None));
    let out = fetch(&ctx, &[srv.url("/rss090.xml")], &no_cache()).await;
    assert!(out.warnings.iter().any(|w| w.code == "UNDATED_ITEMS"));
    let out = fetch(&ctx, &[srv.url("/rss20.xml")], &no_cache()).await;
    assert!(!out.warnings.iter().any(|w| w.code == "UNDATED_ITEMS"));
}
