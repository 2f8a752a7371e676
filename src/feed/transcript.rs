//! A podcast episode's transcript (`podcast:transcript`) read as plain text: SubRip (SRT),
//! WebVTT, Podcasting 2.0's JSON transcript and HTML, one cue or segment a line, `Speaker:
//! words` where the format names who speaks (WebVTT's `<v Name>`, the JSON's `speaker`),
//! consecutive lines of one speaker joined. Cue numbers, times, settings, styles and notes
//! are left out.
//!
//! The subtitle crates on crates.io were checked first (`subtp`, `aspasia`, `srtlib`,
//! `webvtt-parser`): the strict ones fail a whole file on one malformed cue, the loose one
//! gives an empty result without an error, and none hands back WebVTT's voice names; what a
//! transcript needs here is its words and speakers from whatever a server sends, which this
//! line reader gives in one pass, its output bounded by [`MAX_CHARS`].

use serde_json::Value;

use super::render::to_text;
use crate::text::{collapse_ws, unescape_html};

/// The longest transcript text kept, in characters; the rest is cut at a line, with a note.
pub(crate) const MAX_CHARS: usize = 2_000_000;

/// What ends a transcript cut at [`MAX_CHARS`].
const CUT_NOTE: &str = "\n[the transcript is longer; the rest was cut]";

/// How a transcript is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Srt,
    Vtt,
    Json,
    Html,
}

impl Format {
    /// The contract's name of the format.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Format::Srt => "srt",
            Format::Vtt => "vtt",
            Format::Json => "json",
            Format::Html => "html",
        }
    }

    /// How much a reader of transcripts prefers this format (JSON and WebVTT name
    /// speakers).
    pub(crate) fn rank(self) -> u8 {
        match self {
            Format::Json => 0,
            Format::Vtt => 1,
            Format::Srt => 2,
            Format::Html => 3,
        }
    }
}

/// The format a media type names (`text/vtt`, `application/x-subrip`, `application/json`,
/// `text/html`, …).
pub(crate) fn format_of_type(mime: &str) -> Option<Format> {
    let m = mime.split(';').next()?.trim().to_ascii_lowercase();
    match m.as_str() {
        "text/vtt" | "text/webvtt" => Some(Format::Vtt),
        "application/srt" | "application/x-subrip" | "text/srt" | "text/x-srt" => Some(Format::Srt),
        "text/html" | "application/xhtml+xml" => Some(Format::Html),
        _ if m.ends_with("json") => Some(Format::Json),
        _ => None,
    }
}

/// The format of a body that does not say (or says a type it does not have), from its
/// first characters.
pub(crate) fn sniff(text: &str) -> Option<Format> {
    let t = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    if t.starts_with("WEBVTT") {
        Some(Format::Vtt)
    } else if t.starts_with('{') || t.starts_with('[') {
        Some(Format::Json)
    } else if t.starts_with('<') {
        Some(Format::Html)
    } else if t.lines().take(4).any(|l| l.contains("-->")) {
        Some(Format::Srt)
    } else {
        None
    }
}

/// The lines of a transcript as they build up: one speaker's consecutive words joined.
#[derive(Default)]
struct Lines {
    out: String,
    speaker: Option<String>,
    full: bool,
}

impl Lines {
    fn push(&mut self, speaker: Option<&str>, words: &str) {
        let words = collapse_ws(words);
        if words.is_empty() || self.full {
            return;
        }
        let same = speaker.is_some() && speaker == self.speaker.as_deref();
        if same {
            self.out.push(' ');
        } else {
            if !self.out.is_empty() {
                self.out.push('\n');
            }
            if let Some(s) = speaker {
                self.out.push_str(s);
                self.out.push_str(": ");
            }
        }
        self.out.push_str(&words);
        self.speaker = speaker.map(str::to_owned);
        if self.out.len() > MAX_CHARS {
            // The cut and its word stay within MAX_CHARS together.
            let mut cut = MAX_CHARS - CUT_NOTE.len();
            while !self.out.is_char_boundary(cut) {
                cut -= 1;
            }
            self.out.truncate(cut);
            self.out.push_str(CUT_NOTE);
            self.full = true;
        }
    }
}

