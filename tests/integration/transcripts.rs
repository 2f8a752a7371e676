//! Podcast transcripts read as text: each format, through the gate and the cache, from a
//! loopback origin the test starts.

use rss::model::FeedStatus;
use rss::ops::{CacheMode, FetchOptions};

use crate::helpers::*;

const VTT: &str = "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n<v Ana Quay>Welcome aboard.</v>\n\n00:00:02.000 --> 00:00:04.000\n<v Ole Berg>Thanks, Ana.\n";
const SRT: &str = "1\n00:00:00,000 --> 00:00:02,000\nFirst line\n\n2\n00:00:02,000 --> 00:00:03,000\n<i>Second</i> line\n";
const JSON: &str = r#"{"version":"1.0.0","segments":[{"speaker":"Ana Quay","startTime":0,"endTime":1,"body":"From the JSON."},{"speaker":"Ole Berg","startTime":1,"endTime":2,"body":"Indeed."}]}"#;
const HTML: &str =
    "<html><body><p>Ana Quay: An HTML transcript.</p><script>bad()</script></body></html>";

fn feed(base: &str) -> String {
    let ep = |n: u32, path: &str, ty: &str| {
        format!(
            "<item><title>ep{n}</title><link>{base}/ep/{n}</link><podcast:transcript url=\"{base}{path}\" type=\"{ty}\"/></item>"
        )
    };
    // The JSON transcript is chosen over the captions beside it.
    let both = format!(
        "<item><title>ep5</title><link>{base}/ep/5</link><podcast:transcript url=\"{base}/t.srt\" type=\"application/srt\"/><podcast:transcript url=\"{base}/t.json\" type=\"application/json\"/></item>"
    );
    let items = [
        ep(1, "/t.vtt", "text/vtt"),
        ep(2, "/t.srt", "application/x-subrip"),
        ep(3, "/t.json", "application/json"),
        ep(4, "/t.html", "text/html"),
        both,
    ]
    .concat();
    format!(
        "<rss version=\"2.0\" xmlns:podcast=\"https://podcastindex.org/namespace/1.0\"><channel><title>Casts</title>{items}<item><title>no transcript</title><link>{base}/ep/9</link></item></channel></rss>"
    )
}

async fn origin() -> TestServer {
    let base = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let b = base.clone();
    let srv = TestServer::start(move |req| match req.path.as_str() {
        "/feed.xml" => Reply::xml(feed(&b.lock().unwrap())),
        "/t.vtt" => Reply::ok(VTT, "text/vtt"),
        "/t.srt" => Reply::ok(SRT, "application/x-subrip"),
        "/t.json" => Reply::ok(JSON, "application/json"),
        "/t.html" => Reply::ok(HTML, "text/html"),
        _ => Reply::status(404),
    })
    .await;
    *base.lock().unwrap() = srv.url("").trim_end_matches('/').to_owned();
    srv
}

fn with_transcripts(cache: CacheMode) -> FetchOptions {
    rss::ops::FetchRequest {
        transcripts: true,
        no_cache: cache == CacheMode::Off,
        max_age: match cache {
            CacheMode::MaxAge(d) => Some(d),
            _ => None,
        },
        ..rss::ops::FetchRequest::default()
    }
    .options()
    .expect("valid options")
}

