//! Podcasts in the contract: the iTunes namespace and Podcasting 2.0's most used tags, for a
//! feed and for an episode, and an episode's transcript read as text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a podcast feed says of itself (`itunes:*`, `podcast:*` on the channel).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PodcastFeed {
    /// `itunes:type`: `episodic` or `serial`.
    pub show_type: Option<String>,
    /// `itunes:explicit`: whether the show holds explicit content.
    pub explicit: Option<bool>,
    /// `itunes:image`: the show's artwork, absolute.
    pub image: Option<String>,
    /// `itunes:block`: the publisher asks directories not to list the show.
    pub block: Option<bool>,
    /// `itunes:owner`'s name.
    pub owner_name: Option<String>,
    /// `itunes:owner`'s e-mail address.
    pub owner_email: Option<String>,
    /// `podcast:guid`: the show's global identifier.
    pub guid: Option<String>,
    /// `podcast:locked`: the publisher forbids moving the feed to another host.
    pub locked: Option<bool>,
    /// `podcast:locked`'s `owner` (who may unlock it).
    pub locked_owner: Option<String>,
    /// `podcast:medium`: `podcast`, `music`, `video`, `audiobook`, `newsletter`, `blog`, …
    pub medium: Option<String>,
    /// `podcast:funding`: where to support the show.
    pub funding: Vec<Funding>,
    /// `podcast:person`: the show's people.
    pub persons: Vec<Person>,
    /// `podcast:location`: what the show is about, where.
    pub location: Option<Location>,
}

/// What a podcast episode says of itself (`itunes:*`, `podcast:*` on the item).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PodcastEpisode {
    /// `itunes:episode` (or `podcast:episode`): the episode's number.
    pub episode: Option<f64>,
    /// `podcast:episode`'s `display`: how the number is shown (`Ep. 3b`).
    pub episode_display: Option<String>,
    /// `itunes:season` (or `podcast:season`): the season's number.
    pub season: Option<u64>,
    /// `podcast:season`'s `name`.
    pub season_name: Option<String>,
    /// `itunes:episodeType`: `full`, `trailer` or `bonus`.
    pub episode_type: Option<String>,
    /// `itunes:explicit`.
    pub explicit: Option<bool>,
    /// `itunes:image`: the episode's artwork, absolute.
    pub image: Option<String>,
    /// `itunes:block`: the publisher asks directories not to list the episode.
    pub block: Option<bool>,
    /// `podcast:transcript`: the episode's transcripts, in feed order.
    pub transcripts: Vec<TranscriptLink>,
    /// `podcast:chapters`: the episode's chapters file.
    pub chapters: Option<ChaptersLink>,
    /// `podcast:person`: the episode's people.
    pub persons: Vec<Person>,
    /// `podcast:soundbite`: moments of the episode worth hearing on their own.
    pub soundbites: Vec<Soundbite>,
    /// `podcast:location`.
    pub location: Option<Location>,
    /// `podcast:funding` given on the episode.
    pub funding: Vec<Funding>,
}

/// A `podcast:transcript`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptLink {
    /// Where the transcript is, absolute.
    pub url: String,
    /// Its media type (`text/vtt`, `application/x-subrip`, `application/json`, `text/html`).
    #[serde(rename = "type")]
    pub mime_type: Option<String>,
    /// Its language tag.
    pub language: Option<String>,
    /// `captions` when it is timed captions.
    pub rel: Option<String>,
}

/// A `podcast:chapters`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChaptersLink {
    /// Where the chapters file is, absolute.
    pub url: String,
    /// Its media type (`application/json+chapters`).
    #[serde(rename = "type")]
    pub mime_type: Option<String>,
}

/// A `podcast:person`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Person {
    /// The person's name.
    pub name: String,
    /// Their role (`host`, `guest`, …; `host` when not given).
    pub role: Option<String>,
    /// Their group (`cast`, `writing`, …).
    pub group: Option<String>,
    /// Their picture, absolute.
    pub img: Option<String>,
    /// Their page, absolute.
    pub href: Option<String>,
}

/// A `podcast:soundbite`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Soundbite {
    /// Where it starts, in seconds from the episode's start.
    pub start_seconds: f64,
    /// How long it lasts, in seconds.
    pub duration_seconds: f64,
    /// Its title, if given.
    pub title: Option<String>,
}

/// A `podcast:location`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Location {
    /// The place, in words.
    pub name: String,
    /// Its `geo:` URI, if given.
    pub geo: Option<String>,
    /// Its OpenStreetMap identifier, if given.
    pub osm: Option<String>,
}

/// A `podcast:funding`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Funding {
    /// Where to give, absolute.
    pub url: String,
    /// What the link says.
    pub title: Option<String>,
}

/// An episode's transcript read as text (`rss fetch --transcripts`, MCP `transcripts: true`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TranscriptText {
    /// The transcript read.
    pub url: String,
    /// How it was read: `srt`, `vtt`, `json` or `html`.
    pub format: Option<String>,
    /// Its text, one cue or segment a line, `Speaker: words` where the format names who
    /// speaks; `null` when it could not be read.
    pub text: Option<String>,
    /// Why it could not be read (the contract's error object), `null` when it was.
    pub error: Option<super::ErrorObject>,
}
