//! Secrets by reference: read once, at start, from the environment variable or the file a
//! rule names (never from the config file itself), and held as a [`Secret`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::local::PrivateRead;
use crate::redact::Secret;

/// The largest secret file read.
const MAX_SECRET_BYTES: u64 = 64 * 1024;

/// Where a secret comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretRef {
    /// An environment variable.
    Env(String),
    /// A file readable only by its owner.
    File(PathBuf),
}

impl SecretRef {
    /// Where the secret comes from, for people (`env FEED_PASSWORD`, `file /run/…`).
    pub fn describe(&self) -> String {
        match self {
            SecretRef::Env(name) => format!("env {name}"),
            SecretRef::File(path) => format!("file {}", path.display()),
        }
    }
}

/// A secret as loaded: its value, or why it could not be read (a rule whose secret is
/// missing sends nothing: each request it matches fails saying why).
#[derive(Debug, Clone)]
pub struct SecretSlot {
    /// Where it comes from.
    pub from: SecretRef,
    /// The value, or what is wrong (the message never holds the value).
    pub value: Result<Secret, SecretError>,
}

/// Why a secret could not be read (its message never holds the value).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SecretError {
    /// The environment variable is not set, or holds what is not UTF-8 text.
    #[error("the environment variable {0} is not set (or holds what is not UTF-8 text)")]
    Unset(String),
    /// The secret is empty once its line ending is taken off.
    #[error("the secret in {} is empty", .0.describe())]
    Empty(SecretRef),
    /// The secret holds a control character, which no header may carry.
    #[error("the secret in {} holds a control character (a header cannot carry it)", .0.describe())]
    Control(SecretRef),
    /// The secret file could not be read as its owner's alone.
    #[error("the secret file {} {source}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why it was not read.
        #[source]
        source: Arc<PrivateRead>,
    },
}

/// Reads the secret `from` names; `env` reads environment variables.
pub(crate) fn load(from: SecretRef, env: &dyn Fn(&str) -> Option<String>) -> SecretSlot {
    let value = match &from {
        SecretRef::Env(name) => match env(name) {
            None => Err(SecretError::Unset(name.clone())),
            Some(v) => checked(v, &from),
        },
        SecretRef::File(path) => read_file(path).and_then(|v| checked(v, &from)),
    };
    SecretSlot { from, value }
}

/// A secret's value with its line ending taken off, refused when it is empty or holds a
/// character no header may carry.
fn checked(raw: String, from: &SecretRef) -> Result<Secret, SecretError> {
    let value = raw.trim_end_matches(['\n', '\r']);
    if value.is_empty() {
        return Err(SecretError::Empty(from.clone()));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(SecretError::Control(from.clone()));
    }
    Ok(Secret::new(value))
}

fn read_file(path: &std::path::Path) -> Result<String, SecretError> {
    crate::local::read_private(path, MAX_SECRET_BYTES).map_err(|e| SecretError::File {
        path: path.to_owned(),
        source: Arc::new(e),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_comes_from_its_variable_or_a_private_file_only() {
        let env = |n: &str| (n == "FEED_PASS").then(|| "hunter2\n".to_owned());
        let s = load(SecretRef::Env("FEED_PASS".into()), &env);
        assert_eq!(s.value.unwrap().expose(), "hunter2");
        let missing = load(SecretRef::Env("NOPE".into()), &env);
        assert!(
            missing
                .value
                .unwrap_err()
                .to_string()
                .contains("NOPE is not set")
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "tok-123\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let open = load(SecretRef::File(path.clone()), &env);
            let why = open.value.unwrap_err().to_string();
            assert!(why.contains("readable by other users"), "{why}");
            assert!(!why.contains("tok-123"));
            // Issue 35: a file others may write may hold what they chose.
            for mode in [0o620, 0o602, 0o622] {
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
                let why = load(SecretRef::File(path.clone()), &env)
                    .value
                    .unwrap_err()
                    .to_string();
                assert!(why.contains("writable by other users"), "{mode:o}: {why}");
            }
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let private = load(SecretRef::File(path), &env);
        assert_eq!(private.value.unwrap().expose(), "tok-123");
        let odd = load(SecretRef::Env("X".into()), &|_| Some("a\u{7}b".to_owned()));
        assert!(
            odd.value
                .unwrap_err()
                .to_string()
                .contains("control character")
        );
    }
}
