//! Podcasts: the iTunes namespace and Podcasting 2.0's most used tags (`podcast:transcript`,
//! `chapters`, `person`, `season`, `episode`, `soundbite`, `location`, `funding`, `guid`,
//! `locked`, `medium`), on a channel and on an item, read into the contract's types. Every
//! link is http(s) or nothing; every number is read fallibly and bounded.

use url::Url;

use super::xml::{Element, Ns};
use crate::model::{
    ChaptersLink, Funding, Location, Person, PodcastEpisode, PodcastFeed, Soundbite, TranscriptLink,
};
use crate::text::{collapse_ws, non_empty};
use crate::urls::resolve;

/// The largest episode or season number, and soundbite time in seconds, taken as given.
const MAX_NUMBER: f64 = 1e9;

/// An http(s) link of the document, absolute.
fn web_link(href: Option<&str>, base: Option<&Url>) -> Option<String> {
    let u = resolve(href?, base)?;
    let lower = u.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://")).then_some(u)
}

fn text(e: &Element) -> Option<String> {
    non_empty(collapse_ws(&e.text()))
}

fn attr(e: &Element, name: &str) -> Option<String> {
    e.attr(name).and_then(|v| non_empty(collapse_ws(v)))
}

/// `yes`/`true`/`explicit` or `no`/`false`/`clean`.
fn yes_no(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "explicit" => Some(true),
        "no" | "false" | "clean" => Some(false),
        _ => None,
    }
}

/// A non-negative finite number up to [`MAX_NUMBER`].
fn number(s: &str) -> Option<f64> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && (0.0..=MAX_NUMBER).contains(n))
}

fn whole(s: &str) -> Option<u64> {
    s.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| *n as f64 <= MAX_NUMBER)
}

fn lower(e: &Element) -> Option<String> {
    text(e).map(|t| t.to_ascii_lowercase())
}

fn image(e: &Element, base: Option<&Url>) -> Option<String> {
    web_link(e.attr("href").or_else(|| e.attr("url")), base)
}

fn person(e: &Element, base: Option<&Url>) -> Option<Person> {
    Some(Person {
        name: text(e)?,
        role: attr(e, "role").map(|r| r.to_ascii_lowercase()),
        group: attr(e, "group").map(|g| g.to_ascii_lowercase()),
        img: web_link(e.attr("img"), base),
        href: web_link(e.attr("href"), base),
    })
}

fn location(e: &Element) -> Option<Location> {
    Some(Location {
        name: text(e)?,
        geo: attr(e, "geo"),
        osm: attr(e, "osm"),
    })
}

fn funding(e: &Element, base: Option<&Url>) -> Option<Funding> {
    Some(Funding {
        url: web_link(e.attr("url"), base)?,
        title: text(e),
    })
}

