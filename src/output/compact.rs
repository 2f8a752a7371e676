//! The compact view of a result, as the MCP server sends it to a model: the CLI's contract
//! (every field present, `null` when empty) less what tells a model nothing.
//!
//! Left out: `null`, `false`, `0`, `[]` and `{}` values (after their own contents are
//! compacted); an item's `id_source` and `content_hash` (duplicates are reported as such);
//! a `guid` equal to the item's `url`; a `summary` that only repeats the start of the
//! item's `content` (a feed's one body is both); a `content_format` beside no `content`. The output schemas the server lists say the same
//! ([`optional_fields`]): only plain strings that are always there stay required.

use serde::Serialize;
use serde_json::{Map, Value};

/// `value` serialized and compacted ([`compact`]).
pub fn compact_value<T: Serialize>(value: &T) -> Value {
    let mut v = serde_json::to_value(value).unwrap_or(Value::Null);
    compact(&mut v);
    v
}

/// Leaves out of `v`, in place, every value that tells a model nothing (see the module
/// doc). Arrays keep their elements (a position can matter); objects lose such keys.
pub fn compact(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for child in map.values_mut() {
                compact(child);
            }
            map.retain(|_, child| !empty(child));
            drop_repeats(map);
        }
        Value::Array(items) => items.iter_mut().for_each(compact),
        _ => {}
    }
}

fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_u64() == Some(0) || n.as_i64() == Some(0),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(_) => false,
    }
}

/// Fields that only repeat another one, or describe nothing.
fn drop_repeats(map: &mut Map<String, Value>) {
    if map.contains_key("id") {
        map.shift_remove("id_source");
    }
    map.shift_remove("content_hash");
    if let (Some(guid), Some(url)) = (map.get("guid"), map.get("url"))
        && guid == url
    {
        map.shift_remove("guid");
    }
    if let (Some(Value::String(summary)), Some(Value::String(content))) =
        (map.get("summary"), map.get("content"))
        && repeats_start(summary, content)
    {
        map.shift_remove("summary");
    }
    if !map.contains_key("content") {
        map.shift_remove("content_format");
    }
}

/// Whether `summary`'s words (its first 40) are the first words of `content`: markup,
/// punctuation and case aside.
fn repeats_start(summary: &str, content: &str) -> bool {
    let words = |s: &str| {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .take(40)
            .collect::<Vec<_>>()
    };
    let (s, c) = (words(summary), words(content));
    !s.is_empty() && c.len() >= s.len() && c[..s.len()] == s[..]
}

/// Makes a schema describe the compact view: every object's `required` keeps only the
/// properties that are plain strings (never compacted away). Unless `docs`, descriptions
/// go too (the documented schema is one `get_schema` call away).
pub fn optional_fields(v: &mut Value, docs: bool) {
    match v {
        Value::Object(map) => {
            if !docs {
                map.shift_remove("description");
            }
            if let Some(Value::Object(props)) = map.get("properties") {
                let keep: Vec<Value> = props
                    .iter()
                    .filter(|(k, p)| {
                        p.get("type") == Some(&Value::from("string")) && *k != "content_format"
                    })
                    .map(|(k, _)| Value::String(k.clone()))
                    .collect();
                if keep.is_empty() {
                    map.shift_remove("required");
                } else {
                    map.insert("required".to_owned(), Value::Array(keep));
                }
            }
            for (k, child) in map.iter_mut() {
                // A property named `description` is data, not documentation.
                if k == "properties" {
                    if let Value::Object(props) = child {
                        props.values_mut().for_each(|p| optional_fields(p, docs));
                    }
                } else {
                    optional_fields(child, docs);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| optional_fields(i, docs)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_values_and_repeats_go_and_data_stays() {
        let mut v = json!({
            "id": "abc", "id_source": "link", "guid": "https://x/1", "url": "https://x/1",
            "title": null, "authors": [], "content_format": "none", "content_truncated": false,
            "attempts": 0, "details": {"a": null}, "items": [{"n": 0}, null],
            "from_cache": true, "word_count": 12, "text": ""
        });
        compact(&mut v);
        assert_eq!(
            v,
            json!({"id": "abc", "url": "https://x/1", "items": [{}, null],
                   "from_cache": true, "word_count": 12, "text": ""})
        );
        let mut with_body =
            json!({"content": "x", "content_format": "text", "guid": "g", "url": "u"});
        compact(&mut with_body);
        assert_eq!(with_body["content_format"], "text");
        assert_eq!(with_body["guid"], "g");
    }

    #[test]
    fn a_compact_schema_requires_only_strings_and_keeps_data_named_description() {
        let mut s = json!({
            "description": "doc",
            "type": "object",
            "properties": {
                "feed_url": {"type": "string", "description": "doc"},
                "description": {"type": ["string", "null"]},
                "content_format": {"type": "string"},
                "item_count": {"type": "integer"}
            },
            "required": ["feed_url", "description", "content_format", "item_count"]
        });
        optional_fields(&mut s, false);
        assert_eq!(s["required"], json!(["feed_url"]));
        assert!(s.get("description").is_none());
        assert!(s["properties"]["feed_url"].get("description").is_none());
        assert!(s["properties"].get("description").is_some());
    }
}
