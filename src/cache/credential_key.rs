//! The cache's own secret: the key a private body's credential fingerprint is made with
//! (`Meta::credential_id`). Drawn once from the system's randomness and kept beside the
//! entries in `credential.key`, readable and writable by its owner only; so a cache file
//! read elsewhere (a backup, a shared disk) says nothing a guessed password can be checked
//! against, and two installs never share fingerprints. A key file others may read or
//! write, or that is damaged, is replaced; when none can be kept (a read-only cache), the
//! process draws one of its own, and its private bodies are served to itself only; with no
//! randomness at all, there is no key and private bodies are not cached.

use std::io::Write;
use std::path::{Path, PathBuf};

use hmac::KeyInit;
use sha2::Sha256;

/// The key file's name in the cache directory.
pub(crate) const KEY_FILE: &str = "credential.key";

/// The key a cache fingerprints credentials with (never printed).
#[derive(Clone)]
pub struct CredentialKey([u8; 32]);

impl std::fmt::Debug for CredentialKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialKey(..)")
    }
}

impl CredentialKey {
    /// An HMAC-SHA256 under this key.
    pub(crate) fn mac(&self) -> hmac::Hmac<Sha256> {
        <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("any key length")
    }

    /// A key drawn now (`None`: the system gave no randomness).
    fn drawn() -> Option<CredentialKey> {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).ok()?;
        Some(CredentialKey(k))
    }

    /// The key in `text` (64 hex digits and a line end), if it is one.
    fn parse(text: &str) -> Option<CredentialKey> {
        let mut k = [0u8; 32];
        hex::decode_to_slice(text.trim_ascii(), &mut k).ok()?;
        Some(CredentialKey(k))
    }
}

/// The key kept in `dir`: read, or drawn and kept (a key file others may read or write,
/// or damaged, is replaced); when none can be kept, one drawn for this process alone;
/// `None` when the system gives no randomness.
pub(crate) fn load_or_draw(dir: &Path) -> Option<CredentialKey> {
    let path = dir.join(KEY_FILE);
    for _ in 0..2 {
        match crate::local::read_private(&path, 1024) {
            Ok(text) => match CredentialKey::parse(&text) {
                Some(k) => return Some(k),
                None => return replace(&path).or_else(CredentialKey::drawn),
            },
            Err(crate::local::PrivateRead::Unreadable(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                match create(&path) {
                    Created::Kept(k) => return Some(k),
                    // Another process kept one first: read it.
                    Created::Exists => continue,
                    Created::Failed => return CredentialKey::drawn(),
                }
            }
            Err(crate::local::PrivateRead::Shared(_)) => {
                return replace(&path).or_else(CredentialKey::drawn);
            }
            Err(_) => return CredentialKey::drawn(),
        }
    }
    CredentialKey::drawn()
}

enum Created {
    Kept(CredentialKey),
    Exists,
    Failed,
}

/// A new key written to a temporary file (its owner's only) beside `path`, flushed.
fn written(path: &Path) -> Option<(CredentialKey, tempfile::NamedTempFile)> {
    let key = CredentialKey::drawn()?;
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut tmp = tempfile::NamedTempFile::new_in(dir).ok()?;
    writeln!(tmp, "{}", hex::encode(key.0)).ok()?;
    Some((key, tmp))
}

fn create(path: &Path) -> Created {
    let Some((key, tmp)) = written(path) else {
        return Created::Failed;
    };
    match crate::durable::persist_noclobber(tmp, path) {
        Ok(_) => Created::Kept(key),
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Created::Exists,
        Err(_) => Created::Failed,
    }
}

fn replace(path: &Path) -> Option<CredentialKey> {
    let (key, tmp) = written(path)?;
    crate::durable::persist(tmp, path).ok()?;
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmac::Mac;

    fn tag(k: &CredentialKey) -> Vec<u8> {
        let mut m = k.mac();
        m.update(b"x");
        m.finalize().into_bytes().to_vec()
    }

    #[test]
    fn a_key_is_drawn_once_kept_for_its_owner_and_replaced_when_others_may_touch_it() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let load = |d: &Path| load_or_draw(d).expect("randomness");
        let first = load(dir.path());
        let path = dir.path().join(KEY_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(tag(&load(dir.path())), tag(&first), "kept");
        let other = tempfile::tempdir().unwrap();
        assert_ne!(tag(&load(other.path())), tag(&first), "one per cache");
        // Another user could have read it: it is a secret no more.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let fresh = load(dir.path());
        assert_ne!(tag(&fresh), tag(&first));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(tag(&load(dir.path())), tag(&fresh));
        std::fs::write(&path, "damaged").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let again = load(dir.path());
        assert_eq!(tag(&load(dir.path())), tag(&again));
        assert!(!format!("{again:?}").contains(&hex::encode(again.0)));
    }
}
