//! `--query 'words "a phrase" -excluded'`: which items an agent asked for.
//!
//! An item matches when its title, summary or content holds every word and phrase and none
//! of the excluded ones. Matching is by whole words, case- and accent-insensitive: text is
//! case-folded ([caseless](https://crates.io/crates/caseless)), decomposed (NFKD) with its
//! combining marks dropped ([unicode-normalization](https://crates.io/crates/unicode-normalization)),
//! and split into words at anything that is not a letter or digit; each CJK character is a
//! word of its own (those scripts put no spaces between words), so a phrase of them matches
//! where it occurs.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::error::{Error, Result};

/// The longest query read, in characters, and the most terms it may hold: every item's
/// title, summary and content are matched against each term.
const MAX_QUERY_CHARS: usize = 1024;
const MAX_TERMS: usize = 32;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The query as given.
    pub text: String,
    /// Word sequences every match must hold (a word is a sequence of one).
    required: Vec<Vec<String>>,
    /// Word sequences no match may hold.
    excluded: Vec<Vec<String>>,
}

/// Whether `c` is written without spaces between words (each one is a word here).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xF900..=0xFAFF // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F // CJK Extensions B–F, supplement
        | 0x0E00..=0x0E7F // Thai
        | 0x1780..=0x17FF // Khmer
        | 0x0E80..=0x0EFF // Lao
    )
}

/// The words of `text`, folded for matching.
pub(crate) fn words(text: &str) -> Vec<String> {
    let folded = caseless::default_case_fold_str(text);
    let mut out = Vec::new();
    let mut word = String::new();
    for c in folded.nfkd().filter(|c| !is_combining_mark(*c)) {
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.push(c);
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn contains(haystack: &[String], needle: &[String]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

impl Query {
    /// Parses `text`; a usage error says where it went wrong.
    pub fn parse(text: &str) -> Result<Query> {
        let bad = |at: usize, what: &str| {
            Error::usage(format!(
                "query {:?}: {what} at character {}",
                crate::error::echo(text),
                at + 1
            ))
        };
        if text.chars().count() > MAX_QUERY_CHARS {
            return Err(Error::usage(format!(
                "query {:?} is longer than {MAX_QUERY_CHARS} characters",
                crate::error::echo(text)
            )));
        }
        let chars: Vec<char> = text.chars().collect();
        let (mut required, mut excluded) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_whitespace() {
                i += 1;
                continue;
            }
            let start = i;
            let negated = chars[i] == '-';
            if negated {
                i += 1;
            }
            let term: String;
            if chars.get(i) == Some(&'"') {
                let open = i;
                let close = chars[open + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .ok_or_else(|| bad(open, "a phrase has no closing quote"))?;
                term = chars[open + 1..open + 1 + close].iter().collect();
                i = open + close + 2;
            } else {
                let end = chars[i..]
                    .iter()
                    .position(|c| c.is_whitespace())
                    .map_or(chars.len(), |p| i + p);
                term = chars[i..end].iter().collect();
                if term.contains('"') {
                    return Err(bad(start, "a quote inside a word"));
                }
                i = end;
            }
            let w = words(&term);
            if w.is_empty() {
                return Err(bad(start, "a term with no letters or digits"));
            }
            if negated {
                excluded.push(w);
            } else {
                required.push(w);
            }
        }
        if required.len() + excluded.len() > MAX_TERMS {
            return Err(Error::usage(format!(
                "query {:?} has {} terms; at most {MAX_TERMS} are matched",
                crate::error::echo(text),
                required.len() + excluded.len()
            )));
        }
        if required.is_empty() && excluded.is_empty() {
            return Err(Error::usage(
                "the query is empty: give words, \"phrases\" or -exclusions",
            ));
        }
        Ok(Query {
            text: text.to_owned(),
            required,
            excluded,
        })
    }

    /// Whether the item made of `texts` (title, summary, content as plain text) matches.
    pub fn matches(&self, texts: &[&str]) -> bool {
        let all: Vec<Vec<String>> = texts.iter().map(|t| words(t)).collect();
        let holds = |seq: &Vec<String>| all.iter().any(|w| contains(w, seq));
        self.required.iter().all(holds) && !self.excluded.iter().any(holds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_phrases_and_exclusions() {
        let q = Query::parse(r#"rust "async runtime" -tokio"#).unwrap();
        assert!(q.matches(&["Rust news", "a new Async  runtime, at last"]));
        assert!(
            !q.matches(&["Rust news", "an async and a runtime"]),
            "a phrase is consecutive"
        );
        assert!(!q.matches(&["Rust: the async runtime", "built on Tokio"]));
        assert!(!q.matches(&["trust the async runtime"]), "whole words only");
    }

    #[test]
    fn case_and_accents_do_not_matter() {
        let q = Query::parse("cafe STRASSE").unwrap();
        assert!(q.matches(&["Le Café de la Straße"]));
        assert!(Query::parse("ÉLAN").unwrap().matches(&["un élan vital"]));
        assert!(
            Query::parse("ｆｕｌｌｗｉｄｔｈ")
                .unwrap()
                .matches(&["fullwidth text"])
        );
    }

    #[test]
    fn cjk_text_matches_without_spaces() {
        assert!(Query::parse("東京").unwrap().matches(&["東京都の天気"]));
        assert!(!Query::parse("東京").unwrap().matches(&["京都の天気"]));
    }

    #[test]
    fn a_huge_query_is_refused_briefly() {
        let long = "word ".repeat(300);
        let e = Query::parse(&long).unwrap_err();
        assert_eq!(e.code().as_str(), "USAGE_ERROR");
        assert!(e.to_string().len() < 600, "{}", e.to_string().len());
        let many = (0..40)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            Query::parse(&many)
                .unwrap_err()
                .to_string()
                .contains("40 terms")
        );
        assert!(
            Query::parse(
                &(0..32)
                    .map(|i| format!("w{i}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
            .is_ok()
        );
    }

    #[test]
    fn a_query_that_cannot_be_parsed_says_where() {
        let e = Query::parse(r#"rust "unclosed phrase"#).unwrap_err();
        assert_eq!(e.code().as_str(), "USAGE_ERROR");
        assert!(e.to_string().contains("at character 6"), "{e}");
        assert!(Query::parse("   ").is_err());
        assert!(
            Query::parse("- ok")
                .unwrap_err()
                .to_string()
                .contains("character 1")
        );
        assert!(Query::parse("we\"ird").is_err());
        assert!(Query::parse("\"\"").is_err());
        assert!(Query::parse("-only").is_ok());
    }
}
