//! Reading corpus files: plain or gzip-compressed text, streamed in batches of whole lines.
//!
//! gzip (`.gz`), as Python's `gzip` module reads it (the Python backend's reader), so that both
//! backends accept and refuse the same files:
//!
//! * members are read one after another (multi-member files);
//! * zero bytes after a member are padding (tape blocks) and skipped; a member may follow them;
//! * a 0-byte file is an empty file;
//! * anything else (not gzip, a truncated member, a bad CRC, garbage after a member) is an
//!   `Error::Gzip` naming the file; I/O errors are `Error::Io`, naming the file too.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::bufread::GzDecoder;

use crate::error::{Error, Result};

/// Counts the bytes read from disk (for progress).
struct CountingReader<R> {
    inner: R,
    counter: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// The decompressed bytes of a gzip file: its members in order, zero padding between or after them
/// skipped.
pub struct GzipMembers<R: BufRead> {
    state: Members<R>,
}

enum Members<R: BufRead> {
    /// Before the first member: a 0-byte file has none.
    Start(R),
    Member(GzDecoder<R>),
    Done,
}

impl<R: BufRead> GzipMembers<R> {
    pub fn new(reader: R) -> Self {
        GzipMembers { state: Members::Start(reader) }
    }
}

/// Skip zero bytes; whether anything is left.
fn skip_zeros<R: BufRead>(reader: &mut R) -> std::io::Result<bool> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(false);
        }
        let zeros = buffer.iter().take_while(|&&b| b == 0).count();
        let rest = zeros < buffer.len();
        reader.consume(zeros);
        if rest {
            return Ok(true);
        }
    }
}

impl<R: BufRead> Read for GzipMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match std::mem::replace(&mut self.state, Members::Done) {
                Members::Done => return Ok(0),
                Members::Start(mut reader) => {
                    if reader.fill_buf()?.is_empty() {
                        return Ok(0);
                    }
                    self.state = Members::Member(GzDecoder::new(reader));
                }
                Members::Member(mut decoder) => {
                    let n = decoder.read(buf)?;
                    if n > 0 {
                        self.state = Members::Member(decoder);
                        return Ok(n);
                    }
                    // End of a member (its CRC and size checked): padding, another member or the end.
                    let mut reader = decoder.into_inner();
                    if skip_zeros(&mut reader)? {
                        self.state = Members::Member(GzDecoder::new(reader));
                    }
                }
            }
        }
    }
}

pub fn is_gzip(path: &Path) -> bool {
    path.extension().map_or(false, |e| e == "gz")
}

/// Fail early, naming the file, when a corpus path is missing or not a file.
pub fn check_file(path: &Path) -> Result<()> {
    let metadata = std::fs::metadata(path).map_err(|e| {
        let message = format!("corpus file not found ({e})");
        Error::io(path, std::io::Error::new(e.kind(), message))
    })?;
    if !metadata.is_file() {
        return Err(Error::io(path, std::io::Error::new(std::io::ErrorKind::Other, "corpus path is not a file")));
    }
    Ok(())
}

/// What the reader thread sends: the start of a file, or a batch of whole lines.
pub enum Batch {
    File,
    Lines(Vec<u8>),
}

/// Stream the (decompressed) text of `path` to `send` in batches of about `batch_bytes` that end at a
/// line end (the last may not). Stops early when `send` returns false.
pub fn read_file(
    path: &Path,
    batch_bytes: usize,
    raw_bytes: &Arc<AtomicU64>,
    send: &dyn Fn(Batch) -> bool,
) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let counting = CountingReader { inner: file, counter: raw_bytes.clone() };
    let gzip = is_gzip(path);
    let mut reader: Box<dyn Read> =
        if gzip { Box::new(GzipMembers::new(BufReader::with_capacity(1 << 16, counting))) } else { Box::new(counting) };
    // OS errors are I/O errors; anything else the decoder says is about the gzip data.
    let error = |e: std::io::Error| {
        if gzip && e.raw_os_error().is_none() {
            Error::Gzip { path: path.to_path_buf(), source: e }
        } else {
            Error::io(path, e)
        }
    };
    if !send(Batch::File) {
        return Ok(());
    }
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let mut buffer = std::mem::take(&mut carry);
        buffer.reserve(batch_bytes);
        let read = reader.by_ref().take(batch_bytes as u64).read_to_end(&mut buffer).map_err(error)?;
        if read == 0 {
            if !buffer.is_empty() {
                send(Batch::Lines(buffer));
            }
            return Ok(());
        }
        match memchr::memrchr(b'\n', &buffer) {
            Some(position) => {
                carry = buffer[position + 1..].to_vec();
                buffer.truncate(position + 1);
                if !send(Batch::Lines(buffer)) {
                    return Ok(());
                }
            }
            None => carry = buffer, // a line longer than a batch: keep reading
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn member(text: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(text).unwrap();
        encoder.finish().unwrap()
    }

    fn gunzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        GzipMembers::new(BufReader::with_capacity(7, data)).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn reads_gzip_as_python_does() {
        let one = member(b"one\n");
        let two = member(b"two\n");
        assert_eq!(gunzip(&one).unwrap(), b"one\n");
        assert_eq!(gunzip(&[one.clone(), two.clone()].concat()).unwrap(), b"one\ntwo\n");
        assert_eq!(gunzip(&[one.clone(), vec![0; 1000]].concat()).unwrap(), b"one\n");
        assert_eq!(gunzip(&[one.clone(), vec![0; 3], two.clone(), vec![0]].concat()).unwrap(), b"one\ntwo\n");
        assert_eq!(gunzip(&[member(b""), one.clone()].concat()).unwrap(), b"one\n");
        assert_eq!(gunzip(b"").unwrap(), b"");
        for bad in [
            one[..one.len() - 12].to_vec(),
            one[..one.len() - 3].to_vec(),
            one[..6].to_vec(),
            [one.clone(), b"garbage".to_vec()].concat(),
            [one.clone(), vec![0, 0, 1]].concat(),
            vec![0; 20],
            b"plain text\n".to_vec(),
            [&one[..one.len() - 8], &[0, 0, 0, 0], &one[one.len() - 4..]].concat(),
        ] {
            assert!(gunzip(&bad).is_err(), "{bad:?}");
        }
    }
}