/// What an item says of its episode; `None` when it says nothing. Links resolve against
/// their element's `xml:base`, else `fallback`.
pub(super) fn episode(item: &Element, fallback: Option<&Url>) -> Option<Box<PodcastEpisode>> {
    let mut p = PodcastEpisode::default();
    for c in item.elements() {
        if !matches!(c.ns, Ns::Itunes | Ns::Podcast) {
            continue;
        }
        let base = c.base.as_deref().or(fallback);
        match (c.ns, &*c.lname) {
            (_, "episode") => {
                if let Some(n) = number(&c.text()) {
                    // Podcasting 2.0's number (with its display) wins over iTunes'.
                    if c.ns == Ns::Podcast || p.episode.is_none() {
                        p.episode = Some(n);
                    }
                }
                if c.ns == Ns::Podcast {
                    p.episode_display = attr(c, "display");
                }
            }
            (_, "season") => {
                if let Some(n) = whole(&c.text())
                    && (c.ns == Ns::Podcast || p.season.is_none())
                {
                    p.season = Some(n);
                }
                if c.ns == Ns::Podcast {
                    p.season_name = attr(c, "name");
                }
            }
            (Ns::Itunes, "episodetype") => p.episode_type = lower(c),
            (Ns::Itunes, "explicit") => p.explicit = yes_no(&c.text()),
            (Ns::Itunes, "image") if p.image.is_none() => p.image = image(c, base),
            (Ns::Itunes, "block") => p.block = yes_no(&c.text()),
            (Ns::Podcast, "transcript") => {
                if let Some(url) = web_link(c.attr("url"), base) {
                    p.transcripts.push(TranscriptLink {
                        url,
                        mime_type: attr(c, "type").map(|t| t.to_ascii_lowercase()),
                        language: attr(c, "language"),
                        rel: attr(c, "rel"),
                    });
                }
            }
            (Ns::Podcast, "chapters") if p.chapters.is_none() => {
                p.chapters = web_link(c.attr("url"), base).map(|url| ChaptersLink {
                    url,
                    mime_type: attr(c, "type"),
                });
            }
            (Ns::Podcast, "person") => p.persons.extend(person(c, base)),
            (Ns::Podcast, "soundbite") => {
                let start = c.attr("startTime").and_then(number);
                let duration = c.attr("duration").and_then(number);
                if let (Some(start_seconds), Some(duration_seconds)) = (start, duration) {
                    p.soundbites.push(Soundbite {
                        start_seconds,
                        duration_seconds,
                        title: text(c),
                    });
                }
            }
            (Ns::Podcast, "location") if p.location.is_none() => p.location = location(c),
            (Ns::Podcast, "funding") => p.funding.extend(funding(c, base)),
            _ => {}
        }
    }
    (p != PodcastEpisode::default()).then(|| Box::new(p))
}

/// What a channel says of its show; `None` when it says nothing. Links resolve against
/// their element's `xml:base`, else `fallback`.
pub(super) fn show(ch: &Element, fallback: Option<&Url>) -> Option<Box<PodcastFeed>> {
    let mut p = PodcastFeed::default();
    for c in ch.elements() {
        if !matches!(c.ns, Ns::Itunes | Ns::Podcast) {
            continue;
        }
        let base = c.base.as_deref().or(fallback);
        match (c.ns, &*c.lname) {
            (Ns::Itunes, "type") => p.show_type = lower(c),
            (Ns::Itunes, "explicit") => p.explicit = yes_no(&c.text()),
            (Ns::Itunes, "image") if p.image.is_none() => p.image = image(c, base),
            (Ns::Itunes, "block") => p.block = yes_no(&c.text()),
            (Ns::Itunes, "owner") => {
                for o in c.elements() {
                    match &*o.lname {
                        "name" => p.owner_name = text(o),
                        "email" => p.owner_email = text(o),
                        _ => {}
                    }
                }
            }
            (Ns::Podcast, "guid") => p.guid = text(c),
            (Ns::Podcast, "locked") => {
                p.locked = yes_no(&c.text());
                p.locked_owner = attr(c, "owner");
            }
            (Ns::Podcast, "medium") => p.medium = lower(c),
            (Ns::Podcast, "funding") => p.funding.extend(funding(c, base)),
            (Ns::Podcast, "person") => p.persons.extend(person(c, base)),
            (Ns::Podcast, "location") if p.location.is_none() => p.location = location(c),
            _ => {}
        }
    }
    (p != PodcastFeed::default()).then(|| Box::new(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_bounded_and_flags_read_both_ways() {
        assert_eq!(number("12"), Some(12.0));
        assert_eq!(number("1.5"), Some(1.5));
        for bad in ["-1", "NaN", "inf", "1e300", "x", ""] {
            assert_eq!(number(bad), None, "{bad}");
        }
        assert_eq!(whole("18446744073709551615"), None);
        assert_eq!(yes_no(" Yes "), Some(true));
        assert_eq!(yes_no("clean"), Some(false));
        assert_eq!(yes_no("maybe"), None);
        assert_eq!(web_link(Some("javascript:alert(1)"), None), None);
        assert_eq!(web_link(Some("ftp://x/y"), None), None);
    }
}
