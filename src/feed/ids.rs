//! Stable item ids: identical across runs and machines for the same feed and item.

use sha2::{Digest, Sha256};

use super::RawItem;
use crate::date;
use crate::model::IdSource;

/// `id` = first 16 hex of sha256(feed_url + "\n" + key).
pub fn item_id(feed_url: &str, key: &str) -> String {
    let mut h = Sha256::new();
    h.update(feed_url.as_bytes());
    h.update(b"\n");
    h.update(key.as_bytes());
    let mut hex = hex::encode(h.finalize());
    hex.truncate(16);
    hex
}

/// 16 hex of sha256 of `body`.
pub(crate) fn short_hash(body: &str) -> String {
    let mut hex = hex::encode(Sha256::digest(body.as_bytes()));
    hex.truncate(16);
    hex
}

/// The id of `item` and what it came from: link, guid, title + "|" + published, then the
/// body's hash, then the position (`index`) as a last resort.
pub(crate) fn for_item(feed_url: &str, item: &RawItem, index: usize) -> (String, IdSource) {
    if let Some(link) = &item.url {
        return (item_id(feed_url, link), IdSource::Link);
    }
    if let Some(guid) = &item.guid {
        return (item_id(feed_url, guid), IdSource::Guid);
    }
    if let Some(title) = &item.title {
        let published = item
            .published
            .as_ref()
            .map(date::format)
            .unwrap_or_default();
        return (
            item_id(feed_url, &format!("{title}|{published}")),
            IdSource::TitlePublished,
        );
    }
    if let Some(body) = item.content.as_ref().or(item.summary.as_ref()) {
        return (
            item_id(feed_url, &format!("content:{}", short_hash(body.source()))),
            IdSource::Content,
        );
    }
    (
        item_id(feed_url, &format!("position:{index}")),
        IdSource::Position,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_match_the_known_answers() {
        // sha256("https://example.com/feed.xml\nhttps://example.com/post/1")
        assert_eq!(
            item_id("https://example.com/feed.xml", "https://example.com/post/1"),
            "74b90f09d2ab718a"
        );
        assert_eq!(item_id("f", "k"), item_id("f", "k"));
        assert_ne!(item_id("f", "k"), item_id("g", "k"));
    }

    #[test]
    fn the_key_is_link_then_guid_then_title_and_date() {
        let mut it = RawItem {
            title: Some("T".into()),
            guid: Some("g-1".into()),
            url: Some("https://e.com/1".into()),
            ..RawItem::default()
        };
        assert_eq!(for_item("f", &it, 0).1, IdSource::Link);
        it.url = None;
        assert_eq!(for_item("f", &it, 0), (item_id("f", "g-1"), IdSource::Guid));
        it.guid = None;
        it.published = date::parse("2026-06-01T10:00:00Z");
        assert_eq!(
            for_item("f", &it, 0),
            (
                item_id("f", "T|2026-06-01T10:00:00Z"),
                IdSource::TitlePublished
            )
        );
        it.title = None;
        assert_eq!(for_item("f", &it, 3).1, IdSource::Position);
    }
}
