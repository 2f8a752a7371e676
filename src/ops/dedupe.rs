//! `--dedupe report|drop|off`: items of one run that tell the same story.
//!
//! Two items are the same story when they share a guid that looks globally unique, else a
//! web address after normalisation, else a content hash; the relation is closed over (if
//! A and B share a guid and B and C an address, all three are one group). Our own `id` is
//! never a key: it includes the feed's URL, so it never matches across feeds.
//!
//! A body is the weakest key: one that repeats inside a feed ("Read more…") is that feed's
//! boilerplate and joins none of its items, and one shared by two feeds joins two items only
//! when their titles do not tell them apart ([`titles_apart`]).

use std::collections::HashMap;

use url::Url;

use crate::model::{Duplicate, DuplicateItem, DuplicateKind, FetchOutput};

/// What is done with the items that repeat an earlier one.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    serde::Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Dedupe {
    /// List them in `duplicates`, keep every item.
    #[default]
    Report,
    /// List them and keep only the first in input order.
    Drop,
    /// Look for none.
    Off,
}

/// Query parameters that only track who sent a reader, never what the page is.
fn is_tracking(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("utm_")
        || matches!(
            n.as_str(),
            "fbclid"
                | "gclid"
                | "dclid"
                | "gbraid"
                | "wbraid"
                | "msclkid"
                | "yclid"
                | "twclid"
                | "igshid"
                | "mc_cid"
                | "mc_eid"
                | "_ga"
                | "_gl"
                | "_hsenc"
                | "_hsmi"
                | "mkt_tok"
                | "oly_anon_id"
                | "oly_enc_id"
                | "vero_id"
                | "ref_src"
                | "ref_url"
        )
}

/// The address of a page as a duplicate key: no scheme (http and https name one story),
/// host lower-cased and default port dropped (by the URL parser), no trailing slash, no
/// fragment, no tracking parameters, the other parameters in their order.
pub(crate) fn normalize_url(url: &str) -> Option<String> {
    let u = Url::parse(url).ok()?;
    let host = u.host_str()?;
    let mut key = host.trim_end_matches('.').to_owned();
    if let Some(port) = u.port() {
        key.push_str(&format!(":{port}"));
    }
    key.push_str(u.path().trim_end_matches('/'));
    let kept: Vec<String> = u
        .query_pairs()
        .filter(|(k, _)| !is_tracking(k))
        .map(|(k, v)| {
            if v.is_empty() {
                k.into_owned()
            } else {
                format!("{k}={v}")
            }
        })
        .collect();
    if !kept.is_empty() {
        key.push('?');
        key.push_str(&kept.join("&"));
    }
    Some(key)
}

/// Whether a guid can name a story across feeds: a URI (`tag:`, `urn:`, a web address) or
/// a long opaque token (a UUID). Short ones (`1`, `post-42`) are unique only inside their
/// feed, so they never join items of two feeds.
fn global_guid(guid: &str) -> bool {
    let g = guid.trim();
    g.contains(':') || g.len() >= 20
}

/// An item's keys as duplicates are found by: a global-looking guid, the normalised
/// address, the content hash (each tagged with its kind).
fn keys_of(item: &crate::model::Item) -> [Option<String>; 3] {
    let guid = item.guid.as_deref().filter(|g| global_guid(g));
    [
        guid.map(|g| g.trim().to_owned()),
        item.url.as_deref().and_then(normalize_url),
        item.content_hash.clone(),
    ]
}

/// What `--dedupe drop` will keep, known as feeds arrive: each key's earliest holder (feed
/// index, item index) seen so far. An item whose key an earlier item already holds is
/// certain to be dropped (the first in input order stays), so `--articles` need not read
/// its page.
#[derive(Debug, Default)]
pub(crate) struct Claims(std::sync::Mutex<HashMap<(usize, String), (usize, usize)>>);

impl Claims {
    /// Claims `items` of feed `feed`; the indices of those an earlier item already holds a
    /// key of (and which will be dropped).
    pub(crate) fn claim(&self, feed: usize, items: &[crate::model::Item]) -> Vec<usize> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut doomed = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let keys = keys_of(item);
            let mut earlier = false;
            // A body joins items only when their groups hold no feed in common, which is
            // not known before every feed is in: only a guid or an address makes it certain.
            for (kind, key) in keys.iter().enumerate().take(2) {
                let Some(key) = key else { continue };
                let slot = held.entry((kind, key.clone())).or_insert((feed, i));
                if *slot < (feed, i) {
                    earlier = true;
                }
                if (feed, i) < *slot {
                    *slot = (feed, i);
                }
            }
            if earlier {
                doomed.push(i);
            }
        }
        doomed
    }
}

