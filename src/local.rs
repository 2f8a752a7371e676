//! Local reads: every feed file, OPML file, URL list and standard input `rss` reads goes
//! through one capped reader. A file is read for at most `--max-body-bytes` (past it:
//! `RESPONSE_TOO_LARGE`) and within `--timeout` (a FIFO with no writer, a device that never
//! ends); standard input is capped in size only (a slow producer is waited for). Which files
//! may be read at all is the [`FileAccess`] policy (the MCP server reads none by default).

use std::io;
use std::path::{Component, Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::{Error, Result};
use crate::payload::Payload;

pub use crate::config::{FileAccess, ReadLimits};

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

    /// Reads the input `path` if this policy allows it, within `limits`. A path outside
    /// the allowed tree is refused with the same answer whether or not it exists (through
    /// `..`, an absolute path, or a symlink inside the tree that points out of it), so the
    /// refusal reveals nothing about the file system; under a tree, the file is opened
    /// beneath the tree's directory handle (`openat2` with `RESOLVE_BENEATH` where the
    /// kernel has it), so a path swapped after a check cannot escape it either.
    pub async fn read(&self, input: &str, path: &Path, limits: ReadLimits) -> Result<Payload> {
        let refuse = |reason: String| Error::InvalidUrl {
            input: input.to_owned(),
            reason,
            source: None,
        };
        match self {
            FileAccess::Any => read_file(path, limits).await,
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
                let relative = if path.is_absolute() {
                    match normalized(path)
                        .and_then(|p| p.strip_prefix(root).ok().map(Path::to_path_buf))
                    {
                        Some(r) => r,
                        None => return Err(outside()),
                    }
                } else {
                    path.to_path_buf()
                };
                let shown = root.join(&relative);
                let (root, rel) = (root.clone(), relative.clone());
                let open = tokio::task::spawn_blocking(move || open_beneath(&root, &rel));
                let opened = match tokio::time::timeout(limits.timeout, open).await {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => return Err(Error::internal_from("a file open failed", e)),
                    Err(_) => return Err(timed_out(&shown, limits)),
                };
                let file = match opened {
                    Ok(file) => file,
                    Err(Beneath::Escapes) => return Err(outside()),
                    Err(Beneath::NotAFile) => return Err(refuse("not a regular file".to_owned())),
                    Err(Beneath::Io(e)) => return Err(Error::io("cannot read", &shown, e)),
                };
                read_open(tokio::fs::File::from_std(file), &shown, limits).await
            }
        }
    }
}

/// Why a file beneath a directory could not be opened.
enum Beneath {
    /// The path leads out of the directory (`..`, an absolute symlink, one pointing up).
    Escapes,
    /// It is a directory, a FIFO, a device: not a regular file.
    NotAFile,
    /// The file system said no (a missing file inside the tree, say).
    Io(io::Error),
}

/// Opens `rel` beneath `root`, refusing any way out of it, without blocking on a FIFO.
fn open_beneath(root: &Path, rel: &Path) -> std::result::Result<std::fs::File, Beneath> {
    use cap_std::fs::OpenOptionsExt;
    let dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority())
        .map_err(Beneath::Io)?;
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK);
    let file = match dir.open_with(rel, &options) {
        Ok(f) => f,
        // cap-std reports an escape as a permission error of its own (not the OS's).
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() => {
            return Err(Beneath::Escapes);
        }
        Err(e) => return Err(Beneath::Io(e)),
    };
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file.into_std()),
        Ok(_) => Err(Beneath::NotAFile),
        Err(e) => Err(Beneath::Io(e)),
    }
}

/// Opens `path` for reading if it is a regular file, without waiting on what is not: a FIFO
/// with no writer, a device or a directory is an [`io::ErrorKind::InvalidInput`] error at
/// once (the open does not block, and the type is read from the opened handle, so a path
/// swapped after a check is judged as what was opened). For the files `rss` reads its own
/// settings from: the config file, a secret file, a token file.
pub(crate) fn open_regular(path: &Path) -> io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((file, meta))
}

/// Why a file that must be its owner's alone was not read ([`read_private`]).
#[derive(Debug)]
pub enum PrivateRead {
    /// The file system said no (a missing file, a directory that cannot be read).
    Unreadable(io::Error),
    /// It is a FIFO, a device or a directory.
    NotAFile,
    /// Others may read it or write it (its mode).
    Shared(u32),
    /// It holds more than the most its use allows.
    TooLarge(u64),
}

impl std::error::Error for PrivateRead {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrivateRead::Unreadable(e) => Some(e),
            _ => None,
        }
    }
}

impl std::fmt::Display for PrivateRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrivateRead::Unreadable(e) => write!(f, "cannot be read: {e}"),
            PrivateRead::NotAFile => f.write_str("is not a regular file"),
            PrivateRead::Shared(mode) => write!(
                f,
                "is {} by other users (mode {mode:o}): it must be readable and writable by its \
                 owner only (chmod 600)",
                match (mode & 0o044 != 0, mode & 0o022 != 0) {
                    (true, true) => "readable and writable",
                    (true, false) => "readable",
                    _ => "writable",
                }
            ),
            PrivateRead::TooLarge(max) => write!(f, "is over {max} bytes"),
        }
    }
}

