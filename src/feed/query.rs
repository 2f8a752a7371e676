//! `--query 'words "a phrase" -excluded'`: which items an agent asked for.
//!
//! An item matches when its title, summary or content holds every word and phrase and none
//! of the excluded ones. Terms combine with `OR`, `AND` (the default between terms) and
//! `NOT` (the same as `-`), written in capitals, and parentheses group them:
//! `(Stadia OR xCloud) -rumour`. `AND` binds tighter than `OR`. Matching is by whole words, case- and accent-insensitive: text is
//! case-folded ([caseless](https://crates.io/crates/caseless)), decomposed (NFKD) with its
//! combining marks dropped ([unicode-normalization](https://crates.io/crates/unicode-normalization)),
//! and split into words at anything that is not a letter or digit; each CJK character is a
//! word of its own (those scripts put no spaces between words), so a phrase of them matches
//! where it occurs.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

use crate::error::{Error, Result};

/// The longest query read, in characters, the most terms it may hold (every item's title,
/// summary and content are matched against each term, each in time linear in the text
/// whatever the term's length: [`Phrase::find`]) and the deepest its parentheses and
/// negations may nest.
const MAX_QUERY_CHARS: usize = 1024;
const MAX_TERMS: usize = 32;
const MAX_DEPTH: usize = 16;

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// The query as given.
    pub text: String,
    /// What it asks for.
    root: Node,
}

/// A word sequence a text must hold (a word is a sequence of one), with its
/// Knuth–Morris–Pratt table, made once when the query is parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Phrase {
    words: Vec<String>,
    /// `back[i]`: the length of the longest proper prefix of `words[..=i]` that is also
    /// its suffix, where a match that fails after `i + 1` words goes on from.
    back: Vec<usize>,
}

impl Phrase {
    fn new(words: Vec<String>) -> Phrase {
        let mut back = vec![0; words.len()];
        let mut k = 0;
        for i in 1..words.len() {
            while k > 0 && words[i] != words[k] {
                k = back[k - 1];
            }
            if words[i] == words[k] {
                k += 1;
            }
            back[i] = k;
        }
        Phrase { words, back }
    }

    /// Whether `text` holds the phrase, and the word comparisons that took: never more
    /// than twice the words of `text`, whatever the phrase (a failed comparison moves the
    /// phrase along by at least one word, a matched one moves the text along by one).
    fn find(&self, text: &[String]) -> (bool, usize) {
        let m = self.words.len();
        let mut compared = 0;
        if m == 0 || m > text.len() {
            return (false, compared);
        }
        let mut k = 0;
        for w in text {
            loop {
                compared += 1;
                if *w == self.words[k] {
                    k += 1;
                    break;
                }
                if k == 0 {
                    break;
                }
                k = self.back[k - 1];
            }
            if k == m {
                return (true, compared);
            }
        }
        (false, compared)
    }
}

/// A query's structure.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    /// A word sequence the text must hold.
    Term(Phrase),
    /// Every part holds.
    All(Vec<Node>),
    /// Some part holds.
    Any(Vec<Node>),
    /// The part does not hold.
    Not(Box<Node>),
}

/// A piece of a query as written.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Open,
    Close,
    Or,
    And,
    Not,
    /// A word or a "phrase", as words.
    Term(Vec<String>),
}

/// Whether `c` is written without spaces between words (each one is a word here).
pub(crate) fn is_cjk(c: char) -> bool {
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

/// Splits a query into its tokens, each with the character it starts at.
fn tokenize(chars: &[char], bad: &dyn Fn(usize, &str) -> Error) -> Result<Vec<(Token, usize)>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        match c {
            '(' => {
                out.push((Token::Open, start));
                i += 1;
            }
            ')' => {
                out.push((Token::Close, start));
                i += 1;
            }
            '-' => {
                out.push((Token::Not, start));
                i += 1;
                if chars.get(i).is_none_or(|c| c.is_whitespace()) {
                    return Err(bad(start, "a - with nothing after it"));
                }
            }
            '"' => {
                let close = chars[start + 1..]
                    .iter()
                    .position(|&c| c == '"')
                    .ok_or_else(|| bad(start, "a phrase has no closing quote"))?;
                let phrase: String = chars[start + 1..start + 1 + close].iter().collect();
                let w = words(&phrase);
                if w.is_empty() {
                    return Err(bad(start, "a term with no letters or digits"));
                }
                out.push((Token::Term(w), start));
                i = start + close + 2;
            }
            _ => {
                let end = chars[i..]
                    .iter()
                    .position(|c| c.is_whitespace() || *c == '(' || *c == ')')
                    .map_or(chars.len(), |p| i + p);
                let word: String = chars[i..end].iter().collect();
                if word.contains('"') {
                    return Err(bad(start, "a quote inside a word"));
                }
                let token = match word.as_str() {
                    "OR" => Token::Or,
                    "AND" => Token::And,
                    "NOT" => Token::Not,
                    _ => {
                        let w = words(&word);
                        if w.is_empty() {
                            return Err(bad(start, "a term with no letters or digits"));
                        }
                        Token::Term(w)
                    }
                };
                out.push((token, start));
                i = end;
            }
        }
    }
    Ok(out)
}