/// `body` (a transcript in `format`) as plain text.
pub(crate) fn to_plain_text(body: &str, format: Format) -> String {
    let mut lines = Lines::default();
    match format {
        Format::Srt | Format::Vtt => cues(body, format, &mut lines),
        Format::Json => json(body, &mut lines),
        Format::Html => {
            let text = to_text(body, None).unwrap_or_else(|_| super::render::to_plain(body));
            for l in text.lines() {
                lines.push(None, l);
            }
        }
    }
    lines.out
}

/// SubRip and WebVTT: blocks separated by blank lines; in each, the cue's text follows the
/// line with the time (`-->`).
fn cues(body: &str, format: Format, lines: &mut Lines) {
    let mut in_cue = false;
    let mut skip_block = false;
    for (n, raw) in body.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim();
        if trimmed.is_empty() {
            in_cue = false;
            skip_block = false;
            continue;
        }
        if format == Format::Vtt && !in_cue {
            // The header, and NOTE, STYLE and REGION blocks, are not spoken.
            if n == 0 && trimmed.starts_with("WEBVTT")
                || ["NOTE", "STYLE", "REGION"]
                    .iter()
                    .any(|w| trimmed == *w || trimmed.starts_with(&format!("{w} ")))
            {
                skip_block = true;
            }
        }
        if skip_block {
            continue;
        }
        if trimmed.contains("-->") {
            in_cue = true;
            continue;
        }
        if !in_cue {
            // A cue's number or identifier.
            continue;
        }
        match format {
            Format::Vtt => vtt_line(trimmed, lines),
            _ => lines.push(None, &strip_tags(trimmed)),
        }
    }
}

/// One WebVTT cue line: `<v Speaker>words</v>` spans, other tags left out.
fn vtt_line(line: &str, lines: &mut Lines) {
    let mut rest = line;
    let mut speaker: Option<String> = None;
    let mut words = String::new();
    while let Some(lt) = rest.find('<') {
        words.push_str(&rest[..lt]);
        let Some(gt) = rest[lt..].find('>') else {
            words.push_str(&rest[lt..]);
            rest = "";
            break;
        };
        let tag = &rest[lt + 1..lt + gt];
        if let Some(v) = tag.strip_prefix('v').filter(|t| t.starts_with([' ', '.'])) {
            // `<v.loud Name>`: the classes, then the name.
            let name = v.split_once(' ').map_or("", |(_, n)| n);
            let name = collapse_ws(&unescape_html(name));
            if !words.trim().is_empty() {
                lines.push(speaker.as_deref(), &unescape_html(&words));
            }
            words.clear();
            speaker = (!name.is_empty()).then_some(name);
        }
        rest = &rest[lt + gt + 1..];
    }
    words.push_str(rest);
    lines.push(speaker.as_deref(), &unescape_html(&words));
}

