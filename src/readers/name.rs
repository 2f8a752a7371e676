//! Who a reader is: a name the caller chooses, and over MCP HTTP the bearer token it
//! belongs to (its scope), so two clients' readers of one name are two readers.

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The longest reader name.
pub const MAX_NAME_CHARS: usize = 64;

/// A reader: its name and, for a client of `rss mcp --http` with a bearer token, the
/// token's scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReaderId {
    scope: Option<Scope>,
    name: String,
}

/// The part of a bearer token a reader name is scoped by: 12 hex digits of a digest of the
/// token's own digest (never the token, and not a way back to it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope(String);

impl Scope {
    /// The scope of the bearer token whose SHA-256 digest is `token_digest`.
    pub fn of_token_digest(token_digest: &[u8; 32]) -> Scope {
        let mut h = Sha256::new();
        h.update(b"rss reader scope\n");
        h.update(token_digest);
        Scope(hex::encode(&h.finalize()[..6]))
    }

    /// A scope as `rss readers` shows it (12 hex digits), or a usage error.
    pub fn parse(s: &str) -> Result<Scope> {
        let t = s.trim();
        if t.len() == 12 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(Scope(t.to_ascii_lowercase()));
        }
        Err(Error::usage(format!(
            "--scope {:?} is not a scope as `rss readers` lists it (12 hex digits)",
            crate::error::echo(s)
        )))
    }

    /// The 12 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl ReaderId {
    /// The reader `name` (1–64 characters of `A-Za-z0-9._-`) in `scope`, or a usage error.
    pub fn new(name: &str, scope: Option<Scope>) -> Result<ReaderId> {
        let ok = !name.is_empty()
            && name.len() <= MAX_NAME_CHARS
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !ok {
            return Err(Error::usage(format!(
                "reader {:?} is not a reader name: 1 to {MAX_NAME_CHARS} characters of A-Z, a-z, 0-9, '.', '_' and '-'",
                crate::error::echo(name)
            )));
        }
        Ok(ReaderId {
            scope,
            name: name.to_owned(),
        })
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The scope, if any.
    pub fn scope(&self) -> Option<&Scope> {
        self.scope.as_ref()
    }

    /// The reader as the first segment of its records' keys: `SCOPE~NAME`, `_` for no
    /// scope (never a path of its own: it never starts with a dot).
    pub(crate) fn group(&self) -> String {
        let scope = self.scope.as_ref().map_or("_", |s| s.as_str());
        format!("{scope}~{}", self.name)
    }

    /// The reader of a records group ([`ReaderId::group`]).
    pub(crate) fn from_group(group: &str) -> Option<ReaderId> {
        let (scope, name) = group.split_once('~')?;
        let scope = match scope {
            "_" => None,
            s => Some(Scope::parse(s).ok()?),
        };
        ReaderId::new(name, scope).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_safe_words() {
        for good in ["digest", "a", "team.triage-2", "..", &"x".repeat(64)] {
            let r = ReaderId::new(good, None).unwrap();
            assert_eq!(ReaderId::from_group(&r.group()), Some(r));
        }
        for bad in ["", "a b", "a/b", "é", "a~b", &"x".repeat(65)] {
            assert_eq!(
                ReaderId::new(bad, None).unwrap_err().code().as_str(),
                "USAGE_ERROR",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn two_tokens_scope_one_name_apart() {
        let a = Scope::of_token_digest(&[1; 32]);
        let b = Scope::of_token_digest(&[2; 32]);
        assert_ne!(a, b);
        let ra = ReaderId::new("digest", Some(a.clone())).unwrap();
        let rb = ReaderId::new("digest", Some(b)).unwrap();
        assert_ne!(ra.group(), rb.group());
        assert_eq!(ReaderId::from_group(&ra.group()), Some(ra));
        assert_eq!(Scope::parse(a.as_str()).unwrap(), a);
        assert!(Scope::parse("nothex").is_err());
    }
}
