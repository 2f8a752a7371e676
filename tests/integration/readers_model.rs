//! The readers' contract as a property (issue 29): for any interleaving of new items, items
//! leaving the feed, fetches (with or without `--limit`) and acknowledgements (of any
//! delivery, twice included), every item is delivered until it is acknowledged and never
//! after — checked against a model of the feed and the reader, through `ops` on real files.

use std::collections::HashSet;

use proptest::prelude::*;
use rss::ops::{self, Caller, ReaderId, ReaderRequest};

use crate::helpers::*;

#[derive(Debug, Clone)]
enum Op {
    /// A new item, dated this many minutes into the day (any order: backdated too), or not.
    Add(Option<u16>),
    /// The oldest item in the document leaves it.
    Leave,
    /// `rss fetch --reader model --unseen [--limit N]`.
    Fetch(Option<usize>),
    /// `rss ack` of the k-th delivery so far (modulo their number).
    Ack(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => proptest::option::of(0u16..600).prop_map(Op::Add),
        1 => Just(Op::Leave),
        3 => proptest::option::of(1usize..4).prop_map(Op::Fetch),
        2 => (0usize..64).prop_map(Op::Ack),
    ]
}

/// One item of the modelled feed.
#[derive(Debug, Clone)]
struct Item {
    n: usize,
    minute: Option<u16>,
}

fn document(items: &[Item]) -> String {
    let mut body = String::from("<rss><channel><title>Model</title>");
    for it in items {
        let date = it
            .minute
            .map(|m| {
                format!(
                    "<pubDate>Mon, 01 Jun 2026 {:02}:{:02}:00 GMT</pubDate>",
                    m / 60,
                    m % 60
                )
            })
            .unwrap_or_default();
        body.push_str(&format!(
            "<item><title>i{}</title><link>https://model.example/{}</link>{date}</item>",
            it.n, it.n
        ));
    }
    body.push_str("</channel></rss>");
    body
}

/// What the model says a fetch returns: the unacknowledged items, newest first (undated
/// after dated, in feed order), the first `limit`.
fn expected(items: &[Item], acked: &HashSet<usize>, limit: Option<usize>) -> Vec<String> {
    let mut left: Vec<(usize, &Item)> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| !acked.contains(&it.n))
        .collect();
    left.sort_by(|(ia, a), (ib, b)| match (a.minute, b.minute) {
        (Some(x), Some(y)) => y.cmp(&x).then(ia.cmp(ib)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => ia.cmp(ib),
    });
    left.into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|(_, it)| format!("i{}", it.n))
        .collect()
}

async fn check(ops_list: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("feed.xml");
    let ctx = context(config(Some(dir.path())));
    let req = ReaderRequest {
        reader: ReaderId::new("model", None).unwrap(),
        unseen: true,
    };
    let mut items: Vec<Item> = Vec::new();
    let mut next = 0usize;
    let mut acked: HashSet<usize> = HashSet::new();
    // Every delivery: its token, its items, and whether it was acknowledged.
    let mut deliveries: Vec<(String, Vec<usize>, bool)> = Vec::new();
    std::fs::write(&path, document(&items)).unwrap();
    for op in ops_list {
        match op {
            Op::Add(minute) => {
                // New items come first in the document, as feeds put them.
                items.insert(0, Item { n: next, minute });
                next += 1;
                std::fs::write(&path, document(&items)).unwrap();
            }
            Op::Leave => {
                items.pop();
                std::fs::write(&path, document(&items)).unwrap();
            }
            Op::Fetch(limit) => {
                let opts = ops::FetchOptions {
                    selection: rss::Selection {
                        limit,
                        ..rss::Selection::default()
                    },
                    ..no_cache()
                };
                let inputs = rss::internals::merge([path.display().to_string()]);
                let out = ops::fetch_unseen(&ctx, inputs, &opts, &req, &|_, _| {})
                    .await
                    .unwrap();
                let got: Vec<String> = out.feeds[0]
                    .items
                    .iter()
                    .map(|i| i.title.clone().unwrap())
                    .collect();
                prop_assert_eq!(&got, &expected(&items, &acked, limit));
                let delivery = out.delivery.unwrap();
                prop_assert_eq!(delivery.items, got.len());
                if let Some(token) = delivery.token {
                    let ns = got.iter().map(|t| t[1..].parse().unwrap()).collect();
                    deliveries.push((token, ns, false));
                }
            }
            Op::Ack(k) if !deliveries.is_empty() => {
                let k = k % deliveries.len();
                let (token, ns, done) = deliveries[k].clone();
                let out = ops::ack(&ctx, &[token], Caller::Operator).await.unwrap();
                let fresh = ns.iter().filter(|n| !acked.contains(n)).count();
                if done {
                    prop_assert_eq!((out.acknowledged, out.already_acknowledged), (0, ns.len()));
                } else {
                    prop_assert_eq!(
                        (out.acknowledged, out.already_acknowledged),
                        (fresh, ns.len() - fresh)
                    );
                }
                acked.extend(ns);
                deliveries[k].2 = true;
            }
            Op::Ack(_) => {}
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift, ..ProptestConfig::default() })]

    #[test]
    fn every_item_is_delivered_until_it_is_acknowledged_and_never_after(
        ops_list in proptest::collection::vec(op(), 1..40)
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(check(ops_list))?;
    }
}