/// The text of `path`, a file holding a secret (a secret file of the config, a token file):
/// a regular file ([`open_regular`]), readable and writable by its owner only (one that
/// others may write may hold what they chose), of at most `max` bytes.
pub(crate) fn read_private(path: &Path, max: u64) -> Result<String, PrivateRead> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let (file, meta) = open_regular(path).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidInput => PrivateRead::NotAFile,
        _ => PrivateRead::Unreadable(e),
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o066 != 0 {
        return Err(PrivateRead::Shared(mode));
    }
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(PrivateRead::Unreadable)?;
    if text.len() as u64 > max {
        return Err(PrivateRead::TooLarge(max));
    }
    Ok(text)
}

/// `path` with `.` and `..` applied, without touching the file system (`None` when `..`
/// climbs above its root).
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(parts.last(), Some(Component::Normal(_))) {
                    parts.pop();
                } else {
                    return None;
                }
            }
            other => parts.push(other),
        }
    }
    Some(parts.iter().collect())
}

fn timed_out(path: &Path, limits: ReadLimits) -> Error {
    Error::io(
        "timed out reading",
        path,
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "no end within {:?} (--timeout): a FIFO with no writer, or a device that never ends",
                limits.timeout
            ),
        ),
    )
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
    let opened = tokio::time::timeout(limits.timeout, tokio::fs::File::open(path)).await;
    match opened {
        Ok(Ok(file)) => read_open(file, path, limits).await,
        Ok(Err(e)) => Err(Error::io("cannot open", path, e)),
        Err(_) => Err(timed_out(path, limits)),
    }
}

/// Reads the opened `file` (shown as `path`) within `limits`.
async fn read_open(file: tokio::fs::File, path: &Path, limits: ReadLimits) -> Result<Payload> {
    let read = async {
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
        Err(_) => Err(timed_out(path, limits)),
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
    use std::time::Duration;

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

    #[tokio::test]
    async fn paths_outside_the_allowed_tree_are_refused_alike_whether_they_exist_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("feeds");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.xml"), b"x").unwrap();
        std::fs::write(dir.path().join("secret.xml"), b"x").unwrap();
        let link =
            |name: &str, to: PathBuf| std::os::unix::fs::symlink(to, root.join(name)).unwrap();
        link("link.xml", dir.path().join("secret.xml"));
        link("dangling.xml", dir.path().join("missing.xml"));
        link("up.xml", PathBuf::from("../secret.xml"));
        link("up-missing.xml", PathBuf::from("../missing.xml"));
        link("inside.xml", PathBuf::from("a.xml"));
        let access = FileAccess::under(&root).unwrap();
        let l = limits(1 << 20);
        let read = |p: &'static str| {
            let access = access.clone();
            async move { access.read(p, Path::new(p), l).await }
        };
        assert_eq!(read("a.xml").await.unwrap().into_vec(), b"x");
        assert_eq!(read("inside.xml").await.unwrap().into_vec(), b"x");
        let canonical = root.canonicalize().unwrap();
        let abs = canonical.join("a.xml");
        let abs = abs.to_str().unwrap().to_owned();
        assert_eq!(
            access
                .read(&abs, Path::new(&abs), l)
                .await
                .unwrap()
                .into_vec(),
            b"x"
        );
        let refusal = |p: &'static str| {
            let read = read(p);
            async move {
                let e = read.await.unwrap_err();
                (e.code().as_str(), e.to_string().replace(p, "P"))
            }
        };
        let existing = refusal("../secret.xml").await;
        assert_eq!(existing.0, "INVALID_URL");
        assert_eq!(refusal("../missing.xml").await, existing);
        assert_eq!(
            refusal("/etc/passwd").await,
            refusal("/etc/no-such-file").await
        );
        // Through a symlink inside the tree: the same answer whether the target exists.
        assert_eq!(refusal("link.xml").await, existing);
        assert_eq!(refusal("dangling.xml").await, existing);
        assert_eq!(refusal("up.xml").await, existing);
        assert_eq!(refusal("up-missing.xml").await, existing);
        let missing_inside = read("b.xml").await.unwrap_err();
        assert_eq!(missing_inside.code().as_str(), "IO_ERROR");
        let e = FileAccess::Deny
            .read("/etc/passwd", Path::new("/etc/passwd"), l)
            .await
            .unwrap_err();
        assert_eq!(e.code().as_str(), "INVALID_URL");
    }

    #[tokio::test]
    async fn a_fifo_in_the_allowed_tree_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.xml");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let access = FileAccess::under(dir.path()).unwrap();
        let started = std::time::Instant::now();
        let e = access
            .read("pipe.xml", Path::new("pipe.xml"), limits(1 << 20))
            .await
            .unwrap_err();
        assert_eq!(e.code().as_str(), "INVALID_URL", "{e}");
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(4));
    }
}
