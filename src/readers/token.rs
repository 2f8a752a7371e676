//! Delivery tokens: `rss1.BODY.TAG`, BODY the base64url of a small JSON (the reader, the
//! delivery's id and when it expires), TAG an HMAC-SHA256 of it (first 16 bytes) under the
//! key of the store the marks live in (drawn once, kept there), so a token changed by one
//! character, or given by another state directory or Redis, is refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::{ReaderId, Scope};

/// The longest token accepted (a real one is under 200 characters).
const MAX_TOKEN_CHARS: usize = 512;
const PREFIX: &str = "rss1.";

/// The key a store's tokens are signed with.
#[derive(Clone)]
pub(crate) struct TokenKey(pub(crate) [u8; 32]);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

/// What a token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The reader it was given to.
    pub reader: ReaderId,
    /// The delivery it stands for.
    pub delivery: String,
    /// When it stops being accepted (Unix ms, the store's clock).
    pub expires_ms: u64,
}

#[derive(Serialize, Deserialize)]
struct Body {
    v: u8,
    r: String,
    s: Option<String>,
    d: String,
    e: u64,
}

/// Why a token was refused before anything was looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not shaped like a token at all.
    NotAToken,
    /// Shaped like one, but its tag does not match: changed, or signed by another store.
    Forged,
}

impl TokenKey {
    fn tag(&self, body: &str) -> [u8; 16] {
        let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("any key");
        mac.update(b"rss delivery token v1\n");
        mac.update(body.as_bytes());
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; 16];
        tag.copy_from_slice(&full[..16]);
        tag
    }

    /// The token of `claim`.
    pub(crate) fn encode(&self, claim: &Claim) -> String {
        let body = Body {
            v: 1,
            r: claim.reader.name().to_owned(),
            s: claim.reader.scope().map(|s| s.as_str().to_owned()),
            d: claim.delivery.clone(),
            e: claim.expires_ms,
        };
        let body = B64.encode(serde_json::to_vec(&body).unwrap_or_default());
        let tag = B64.encode(self.tag(&body));
        format!("{PREFIX}{body}.{tag}")
    }

    /// What `token` says, if this key signed it.
    pub(crate) fn decode(&self, token: &str) -> Result<Claim, Refusal> {
        let token = token.trim();
        if token.len() > MAX_TOKEN_CHARS {
            return Err(Refusal::NotAToken);
        }
        let rest = token.strip_prefix(PREFIX).ok_or(Refusal::NotAToken)?;
        // Shaped like a token from here on: whatever fails is a change (or another key).
        let (body, tag) = rest.split_once('.').ok_or(Refusal::Forged)?;
        let tag = B64.decode(tag).map_err(|_| Refusal::Forged)?;
        let expected = self.tag(body);
        if !bool::from(subtle::ConstantTimeEq::ct_eq(&expected[..], &tag[..])) {
            return Err(Refusal::Forged);
        }
        // Signed by us: what follows can only fail for a token of another version.
        let json = B64.decode(body).map_err(|_| Refusal::Forged)?;
        let b: Body = serde_json::from_slice(&json).map_err(|_| Refusal::Forged)?;
        let scope = match b.s {
            Some(s) => Some(Scope::parse(&s).map_err(|_| Refusal::Forged)?),
            None => None,
        };
        let reader = ReaderId::new(&b.r, scope).map_err(|_| Refusal::Forged)?;
        let id_ok = b.d.len() == 16 && b.d.bytes().all(|c| c.is_ascii_hexdigit());
        if b.v != 1 || !id_ok {
            return Err(Refusal::Forged);
        }
        Ok(Claim {
            reader,
            delivery: b.d,
            expires_ms: b.e,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim() -> Claim {
        Claim {
            reader: ReaderId::new("digest", Some(Scope::of_token_digest(&[7; 32]))).unwrap(),
            delivery: "0123456789abcdef".into(),
            expires_ms: 1_780_000_000_000,
        }
    }

    #[test]
    fn a_token_reads_back_and_any_change_is_refused() {
        let key = TokenKey([1; 32]);
        let t = key.encode(&claim());
        assert!(t.len() < 200, "{} chars", t.len());
        assert_eq!(key.decode(&t).unwrap(), claim());
        for at in 0..t.len() {
            let mut b = t.clone().into_bytes();
            b[at] = if b[at] == b'A' { b'B' } else { b'A' };
            let changed = String::from_utf8(b).unwrap();
            if changed != t {
                assert!(key.decode(&changed).is_err(), "at {at}");
            }
        }
        // Another store's key.
        assert_eq!(TokenKey([2; 32]).decode(&t), Err(Refusal::Forged));
        assert_eq!(key.decode("hello"), Err(Refusal::NotAToken));
        assert_eq!(key.decode(&"x".repeat(5000)), Err(Refusal::NotAToken));
    }
}
