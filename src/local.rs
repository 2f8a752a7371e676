//! Local reads: every feed file, OPML file, URL list and standard input `rss` reads goes
//! through one capped reader. A file is read for at most `--max-body-bytes` (past it:
//! `RESPONSE_TOO_LARGE`) and within `--timeout` (a FIFO with no writer, a device that never
//! ends); standard input is capped in size only (a slow producer is waited for). Which files
//! may be read at all is the [`FileAccess`] policy (the MCP server reads none by default).

use std::io;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::{Error, Result};
use crate::payload::Payload;

/// Which local files may be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FileAccess {
    /// Any path the process can read (the CLI).
    #[default]
    Any,
    /// None: only `http`/`https` inputs (the MCP server's default).
    Deny,
    /// Regular files inside this directory tree (canonical: symlinks resolved).
    Under(PathBuf),
}

impl FileAccess {
    /// Access to the tree at `dir`, canonicalised; an error when it is not a directory.
    pub fn under(dir: &Path) -> Result<FileAccess> {
        let canonical = dir
            .canonicalize()
            .map_err(|e| Error::io("cannot open the directory", dir, e))?;
        if !canonical.is_dir() {
            return Err(Error::usage(format!(
                "--allow-files {} is not a directory",
                dir.display()
            )));
        }
        Ok(FileAccess::Under(canonical))
    }

    /// The path to read for the input `path`, or why it may not be read. A path outside the
    /// allowed tree is refused with the same answer whether or not it exists, so the
    /// refusal reveals nothing about the file system.
    pub fn check(&self, input: &str, path: &Path) -> Result<PathBuf> {
        let refuse = |reason: String| Error::InvalidUrl {
            input: input.to_owned(),
            reason,
            source: None,
        };
        match self {
            FileAccess::Any => Ok(path.to_path_buf()),
            FileAccess::Deny => Err(refuse(
                "local files are not read here: give an http(s) URL (the server reads files only \
                 under a directory given with --allow-files)"
                    .to_owned(),
            )),
            FileAccess::Under(root) => {
                let outside = || {
                    refuse(format!(
                        "the path is outside the directory this server may read ({})",
                        root.display()
                    ))
                };
                let joined = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    root.join(path)
                };
                match joined.canonicalize() {
                    Ok(real) if real.starts_with(root) => {
                        let meta = std::fs::metadata(&real)
                            .map_err(|e| Error::io("cannot read", &real, e))?;
                        if !meta.is_file() {
                            return Err(refuse("not a regular file".to_owned()));
                        }
                        Ok(real)
                    }
                    Ok(_) => Err(outside()),
                    // Missing: inside the tree it is a plain I/O error, outside a refusal.
                    Err(e) if lexically_under(&joined, root) => {
                        Err(Error::io("cannot read", &joined, e))
                    }
                    Err(_) => Err(outside()),
                }
            }
        }
    }
}

/// Whether `path`, with `.` and `..` applied, lies under `root` (no file system access).
fn lexically_under(path: &Path, root: &Path) -> bool {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(parts.last(), Some(Component::Normal(_))) {
                    parts.pop();
                } else {
                    return false;
                }
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect::<PathBuf>().starts_with(root)
}

/// The caps on one local read.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// Largest number of bytes read.
    pub max_bytes: u64,
    /// Time allowed for opening and reading a file.
    pub timeout: Duration,
}

/// Reads `reader` to its end, or fails once more than `cap` bytes came.
async fn read_capped(reader: impl AsyncRead + Unpin, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut body)
        .await?;
    Ok((body.len() as u64 <= cap).then_some(body))
}

/// Reads `reader` into a chunked body, or fails once more than `cap` bytes came.
async fn read_chunked(mut reader: impl AsyncRead + Unpin, cap: u64) -> io::Result<Option<Payload>> {
    let mut body = Payload::default();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Ok(Some(body));
        }
        if body.len() as u64 + n as u64 > cap {
            return Ok(None);
        }
        body.extend_from_slice(&buf[..n]);
    }
}

/// Reads the file at `path` within `limits`.
pub async fn read_file(path: &Path, limits: ReadLimits) -> Result<Payload> {
    let read = async {
        let file = tokio::fs::File::open(path)
            .await
            .map_err(|e| Error::io("cannot open", path, e))?;
        if file.metadata().await.is_ok_and(|m| m.is_dir()) {
            return Err(Error::io(
                "cannot read",
                path,
                io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"),
            ));
        }
        read_chunked(file, limits.max_bytes)
            .await
            .map_err(|e| Error::io("cannot read", path, e))?
            .ok_or_else(|| Error::TooLarge {
                what: format!("the file {}", path.display()),
                limit: limits.max_bytes,
            })
    };
    match tokio::time::timeout(limits.timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(Error::io(
            "timed out reading",
            path,
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "no end within {:?} (--timeout): a FIFO with no writer, or a device that never ends",
                    limits.timeout
                ),
            ),
        )),
    }
}

/// Reads standard input to its end, at most `max_bytes`.
pub async fn read_stdin(max_bytes: u64) -> Result<Vec<u8>> {
    read_capped(tokio::io::stdin(), max_bytes)
        .await
        .map_err(|e| Error::io("cannot read", "standard input", e))?
        .ok_or_else(|| Error::TooLarge {
            what: "standard input".to_owned(),
            limit: max_bytes,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_bytes: u64) -> ReadLimits {
        ReadLimits {
            max_bytes,
            timeout: Duration::from_secs(5),
        }
    }

    #[tokio::test]
    async fn an_endless_device_is_cut_at_the_cap() {
        let err = read_file(Path::new("/dev/zero"), limits(1 << 20))
            .await
            .unwrap_err();
        assert_eq!(err.code().as_str(), "RESPONSE_TOO_LARGE");
    }

    #[tokio::test]
    async fn a_file_at_the_cap_is_read_and_one_byte_over_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_file(&p, limits(5)).await.unwrap().into_vec(), b"12345");
        assert!(read_file(&p, limits(4)).await.is_err());
        let e = read_file(dir.path(), limits(5)).await.unwrap_err();
        assert_eq!(e.code().as_str(), "IO_ERROR");
    }

    #[test]
    fn paths_outside_the_allowed_tree_are_refused_alike_whether_they_exist_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("feeds");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.xml"), b"x").unwrap();
        std::fs::write(dir.path().join("secret.xml"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.xml"), root.join("link.xml")).unwrap();
        let access = FileAccess::under(&root).unwrap();
        let canonical_root = root.canonicalize().unwrap();
        assert_eq!(
            access.check("a.xml", Path::new("a.xml")).unwrap(),
            canonical_root.join("a.xml")
        );
        let refusal = |p: &str| {
            let e = access.check(p, Path::new(p)).unwrap_err();
            (e.code().as_str(), e.to_string().replace(p, "P"))
        };
        let existing = refusal("../secret.xml");
        assert_eq!(existing.0, "INVALID_URL");
        assert_eq!(refusal("../missing.xml"), existing);
        assert_eq!(refusal("/etc/passwd"), refusal("/etc/no-such-file"));
        assert_eq!(refusal("link.xml").0, "INVALID_URL");
        let missing_inside = access.check("b.xml", Path::new("b.xml")).unwrap_err();
        assert_eq!(missing_inside.code().as_str(), "IO_ERROR");
        let e = FileAccess::Deny
            .check("/etc/passwd", Path::new("/etc/passwd"))
            .unwrap_err();
        assert_eq!(e.code().as_str(), "INVALID_URL");
    }
}