/// A SubRip line without its `<i>`, `<b>`, `<font>` tags.
fn strip_tags(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..lt]);
        match rest[lt..].find('>') {
            Some(gt) => rest = &rest[lt + gt + 1..],
            None => {
                out.push_str(&rest[lt..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    unescape_html(&out).into_owned()
}

/// Podcasting 2.0's JSON transcript: `{"segments": [{"speaker", "body", …}]}` (a bare list
/// of segments is read too).
fn json(body: &str, lines: &mut Lines) {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return;
    };
    let segments = match &v {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("segments") {
            Some(Value::Array(a)) => a,
            _ => return,
        },
        _ => return,
    };
    for s in segments {
        let speaker = s
            .get("speaker")
            .and_then(Value::as_str)
            .map(collapse_ws)
            .filter(|s| !s.is_empty());
        if let Some(words) = s.get("body").and_then(Value::as_str) {
            lines.push(speaker.as_deref(), words);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webvtt_names_its_speakers_and_drops_its_furniture() {
        let vtt = "WEBVTT Kind: captions\n\nNOTE made by hand\nsecond note line\n\nSTYLE\n::cue { color: red }\n\n1\n00:00:00.000 --> 00:00:02.000 align:start\n<v Ana Quay>Welcome to <i>Tide Tables</i>.</v>\n\n00:00:02.000 --> 00:00:04.000\n<v Ana Quay>Today the fog.\n\n00:04.000 --> 00:06.000\n<v.loud Ole Berg>It was thick &amp; cold.\n<c.yellow>Very</c> cold.\n";
        assert_eq!(
            to_plain_text(vtt, Format::Vtt),
            "Ana Quay: Welcome to Tide Tables. Today the fog.\nOle Berg: It was thick & cold.\nVery cold."
        );
    }

    #[test]
    fn subrip_gives_its_lines_without_numbers_times_or_tags() {
        let srt = "1\r\n00:00:01,000 --> 00:00:02,500\r\n<i>Hello</i> there\r\nsecond line\r\n\r\n2\r\n00:00:03,000 --> 00:00:04,000\r\nANA: Bye.\r\n";
        assert_eq!(
            to_plain_text(srt, Format::Srt),
            "Hello there\nsecond line\nANA: Bye."
        );
    }

    #[test]
    fn the_json_transcript_names_speakers_and_joins_their_turns() {
        let json = r#"{"version":"1.0.0","segments":[
            {"speaker":"Ana","startTime":0,"endTime":1,"body":"Hi"},
            {"speaker":"Ana","startTime":1,"endTime":2,"body":"all."},
            {"speaker":"Ole","startTime":2,"endTime":3,"body":"Hello."},
            {"startTime":3,"endTime":4,"body":"(music)"},
            {"speaker":"Ole","body":42}]}"#;
        assert_eq!(
            to_plain_text(json, Format::Json),
            "Ana: Hi all.\nOle: Hello.\n(music)"
        );
        assert_eq!(to_plain_text("not json", Format::Json), "");
    }

    #[test]
    fn html_is_read_as_text_and_formats_are_told_apart() {
        let html =
            "<html><body><p><b>Ana:</b> Hi.</p><script>x()</script><p>Ole: Bye.</p></body></html>";
        let text = to_plain_text(html, Format::Html);
        assert!(
            text.contains("Ana: Hi.") && text.contains("Ole: Bye."),
            "{text}"
        );
        assert!(!text.contains("x()"));
        assert_eq!(format_of_type("text/vtt; charset=utf-8"), Some(Format::Vtt));
        assert_eq!(format_of_type("application/x-subrip"), Some(Format::Srt));
        assert_eq!(format_of_type("application/json"), Some(Format::Json));
        assert_eq!(format_of_type("audio/mpeg"), None);
        assert_eq!(sniff("\u{feff}WEBVTT\n"), Some(Format::Vtt));
        assert_eq!(
            sniff("1\n00:00:01,000 --> 00:00:02,000\nx"),
            Some(Format::Srt)
        );
        assert_eq!(sniff("plain words"), None);
    }

    #[test]
    fn a_huge_transcript_is_cut_at_the_cap() {
        let line = "x".repeat(1000);
        let json = format!(
            "[{}]",
            vec![format!("{{\"speaker\":\"A\",\"body\":\"{line}\"}},{{\"speaker\":\"B\",\"body\":\"{line}\"}}"); 1500]
                .join(",")
        );
        let text = to_plain_text(&json, Format::Json);
        assert!(text.len() <= MAX_CHARS, "{}", text.len());
        assert!(text.ends_with("the rest was cut]"));
    }
}
