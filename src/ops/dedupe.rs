//! `--dedupe report|drop|off`: items of one run that tell the same story.
//!
//! Two items are the same story when they share a guid that looks globally unique, else a
//! web address after normalisation, else a content hash; the relation is closed over (if
//! A and B share a guid and B and C an address, all three are one group). Our own `id` is
//! never a key: it includes the feed's URL, so it never matches across feeds.

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
            });
        }
    }
    let mut groups = Groups::new(all.iter().map(|k| k.feed));
    // A guid or an address names one story wherever it appears: those join first. A body
    // only joins items of different feeds, and never a group already holding an item of
    // the other's feeds.
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
        let joined = candidates.iter().any(|&m| groups.join(m, n, true));
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

/// Drops from `out.duplicates` the items no longer in `out.feeds` (a result cut to fewer
/// items), and the groups left with fewer than two.
pub(crate) fn retain_present(out: &mut FetchOutput) {
    if out.duplicates.is_empty() {
        return;
    }
    let present: std::collections::HashSet<(&str, &str)> = out
        .feeds
        .iter()
        .flat_map(|f| f.items.iter().map(|i| (f.feed_url.as_str(), i.id.as_str())))
        .collect();
    for d in &mut out.duplicates {
        d.items
            .retain(|i| present.contains(&(i.feed_url.as_str(), i.id.as_str())));
    }
    out.duplicates.retain(|d| d.items.len() > 1);
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
    fn short_guids_are_local_to_their_feed() {
        assert!(!global_guid("42"));
        assert!(!global_guid("post-42"));
        assert!(global_guid("tag:example.com,2026:42"));
        assert!(global_guid("https://example.com/?p=42"));
        assert!(global_guid("3f2b8a1c-9d4e-4f6a-8b7c-1d2e3f4a5b6c"));
    }
}
