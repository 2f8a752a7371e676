//! A channel's (or Atom feed's) own metadata: title, site, description, dates, language,
//! icon, people, categories and declared update period.

use url::Url;

use super::RawFeed;
use super::constructs::{
    RSSISH, category, first_date, is_alternate, is_atomish, person, person_name, plain,
    push_unique, set_once, text_construct,
};
use super::xml::{Element, Ns};
use crate::model::{FreshBy, WarningCode};
use crate::text::{collapse_ws, non_empty};
use crate::urls::resolve;

/// The site's address from the links of a channel (or Atom feed) read so far.
pub(super) fn site_link(parent: &Element, atom_mode: bool) -> Option<Url> {
    parent.elements().find_map(|c| {
        let feedish = is_atomish(c, atom_mode) || RSSISH.contains(&c.ns);
        if !feedish || !c.name.eq_ignore_ascii_case("link") {
            return None;
        }
        let href = match c.attr("href") {
            Some(h) if is_alternate(c) => h.to_owned(),
            Some(_) => return None,
            None => c.text(),
        };
        Url::parse(resolve(&href, c.base.as_deref())?.as_str()).ok()
    })
}

pub(super) fn channel_meta(ch: &Element, root: &Element, atom_mode: bool, feed: &mut RawFeed) {
    let base = ch.base.as_deref();
    let mut skipped = Vec::new();
    let mut updated: [Option<String>; 3] = Default::default();
    let mut author_fallback = None;
    let mut description_fallback = None;
    let (mut ttl_minutes, mut sy_period, mut sy_frequency) = (None, None, None);
    let mut logo = None;
    let mut image_url = None;
    let mut itunes_image = None;
    for c in ch.elements().chain(
        root.elements()
            .filter(|e| e.name.eq_ignore_ascii_case("image")),
    ) {
        let atomish = is_atomish(c, atom_mode);
        let rssish = RSSISH.contains(&c.ns) && !atomish;
        if category(c, atomish, rssish, &mut feed.categories) {
            continue;
        }
        match (c.ns, c.name.to_ascii_lowercase().as_str()) {
            (_, "title") if (atomish || rssish) && feed.title.is_none() => {
                feed.title = plain(text_construct(c, atomish, &mut skipped));
            }
            (Ns::Dc, "title") if feed.title.is_none() => {
                feed.title = non_empty(collapse_ws(&c.text()))
            }
            (_, "link") if atomish || rssish => {
                if let Some(href) = c.attr("href") {
                    if is_alternate(c) && feed.site_url.is_none() {
                        feed.site_url = resolve(href, c.base.as_deref());
                    }
                } else if feed.site_url.is_none() {
                    feed.site_url = resolve(&c.text(), c.base.as_deref());
                }
            }
            (_, "description") if rssish => {
                feed.description = plain(text_construct(c, false, &mut skipped))
            }
            (_, "subtitle") | (_, "tagline") if atomish => {
                feed.description = plain(text_construct(c, true, &mut skipped));
            }
            (Ns::Itunes, "summary") | (Ns::Itunes, "subtitle") | (Ns::Dc, "description") => {
                description_fallback = non_empty(collapse_ws(&c.text()));
            }
            (_, "updated") | (_, "modified") if atomish => set_once(&mut updated[0], c.text()),
            (_, "lastbuilddate") if rssish => set_once(&mut updated[0], c.text()),
            (_, "pubdate") if rssish => set_once(&mut updated[1], c.text()),
            (Ns::Dc, "date") | (Ns::Dcterms, "modified") | (Ns::Dcterms, "issued") => {
                set_once(&mut updated[2], c.text())
            }
            (_, "author") if atomish => push_unique(&mut feed.authors, person(c)),
            (_, "managingeditor") if rssish => {
                push_unique(&mut feed.authors, person_name(&c.text()))
            }
            (Ns::Dc, "creator") | (Ns::Dc, "author") => {
                push_unique(&mut feed.authors, person_name(&c.text()))
            }
            (Ns::Itunes, "author") => author_fallback = person_name(&c.text()),
            (_, "ttl") if rssish => {
                ttl_minutes = c.text().trim().parse::<u64>().ok().filter(|m| *m > 0)
            }
            (Ns::Sy, "updateperiod") => {
                sy_period = match c.text().trim().to_ascii_lowercase().as_str() {
                    "hourly" => Some(3_600),
                    "daily" => Some(86_400),
                    "weekly" => Some(604_800),
                    "monthly" => Some(2_592_000),
                    "yearly" => Some(31_536_000),
                    _ => None,
                }
            }
            (Ns::Sy, "updatefrequency") => {
                sy_frequency = c.text().trim().parse::<u64>().ok().filter(|f| *f > 0)
            }
            (_, "skiphours") if rssish => feed.skip_hours = skipped_in(c, "hour", hour_of),
            (_, "skipdays") if rssish => feed.skip_days = skipped_in(c, "day", day_of),
            (_, "language") if rssish => feed.language = non_empty(c.text()),
            (Ns::Dc, "language") if feed.language.is_none() => feed.language = non_empty(c.text()),
            (_, "icon") if atomish => feed.icon = resolve(&c.text(), base),
            (_, "logo") if atomish => logo = resolve(&c.text(), base),
            (_, "image") if rssish => {
                let url = c
                    .elements()
                    .find(|u| u.name.eq_ignore_ascii_case("url"))
                    .map(|u| u.text())
                    .or_else(|| c.attr_ns(Ns::Rdf, "resource").map(str::to_owned));
                if image_url.is_none() {
                    image_url = url.and_then(|u| resolve(&u, base));
                }
            }
            (Ns::Itunes, "image") => itunes_image = c.attr("href").and_then(|h| resolve(h, base)),
            _ => {}
        }
    }
    let from_sy = sy_period
        .map(|p: u64| p / sy_frequency.unwrap_or(1))
        .filter(|s| *s > 0);
    (feed.ttl_seconds, feed.ttl_rule) = match (ttl_minutes, from_sy) {
        (Some(m), _) => (Some(m.saturating_mul(60)), Some(FreshBy::Ttl)),
        (None, Some(s)) => (Some(s), Some(FreshBy::SyUpdatePeriod)),
        (None, None) => (None, None),
    };
    if feed.description.is_none() {
        feed.description = description_fallback;
    }
    if feed.authors.is_empty() {
        push_unique(&mut feed.authors, author_fallback);
    }
    feed.updated = first_date(&updated);
    feed.icon = feed.icon.take().or(image_url).or(logo).or(itunes_image);
    if feed.language.is_none() {
        feed.language = ch
            .attr_ns(Ns::Xml, "lang")
            .or_else(|| root.attr_ns(Ns::Xml, "lang"))
            .and_then(non_empty);
    }
    for s in skipped.into_iter().take(3) {
        feed.warnings.push((WarningCode::ElementSkipped, s));
    }
}

/// The values of `parent`'s `child` elements (RSS `skipHours`' `hour`, `skipDays`' `day`)
/// that `read` understands, ascending and once each; what it does not is left out.
fn skipped_in(parent: &Element, child: &str, read: fn(&str) -> Option<u32>) -> Vec<u32> {
    let mut found: Vec<u32> = parent
        .elements()
        .filter(|e| e.name.eq_ignore_ascii_case(child))
        .filter_map(|e| read(e.text().trim()))
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// An RSS `skipHours` hour: 0-23 (UTC); 24, which some feeds write for midnight, is 0.
fn hour_of(text: &str) -> Option<u32> {
    match text.parse::<u32>().ok()? {
        24 => Some(0),
        h if h < 24 => Some(h),
        _ => None,
    }
}

/// The days of RSS `skipDays`, as the contract names them: 0 Monday ... 6 Sunday.
pub(crate) const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// An RSS `skipDays` day, by its English name in any case: 0 Monday ... 6 Sunday.
pub(crate) fn day_of(text: &str) -> Option<u32> {
    WEEKDAYS
        .iter()
        .position(|d| d.eq_ignore_ascii_case(text))
        .map(|i| i as u32)
}
