//! The owner's config file (`$XDG_CONFIG_HOME/rss/config.toml`, `--config FILE`,
//! `RSS_CONFIG`): global defaults and rules per site, parsed once at start and checked
//! strictly (an unknown key, a bad value or an inline secret is a usage error naming its
//! line and column), then matched by URL: the most specific rule that matches wins.
//!
//! - `check`  — the checks of `[defaults]` and of each rule, with their places in the file
//! - `file`   — the format as serde reads it, and its JSON Schema
//! - `rule`   — a checked rule: its matcher, its settings
//! - `secret` — secrets by reference (an environment variable, a private file)

mod check;
mod file;
mod rule;
mod secret;

use std::path::{Path, PathBuf};

use toml::Spanned;
use url::Url;

pub use file::FileConfig;
pub use rule::{Auth, HeaderSource, Matcher, ProxyChoice, Rule, RuleHeader};
pub use secret::SecretSlot;

use crate::config::{ConfigFile, Overrides};
use crate::error::{Error, Result};

/// The largest config file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The owner's settings: `[defaults]` as a layer under the flags and the environment, and
/// the `[[site]]` rules.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The file they were read from (`None`: no file).
    pub path: Option<PathBuf>,
    /// `[defaults]`, in the shape of the flags they stand for.
    pub defaults: Overrides,
    /// The rules, in file order.
    pub rules: Vec<Rule>,
}

/// A place in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// From 1.
    pub line: usize,
    /// From 1, in characters.
    pub column: usize,
}

/// Where byte `offset` of `text` is.
fn position(text: &str, offset: usize) -> Position {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// A serde message with any quoted value it repeats left out (a value written in the
/// wrong place may still be a secret).
fn without_values(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("string \"") {
        out.push_str(&rest[..at + "string".len()]);
        let after = &rest[at + "string \"".len()..];
        rest = match after.find("\", ").or_else(|| after.rfind('"')) {
            Some(end) => &after[end + 1..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// What is being read: the text, and the file's name and directory.
pub(super) struct Source<'a> {
    text: &'a str,
    path: &'a Path,
    dir: PathBuf,
}

impl Source<'_> {
    /// A usage error at byte `at` of the file.
    pub(super) fn error(&self, at: Option<usize>, message: impl Into<String>) -> Error {
        let pos = at.map(|o| position(self.text, o));
        Error::ConfigFile {
            path: self.path.display().to_string(),
            line: pos.map(|p| p.line),
            column: pos.map(|p| p.column),
            message: message.into(),
        }
    }

    pub(super) fn at<T>(&self, s: &Spanned<T>, message: impl Into<String>) -> Error {
        self.error(Some(s.span().start), message)
    }

    fn line_of<T>(&self, s: &Spanned<T>) -> usize {
        position(self.text, s.span().start).line
    }

    /// A path as written: `~/` is the home directory, a relative path is taken from the
    /// config file's directory.
    pub(super) fn path(&self, raw: &str) -> PathBuf {
        if let Some(rest) = raw.strip_prefix("~/")
            && let Some(home) = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf())
        {
            return home.join(rest);
        }
        let p = Path::new(raw);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.dir.join(p)
        }
    }
}

impl Settings {
    /// Reads the file `file` names. A file named by `--config` or `RSS_CONFIG` must exist;
    /// the default location may be empty (then there are no settings).
    pub fn load(file: &ConfigFile) -> Result<Settings> {
        use std::io::Read;
        let Some(path) = &file.path else {
            return Ok(Settings::default());
        };
        let opened = match crate::local::open_regular(path) {
            Ok((f, _)) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !file.explicit => {
                return Ok(Settings::default());
            }
            Err(e) => return Err(unreadable(path, &e)),
        };
        let mut raw = Vec::new();
        opened
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut raw)
            .map_err(|e| unreadable(path, &e))?;
        if raw.len() as u64 > MAX_FILE_BYTES {
            return Err(Error::ConfigFile {
                path: path.display().to_string(),
                line: None,
                column: None,
                message: format!("the file is over {MAX_FILE_BYTES} bytes"),
            });
        }
        let text = String::from_utf8(raw).map_err(|e| Error::ConfigFile {
            path: path.display().to_string(),
            line: None,
            column: None,
            message: format!("the file is not UTF-8 text ({e})"),
        })?;
        Settings::parse(&text, path, &|name| std::env::var(name).ok())
    }

    /// Parses and checks `text` (the file at `path`), reading the secrets it names through
    /// `env` and the file system.
    pub fn parse(
        text: &str,
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings> {
        let src = Source {
            text,
            path,
            dir: path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        let parsed: FileConfig = toml::from_str(text)
            .map_err(|e| src.error(e.span().map(|s| s.start), without_values(e.message())))?;
        let defaults = check::defaults(&src, parsed.defaults)?;
        let mut rules: Vec<Rule> = Vec::with_capacity(parsed.site.len());
        // Each rule's line counted on from the last one's, and its matcher looked up rather
        // than compared with every earlier rule: a file of many rules is read in linear time.
        let mut seen: std::collections::HashMap<rule::Matcher, usize> =
            std::collections::HashMap::with_capacity(rules.capacity());
        let (mut counted_to, mut line) = (0usize, 1usize);
        for (i, spanned) in parsed.site.into_iter().enumerate() {
            let start = spanned.span().start;
            if let Some(between) = text.get(counted_to..start) {
                line += between.bytes().filter(|&b| b == b'\n').count();
                counted_to = start;
            } else {
                line = src.line_of(&spanned);
                counted_to = start;
            }
            let r = check::rule(&src, i + 1, line, start, spanned.into_inner(), env)?;
            if let Some(&same) = seen.get(&r.matcher) {
                let same = &rules[same];
                return Err(src.error(
                    Some(start),
                    format!(
                        "this rule matches exactly what rule {} (line {}) does: merge them",
                        same.index, same.line
                    ),
                ));
            }
            seen.insert(r.matcher.clone(), rules.len());
            rules.push(r);
        }
        Ok(Settings {
            path: Some(path.to_path_buf()),
            defaults,
            rules,
        })
    }

    /// The rule for `url`: the most specific of those that match (the first of equals).
    pub fn rule_for(&self, url: &Url) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        for r in self.rules.iter().filter(|r| r.matcher.matches(url)) {
            if best.is_none_or(|b| r.matcher.rank() > b.matcher.rank()) {
                best = Some(r);
            }
        }
        best
    }

    /// The proxies the rules name (`--deny-private-networks` trusts their names as it
    /// trusts the environment's).
    pub fn proxy_hosts(&self) -> Vec<String> {
        self.rules
            .iter()
            .filter_map(|r| match &r.proxy {
                Some(ProxyChoice::Via(u)) => u.host_str().map(str::to_ascii_lowercase),
                _ => None,
            })
            .collect()
    }
}

/// A config file that cannot be read: a usage error, like one that does not parse.
fn unreadable(path: &Path, e: &std::io::Error) -> Error {
    Error::ConfigFile {
        path: path.display().to_string(),
        line: None,
        column: None,
        message: format!("cannot read the config file: {e}"),
    }
}

#[cfg(test)]
mod tests;
