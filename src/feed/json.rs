//! JSON Feed 1.0 and 1.1, read field by field so one odd value never fails the feed.

use crate::model::WarningCode;
use serde_json::{Map, Value};
use url::Url;

use super::{Body, MAX_ITEMS, RawFeed, RawItem, items_capped_message};
use crate::date;
use crate::error::{Error, Result};
use crate::model::Enclosure;
use crate::text::{collapse_ws, non_empty};

fn str_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    match obj.get(key)? {
        Value::String(s) => non_empty(s),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn url_field(obj: &Map<String, Value>, key: &str, base: Option<&Url>) -> Option<String> {
    crate::urls::resolve(&str_field(obj, key)?, base)
}

fn author_names(obj: &Map<String, Value>) -> Vec<String> {
    let mut names = Vec::new();
    let mut add = |v: &Value| {
        let name = match v {
            Value::Object(a) => str_field(a, "name"),
            Value::String(s) => non_empty(s),
            _ => None,
        };
        if let Some(n) = name.map(|n| collapse_ws(&n))
            && !names.contains(&n)
        {
            names.push(n);
        }
    };
    if let Some(Value::Array(list)) = obj.get("authors") {
        list.iter().for_each(&mut add);
    }
    if let Some(a) = obj.get("author") {
        add(a);
    }
    names
}

/// Parses a JSON Feed document.
pub(super) fn parse(text: &str, base: Option<&Url>) -> Result<RawFeed> {
    let value: Value = serde_json::from_str(text).map_err(|e| Error::Parse {
        message: format!("the body is not valid JSON: {e}"),
        source: Some(Box::new(e)),
    })?;
    let Value::Object(root) = value else {
        return Err(Error::parse(
            "the JSON body is not an object, so it is not a JSON Feed",
        ));
    };
    let version = str_field(&root, "version").unwrap_or_default();
    let items_value = root.get("items");
    if !version.contains("jsonfeed.org") && !matches!(items_value, Some(Value::Array(_))) {
        return Err(Error::parse(
            "the JSON has neither a jsonfeed.org version nor an items array, so it is not a JSON Feed",
        ));
    }
    let mut feed = RawFeed {
        format: "json",
        title: super::constructs::without_controls(
            str_field(&root, "title").map(|t| collapse_ws(&t)),
        ),
        site_url: url_field(&root, "home_page_url", base),
        description: str_field(&root, "description").map(|t| collapse_ws(&t)),
        language: str_field(&root, "language"),
        icon: url_field(&root, "icon", base).or_else(|| url_field(&root, "favicon", base)),
        ..RawFeed::default()
    };
    let feed_authors = author_names(&root);
    feed.authors = feed_authors.clone();
    let mut odd = 0usize;
    let mut empty = 0usize;
    let mut beyond_cap = 0usize;
    if let Some(Value::Array(items)) = items_value {
        for v in items {
            match v {
                Value::Object(_) if feed.items.len() >= MAX_ITEMS => beyond_cap += 1,
                // Only an item with nothing in it is not an item.
                Value::Object(obj) if !obj.values().any(carries_data) => empty += 1,
                Value::Object(obj) => feed.items.push(item(obj, base, &feed_authors)),
                _ => odd += 1,
            }
        }
    } else if items_value.is_some() {
        feed.warnings.push((
            WarningCode::ElementSkipped,
            "\"items\" is not an array and was ignored".into(),
        ));
    }
    if beyond_cap > 0 {
        feed.warnings
            .push((WarningCode::ItemsCapped, items_capped_message(beyond_cap)));
    }
    if empty > 0 {
        feed.warnings.push((
            WarningCode::ElementSkipped,
            format!("{empty} empty item(s) (no field with a value) were left out"),
        ));
    }
    if odd > 0 {
        feed.warnings.push((
            WarningCode::ElementSkipped,
            format!("{odd} entries of \"items\" are not objects and were skipped"),
        ));
    }
    Ok(feed)
}

fn item(obj: &Map<String, Value>, base: Option<&Url>, feed_authors: &[String]) -> RawItem {
    let mut authors = author_names(obj);
    if authors.is_empty() {
        authors = feed_authors.to_vec();
    }
    let content = str_field(obj, "content_html")
        .map(Body::Html)
        .or_else(|| str_field(obj, "content_text").map(Body::Text));
    let mut categories = Vec::new();
    if let Some(Value::Array(tags)) = obj.get("tags") {
        for t in tags {
            if let Some(s) = t.as_str().and_then(non_empty)
                && !categories.contains(&s)
            {
                categories.push(s);
            }
        }
    }
    let mut enclosures: Vec<Enclosure> = Vec::new();
    if let Some(Value::Array(atts)) = obj.get("attachments") {
        for a in atts.iter().filter_map(Value::as_object) {
            if let Some(url) = url_field(a, "url", base)
                && !enclosures.iter().any(|e| e.url == url)
            {
                enclosures.push(Enclosure {
                    url,
                    mime_type: str_field(a, "mime_type"),
                    length: a
                        .get("size_in_bytes")
                        .and_then(Value::as_u64)
                        .filter(|n| *n > 0),
                });
            }
        }
    }
    RawItem {
        title: super::constructs::without_controls(
            str_field(obj, "title").map(|t| collapse_ws(&t)),
        ),
        url: url_field(obj, "url", base).or_else(|| url_field(obj, "external_url", base)),
        guid: str_field(obj, "id"),
        authors,
        published: str_field(obj, "date_published").and_then(|d| date::parse(&d)),
        updated: str_field(obj, "date_modified").and_then(|d| date::parse(&d)),
        summary: str_field(obj, "summary").map(Body::Text),
        content,
        categories,
        enclosures,
        comments: None,
        source: None,
        duration_seconds: None,
        podcast: None,
        base: base.cloned(),
    }
}

/// Whether a JSON value holds anything: not null, not an empty string, array or object.
fn carries_data(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.trim().is_empty(),
        Value::Array(a) => a.iter().any(carries_data),
        Value::Object(o) => o.values().any(carries_data),
        Value::Bool(_) | Value::Number(_) => true,
    }
}