/// A recursive-descent reader of tokens: `or := and (OR and)*`, `and := unary ([AND]
/// unary)*`, `unary := (NOT | -) unary | ( or ) | term`.
struct Reader<'a> {
    tokens: &'a [(Token, usize)],
    at: usize,
    end: usize,
    bad: &'a dyn Fn(usize, &str) -> Error,
}

impl Reader<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(t, _)| t)
    }

    fn here(&self) -> usize {
        self.tokens.get(self.at).map_or(self.end, |(_, p)| *p)
    }

    fn or(&mut self, depth: usize) -> Result<Node> {
        let mut parts = vec![self.and(depth)?];
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            parts.push(self.and(depth)?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Node::Any(parts)
        })
    }

    fn and(&mut self, depth: usize) -> Result<Node> {
        let mut parts = vec![self.unary(depth)?];
        loop {
            match self.peek() {
                Some(Token::And) => {
                    self.at += 1;
                    parts.push(self.unary(depth)?);
                }
                Some(Token::Open | Token::Not | Token::Term(_)) => parts.push(self.unary(depth)?),
                _ => break,
            }
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Node::All(parts)
        })
    }

    fn unary(&mut self, depth: usize) -> Result<Node> {
        if depth > MAX_DEPTH {
            return Err((self.bad)(
                self.here(),
                &format!("parentheses and NOT nest deeper than {MAX_DEPTH}"),
            ));
        }
        let at = self.here();
        match self.tokens.get(self.at).map(|(t, _)| t.clone()) {
            Some(Token::Not) => {
                self.at += 1;
                Ok(Node::Not(Box::new(self.unary(depth + 1)?)))
            }
            Some(Token::Open) => {
                self.at += 1;
                if self.peek() == Some(&Token::Close) {
                    return Err((self.bad)(at, "empty parentheses"));
                }
                let inner = self.or(depth + 1)?;
                if self.peek() != Some(&Token::Close) {
                    return Err((self.bad)(at, "a parenthesis is not closed"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some(Token::Term(w)) => {
                self.at += 1;
                Ok(Node::Term(Phrase::new(w)))
            }
            Some(Token::Close) => Err((self.bad)(at, "a ) with no ( before it")),
            Some(Token::Or | Token::And) => Err((self.bad)(
                at,
                "OR and AND join two terms (write them in lowercase to match the words)",
            )),
            None => Err((self.bad)(at, "the query ends where a term was expected")),
        }
    }
}

fn holds(node: &Node, texts: &[Vec<String>]) -> bool {
    match node {
        Node::Term(phrase) => texts.iter().any(|w| phrase.find(w).0),
        Node::All(parts) => parts.iter().all(|p| holds(p, texts)),
        Node::Any(parts) => parts.iter().any(|p| holds(p, texts)),
        Node::Not(part) => !holds(part, texts),
    }
}

impl Query {
    /// Parses `text`; a usage error says where it went wrong.
    pub fn parse(text: &str) -> Result<Query> {
        let bad = |at: usize, what: &str| {
            Error::usage(format!(
                "`query` {:?}: {what} at character {}",
                crate::error::echo(text),
                at + 1
            ))
        };
        if text.chars().count() > MAX_QUERY_CHARS {
            return Err(Error::usage(format!(
                "`query` {:?} is longer than {MAX_QUERY_CHARS} characters",
                crate::error::echo(text)
            )));
        }
        let chars: Vec<char> = text.chars().collect();
        let tokens = tokenize(&chars, &bad)?;
        if tokens.is_empty() {
            return Err(Error::usage(
                "the `query` is empty: give words, \"phrases\" or -exclusions",
            ));
        }
        let terms = tokens
            .iter()
            .filter(|(t, _)| matches!(t, Token::Term(_)))
            .count();
        if terms > MAX_TERMS {
            return Err(Error::usage(format!(
                "`query` {:?} has {terms} terms; at most {MAX_TERMS} are matched",
                crate::error::echo(text),
            )));
        }
        let mut reader = Reader {
            tokens: &tokens,
            at: 0,
            end: chars.len(),
            bad: &bad,
        };
        let root = reader.or(0)?;
        if reader.at < tokens.len() {
            return Err(bad(reader.here(), "a ) with no ( before it"));
        }
        Ok(Query {
            text: text.to_owned(),
            root,
        })
    }

    /// Whether the item made of `texts` (title, summary, content as plain text) matches.
    pub fn matches(&self, texts: &[&str]) -> bool {
        let all: Vec<Vec<String>> = texts.iter().map(|t| words(t)).collect();
        holds(&self.root, &all)
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
    fn or_and_not_and_parentheses_combine_terms() {
        let q = Query::parse("Stadia OR xCloud").unwrap();
        assert!(q.matches(&["Google Stadia shuts down"]));
        assert!(q.matches(&["xCloud comes to TVs"]));
        assert!(!q.matches(&["Nothing about either"]));
        let q = Query::parse("(Stadia OR xCloud) NOT rumour").unwrap();
        assert!(q.matches(&["Stadia news"]));
        assert!(!q.matches(&["Stadia rumour"]));
        let q = Query::parse(r#"rust AND ("async runtime" OR -tokio)"#).unwrap();
        assert!(q.matches(&["rust and an async runtime, tokio"]));
        assert!(q.matches(&["rust alone"]));
        assert!(!q.matches(&["rust with tokio"]));
        // AND binds tighter than OR; lowercase or is a word.
        let q = Query::parse("a b OR c").unwrap();
        assert!(q.matches(&["c"]) && q.matches(&["a b"]) && !q.matches(&["a"]));
        assert!(
            !Query::parse("WeWork or Europa")
                .unwrap()
                .matches(&["WeWork"])
        );
        for bad in ["(a OR b", "a OR", "OR a", "()", "a )", "NOT", "a AND AND b"] {
            let e = Query::parse(bad).unwrap_err();
            assert_eq!(e.code().as_str(), "USAGE_ERROR", "{bad}");
            assert!(e.to_string().contains("at character"), "{bad}: {e}");
        }
        let deep = format!("{}a{}", "(".repeat(40), ")".repeat(40));
        assert!(
            Query::parse(&deep)
                .unwrap_err()
                .to_string()
                .contains("nest")
        );
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

    fn w(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn a_phrase_costs_at_most_two_comparisons_a_word_of_text_whatever_its_length() {
        // The worst case of comparing at every position: a text of one repeated word and a
        // long phrase of it that fails only at its end (issue 35: a 500-word phrase on a
        // 4 MB body took 13 times as long as one word).
        let text = w(&["a"; 20_000].join(" "));
        for phrase in [
            format!("{} b", ["a"; 499].join(" ")),
            ["a"; 500].join(" "),
            format!("b {}", ["a"; 499].join(" ")),
            (0..500)
                .map(|i| if i % 2 == 0 { "a" } else { "b" })
                .collect::<Vec<_>>()
                .join(" "),
        ] {
            let p = Phrase::new(w(&phrase));
            let (_, compared) = p.find(&text);
            assert!(compared <= 2 * text.len(), "{compared} comparisons");
        }
        let (found, compared) = Phrase::new(w(&["a"; 500].join(" "))).find(&text);
        assert!(found && compared == 500, "{compared}");
    }

    proptest::proptest! {
        #[test]
        fn a_phrase_matches_where_its_words_stand_in_a_row(
            text in proptest::collection::vec(0u8..3, 0..40),
            phrase in proptest::collection::vec(0u8..3, 1..6),
        ) {
            let words = |v: &[u8]| v.iter().map(|b| b.to_string()).collect::<Vec<_>>();
            let (text, phrase) = (words(&text), words(&phrase));
            let naive = text.windows(phrase.len()).any(|win| win == &phrase[..]);
            let (found, compared) = Phrase::new(phrase).find(&text);
            proptest::prop_assert_eq!(found, naive);
            proptest::prop_assert!(compared <= 2 * text.len());
        }
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