#[tokio::test]
async fn issue_40_each_transcript_format_is_read_as_text_with_its_speakers() {
    let srv = origin().await;
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(config(Some(dir.path())));
    let out = fetch(
        &ctx,
        &[srv.url("/feed.xml")],
        &with_transcripts(CacheMode::Fresh),
    )
    .await;
    let f = &out.feeds[0];
    assert_eq!(f.status, FeedStatus::Ok);
    let text = |t: &str| {
        let tr = item(f, t).transcript.as_deref().expect("a transcript");
        assert!(tr.error.is_none(), "{t}: {:?}", tr.error);
        (tr.format.clone().unwrap(), tr.text.clone().unwrap())
    };
    assert_eq!(
        text("ep1"),
        (
            "vtt".into(),
            "Ana Quay: Welcome aboard.\nOle Berg: Thanks, Ana.".into()
        )
    );
    assert_eq!(
        text("ep2"),
        ("srt".into(), "First line\nSecond line".into())
    );
    assert_eq!(
        text("ep3"),
        (
            "json".into(),
            "Ana Quay: From the JSON.\nOle Berg: Indeed.".into()
        )
    );
    let (format, html) = text("ep4");
    assert_eq!(format, "html");
    assert!(
        html.contains("Ana Quay: An HTML transcript.") && !html.contains("bad()"),
        "{html}"
    );
    assert_eq!(text("ep5").0, "json");
    assert!(item(f, "no transcript").transcript.is_none());
    // Each transcript was asked for once; a second run is served from the cache.
    assert_eq!(
        srv.hits_for("/t.json").len(),
        1,
        "one read serves both episodes"
    );
    let before = srv.count();
    let again = fetch(
        &ctx,
        &[srv.url("/feed.xml")],
        &with_transcripts(CacheMode::MaxAge(std::time::Duration::from_secs(3600))),
    )
    .await;
    assert_eq!(
        srv.count(),
        before,
        "every transcript and the feed from the cache"
    );
    assert_eq!(
        item(&again.feeds[0], "ep1")
            .transcript
            .as_ref()
            .unwrap()
            .text
            .as_deref(),
        Some("Ana Quay: Welcome aboard.\nOle Berg: Thanks, Ana.")
    );
    // Without --transcripts, none is read.
    let plain = fetch(&ctx, &[srv.url("/feed.xml")], &no_cache()).await;
    assert!(plain.feeds[0].items.iter().all(|i| i.transcript.is_none()));
}

#[tokio::test]
async fn issue_40_a_transcript_that_fails_is_an_error_in_the_item_not_of_the_feed() {
    let srv = TestServer::start(|req| match req.path.as_str() {
        "/audio.vtt" => Reply::ok(vec![0u8; 64], "audio/mpeg"),
        _ => Reply::status(404),
    })
    .await;
    let body = format!(
        "<rss xmlns:podcast=\"https://podcastindex.org/namespace/1.0\"><channel><title>x</title><item><title>gone</title><link>https://e.example/1</link><podcast:transcript url=\"{}\" type=\"text/vtt\"/></item><item><title>audio</title><link>https://e.example/2</link><podcast:transcript url=\"{}\" type=\"text/vtt\"/></item></channel></rss>",
        srv.url("/missing.vtt"),
        srv.url("/audio.vtt")
    );
    let feed_srv = TestServer::with_routes(vec![("/f.xml", Reply::xml(body))]).await;
    let ctx = context(config(None));
    let out = fetch(
        &ctx,
        &[feed_srv.url("/f.xml")],
        &with_transcripts(CacheMode::Off),
    )
    .await;
    let f = &out.feeds[0];
    assert_eq!(f.status, FeedStatus::Ok);
    let err = |t: &str| {
        item(f, t)
            .transcript
            .as_ref()
            .unwrap()
            .error
            .as_ref()
            .expect("an error")
            .code
            .clone()
    };
    assert_eq!(err("gone"), "PAGE_FETCH_FAILED");
    assert_eq!(err("audio"), "UNSUPPORTED_CONTENT");
}

#[tokio::test]
async fn issue_40_mcp_reads_transcripts_in_fetch_feed_and_get_item() {
    let srv = origin().await;
    let dir = tempfile::tempdir().unwrap();
    let s = crate::mcp::spawn_in(dir.path(), &["--allow-private-networks"], &[]).await;
    let r = crate::mcp::call(
        &s,
        "fetch_feed",
        serde_json::json!({"url": srv.url("/feed.xml"), "transcripts": true}),
    )
    .await;
    let v = r.structured_content.clone().expect("structured content");
    let items = v["feeds"][0]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ep1 = items
        .iter()
        .find(|i| i["title"] == "ep1")
        .unwrap_or_else(|| panic!("{v}"));
    assert_eq!(
        ep1["transcript"]["text"], "Ana Quay: Welcome aboard.\nOle Berg: Thanks, Ana.",
        "{ep1}"
    );
    let id = items.iter().find(|i| i["title"] == "ep3").unwrap()["id"].clone();
    let r = crate::mcp::call(
        &s,
        "get_item",
        serde_json::json!({"feed_url": srv.url("/feed.xml"), "id": id, "transcript": true}),
    )
    .await;
    let v = r.structured_content.clone().expect("structured content");
    assert_eq!(
        v["item"]["transcript"]["text"], "Ana Quay: From the JSON.\nOle Berg: Indeed.",
        "{v}"
    );
    assert_eq!(
        v["item"]["podcast"]["transcripts"][0]["type"],
        "application/json"
    );
}