/// Union-find over item positions, each group knowing the feeds its members come from.
struct Groups {
    parent: Vec<usize>,
    /// The feeds of a root's group (empty for an item that is not a root).
    feeds: Vec<Vec<usize>>,
}

impl Groups {
    fn new(feeds: impl Iterator<Item = usize>) -> Groups {
        let feeds: Vec<Vec<usize>> = feeds.map(|f| vec![f]).collect();
        Groups {
            parent: (0..feeds.len()).collect(),
            feeds,
        }
    }

    fn root(&mut self, mut i: usize) -> usize {
        while self.parent[i] != i {
            self.parent[i] = self.parent[self.parent[i]];
            i = self.parent[i];
        }
        i
    }

    /// Joins the groups of `a` and `b`; with `apart_feeds`, only when no feed has an item in
    /// both (a body shared inside one feed is its boilerplate, never one story), so that no
    /// chain of body matches can join two items of one feed either. Whether they are one
    /// group now.
    fn join(&mut self, a: usize, b: usize, apart_feeds: bool) -> bool {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return true;
        }
        if apart_feeds && self.feeds[ra].iter().any(|f| self.feeds[rb].contains(f)) {
            return false;
        }
        // The earlier item stays the root, so a group's root is its first member.
        let (root, child) = if ra < rb { (ra, rb) } else { (rb, ra) };
        self.parent[child] = root;
        let moved = std::mem::take(&mut self.feeds[child]);
        self.feeds[root].extend(moved);
        true
    }
}

/// One item's place and keys.
struct Keyed {
    feed: usize,
    item: usize,
    keys: [Option<String>; 3],
    /// Its title's words, lower-cased, each followed by a space ([`title_words`]).
    title: Option<String>,
}

/// The most characters of a title compared.
const TITLE_CHARS: usize = 512;

/// A title as compared: its words (letters and digits) lower-cased, each followed by one
/// space and preceded by one, so a containment is a containment of whole words; `None` for
/// a title with no word.
fn title_words(title: Option<&str>) -> Option<String> {
    let mut out = String::from(" ");
    for word in title?
        .chars()
        .take(TITLE_CHARS)
        .collect::<String>()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        out.extend(word.chars().flat_map(char::to_lowercase));
        out.push(' ');
    }
    (out.len() > 1).then_some(out)
}

/// Whether two items' titles tell them apart: both have one, and neither's words stand in
/// a row in the other's (a copy that adds the site's name to the title is not apart).
fn titles_apart(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => !a.contains(b) && !b.contains(a),
        _ => false,
    }
}

/// Drops from `all` the bodies that repeat inside their own feed: boilerplate, not a story.
fn drop_boilerplate(all: &mut [Keyed]) {
    let mut count: HashMap<(usize, &str), usize> = HashMap::new();
    for k in all.iter() {
        if let Some(h) = k.keys[2].as_deref() {
            *count.entry((k.feed, h)).or_default() += 1;
        }
    }
    let repeated: std::collections::HashSet<(usize, String)> = count
        .into_iter()
        .filter(|&(_, n)| n > 1)
        .map(|((f, h), _)| (f, h.to_owned()))
        .collect();
    if repeated.is_empty() {
        return;
    }
    for k in all.iter_mut() {
        if k.keys[2]
            .as_ref()
            .is_some_and(|h| repeated.contains(&(k.feed, h.clone())))
        {
            k.keys[2] = None;
        }
    }
}

/// At most this many groups per body are offered to a later item holding the same body.
const BODY_CANDIDATES: usize = 64;

const KINDS: [DuplicateKind; 3] = [
    DuplicateKind::Guid,
    DuplicateKind::Url,
    DuplicateKind::ContentHash,
];

/// The strongest key that at least two of `group`'s members share, which names the group.
fn group_name(all: &[Keyed], group: &[usize]) -> Option<(DuplicateKind, String)> {
    (0..3).find_map(|kind| {
        let mut seen = std::collections::HashSet::new();
        group.iter().find_map(|&n| {
            let key = all[n].keys[kind].as_deref()?;
            (!seen.insert(key)).then(|| (KINDS[kind], key.to_owned()))
        })
    })
}

