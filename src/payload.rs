//! A body held in chunks, so a parser that reads it front to back can free what it has
//! read: a 35 MB feed is never in memory twice (as bytes and as parsed items).

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};

/// The size bodies are gathered into.
const CHUNK: usize = 1 << 20;

/// A body: bytes in chunks of about a mebibyte.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Payload {
    chunks: VecDeque<Vec<u8>>,
    len: usize,
}

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Payload {
        let len = bytes.len();
        let mut chunks = VecDeque::new();
        if len > 0 {
            chunks.push_back(bytes);
        }
        Payload { chunks, len }
    }
}

impl From<&[u8]> for Payload {
    fn from(bytes: &[u8]) -> Payload {
        let mut p = Payload::default();
        p.extend_from_slice(bytes);
        p
    }
}

impl Payload {
    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, mut bytes: &[u8]) {
        self.len += bytes.len();
        while !bytes.is_empty() {
            match self.chunks.back_mut() {
                Some(last) if last.len() < CHUNK => {
                    let n = (CHUNK - last.len()).min(bytes.len());
                    last.extend_from_slice(&bytes[..n]);
                    bytes = &bytes[n..];
                }
                _ => {
                    let n = CHUNK.min(bytes.len());
                    let mut chunk = Vec::with_capacity(CHUNK.min(bytes.len().max(64 * 1024)));
                    chunk.extend_from_slice(&bytes[..n]);
                    self.chunks.push_back(chunk);
                    bytes = &bytes[n..];
                }
            }
        }
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunks, in order.
    pub fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        self.chunks.iter().map(Vec::as_slice)
    }

    /// The first `n` bytes (fewer when the body is shorter), for sniffing.
    pub fn head(&self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n.min(self.len));
        for c in self.chunks() {
            let take = (n - out.len()).min(c.len());
            out.extend_from_slice(&c[..take]);
            if out.len() == n {
                break;
            }
        }
        out
    }

    /// The whole body in one buffer.
    pub fn into_vec(mut self) -> Vec<u8> {
        if self.chunks.len() == 1 {
            return self.chunks.pop_front().unwrap_or_default();
        }
        let mut out = Vec::with_capacity(self.len);
        for c in self.chunks {
            out.extend_from_slice(&c);
        }
        out
    }

    /// A reader that frees each chunk once it has been read past.
    pub fn into_reader(self) -> PayloadReader {
        PayloadReader {
            chunks: self.chunks,
            pos: 0,
        }
    }
}

/// Reads a [`Payload`] front to back, dropping chunks as it goes.
#[derive(Debug)]
pub struct PayloadReader {
    chunks: VecDeque<Vec<u8>>,
    pos: usize,
}

/// `Read::read` for a reader whose buffer is the source: copies from `fill_buf`.
pub(crate) fn read_buffered(r: &mut impl BufRead, buf: &mut [u8]) -> io::Result<usize> {
    let available = r.fill_buf()?;
    let n = available.len().min(buf.len());
    buf[..n].copy_from_slice(&available[..n]);
    r.consume(n);
    Ok(n)
}

impl Read for PayloadReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        read_buffered(self, buf)
    }
}

impl BufRead for PayloadReader {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.chunks.front().is_some_and(|c| self.pos >= c.len()) {
            self.chunks.pop_front();
            self.pos = 0;
        }
        Ok(self.chunks.front().map_or(&[][..], |c| &c[self.pos..]))
    }

    fn consume(&mut self, amt: usize) {
        self.pos += amt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_back_in_order_whatever_the_chunking() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut p = Payload::default();
        for piece in data.chunks(70_001) {
            p.extend_from_slice(piece);
        }
        assert_eq!(p.len(), data.len());
        assert!(p.chunks().count() >= 3);
        assert_eq!(p.head(10), data[..10]);
        let mut back = Vec::new();
        p.clone().into_reader().read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
        assert_eq!(p.into_vec(), data);
    }

    #[test]
    fn a_reader_lets_go_of_what_it_has_read() {
        let mut p = Payload::default();
        p.extend_from_slice(&vec![1u8; 3 * CHUNK]);
        let mut r = p.into_reader();
        let mut buf = vec![0u8; CHUNK + 10];
        r.read_exact(&mut buf).unwrap();
        r.fill_buf().unwrap();
        assert_eq!(r.chunks.len(), 2);
    }
}