/// Finds the run's duplicates, lists them in `out.duplicates` and, with `Drop`, removes every
/// item but the first of each group (counted in `truncation.items_omitted_as_duplicates`).
pub(crate) fn apply(out: &mut FetchOutput, mode: Dedupe) {
    if mode == Dedupe::Off {
        return;
    }
    let mut all = Vec::new();
    for (f, feed) in out.feeds.iter().enumerate() {
        for (i, item) in feed.items.iter().enumerate() {
            all.push(Keyed {
                feed: f,
                item: i,
                keys: keys_of(item),
                title: title_words(item.title.as_deref()),
            });
        }
    }
    drop_boilerplate(&mut all);
    let mut groups = Groups::new(all.iter().map(|k| k.feed));
    // A guid or an address names one story wherever it appears: those join first. A body
    // only joins items of different feeds whose titles do not tell them apart, and never a
    // group already holding an item of the other's feeds.
    for kind in 0..2 {
        let mut first_with: HashMap<&str, usize> = HashMap::new();
        for (n, k) in all.iter().enumerate() {
            if let Some(key) = k.keys[kind].as_deref() {
                let first = *first_with.entry(key).or_insert(n);
                groups.join(first, n, false);
            }
        }
    }
    // Each body's groups so far, earliest first: an item joins the first it may join.
    let mut with_body: HashMap<&str, Vec<usize>> = HashMap::new();
    for (n, k) in all.iter().enumerate() {
        let Some(key) = k.keys[2].as_deref() else {
            continue;
        };
        let candidates = with_body.entry(key).or_default();
        let joined = candidates.iter().any(|&m| {
            !titles_apart(all[m].title.as_deref(), k.title.as_deref()) && groups.join(m, n, true)
        });
        // Bounded, so a body that a long feed repeats costs a few checks an item.
        if !joined && candidates.len() < BODY_CANDIDATES {
            candidates.push(n);
        }
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); all.len()];
    for n in 0..all.len() {
        let r = groups.root(n);
        members[r].push(n);
    }
    let mut drop: Vec<(usize, usize)> = Vec::new();
    for (root, group) in members.iter().enumerate() {
        if group.len() < 2 {
            continue;
        }
        let Some((kind, key)) = group_name(&all, group) else {
            continue;
        };
        out.duplicates.push(Duplicate {
            key,
            kind,
            items: group
                .iter()
                .map(|&n| {
                    let feed = &out.feeds[all[n].feed];
                    DuplicateItem {
                        feed_url: feed.feed_url.clone(),
                        id: feed.items[all[n].item].id.clone(),
                    }
                })
                .collect(),
        });
        if mode == Dedupe::Drop {
            drop.extend(
                group
                    .iter()
                    .filter(|&&n| n != root)
                    .map(|&n| (all[n].feed, all[n].item)),
            );
        }
    }
    if drop.is_empty() {
        return;
    }
    drop.sort_unstable();
    for &(f, i) in drop.iter().rev() {
        let feed = &mut out.feeds[f];
        let item = feed.items.remove(i);
        feed.item_count -= 1;
        feed.content_tokens_est_total -= item.content_tokens_est;
        out.total_items -= 1;
        out.total_content_tokens_est -= item.content_tokens_est;
    }
    out.truncation.items_omitted_as_duplicates += drop.len();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_normalise_to_one_story() {
        let n = |u| normalize_url(u).unwrap();
        let base = n("https://example.com/a/b");
        for same in [
            "http://EXAMPLE.com/a/b",
            "https://example.com:443/a/b/",
            "https://example.com/a/b?utm_source=x&utm_medium=rss",
            "https://example.com/a/b#comments",
            "https://example.com/a/b?fbclid=123",
        ] {
            assert_eq!(n(same), base, "{same}");
        }
        assert_ne!(n("https://example.com/a/b?id=2"), base);
        assert_ne!(n("https://example.com:8443/a/b"), base);
        assert_eq!(
            n("https://example.com/a?id=2&utm_campaign=z"),
            n("https://example.com/a?id=2")
        );
        assert!(normalize_url("mailto:x@example.com").is_none());
    }

    #[test]
    fn titles_are_apart_unless_one_holds_the_others_words_in_a_row() {
        let apart = |a: Option<&str>, b: Option<&str>| {
            titles_apart(title_words(a).as_deref(), title_words(b).as_deref())
        };
        assert!(apart(
            Some("A post about gardens"),
            Some("A post about rivers")
        ));
        assert!(apart(Some("Story 1"), Some("Story 10")), "whole words only");
        assert!(!apart(
            Some("Storm reaches the coast"),
            Some("STORM reaches the coast – Blog B")
        ));
        assert!(!apart(Some("Same"), Some("same!")));
        assert!(!apart(Some("A title"), None), "nothing tells them apart");
        assert!(
            !apart(Some("…"), Some("A title")),
            "a title of no word is none"
        );
        let long = "word ".repeat(10_000);
        assert!(title_words(Some(&long)).unwrap().len() <= 2 * TITLE_CHARS);
    }

    #[test]
    fn short_guids_are_local_to_their_feed() {
        assert!(!global_guid("42"));
        assert!(!global_guid("post-42"));
        assert!(global_guid("tag:example.com,2026:42"));
        assert!(global_guid("https://example.com/?p=42"));
        assert!(global_guid("3f2b8a1c-9d4e-4f6a-8b7c-1d2e3f4a5b6c"));
    }
}
