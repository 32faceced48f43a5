//! The crate's one error type. Every variant that concerns a file names it; the Python binding maps
//! the variants to Python exceptions (`src/python.rs`).

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Error {
    /// A valid tokenizer that qik-find cannot reproduce exactly (not BertNormalizer + BertPreTokenizer +
    /// WordPiece, or added tokens with `lstrip`, `rstrip`, `single_word` or `normalized`): callers can
    /// fall back to the Hugging Face tokenizer.
    UnsupportedTokenizer(String),
    /// Tokenizer files that cannot be used: invalid JSON, no vocabulary, bad ids, unknown `[UNK]`.
    InvalidTokenizer(String),
    /// A file that cannot be opened or read.
    Io { path: PathBuf, source: std::io::Error },
    /// A `.gz` corpus file that is corrupt or truncated.
    Gzip { path: PathBuf, source: std::io::Error },
    /// An argument out of range: an option value, a target id outside the vocabulary.
    InvalidArgument(String),
    /// The progress callback stopped the scan (with its reason).
    Aborted(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The same error, saying which tokenizer file it comes from.
    pub fn in_file(self, path: &Path) -> Self {
        match self {
            Error::UnsupportedTokenizer(m) => Error::UnsupportedTokenizer(format!("{}: {m}", path.display())),
            Error::InvalidTokenizer(m) => Error::InvalidTokenizer(format!("{}: {m}", path.display())),
            other => other,
        }
    }

    /// An I/O error while reading `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The Python side used to recognise this prefix; it now catches UnsupportedTokenizerError.
            Error::UnsupportedTokenizer(m) => write!(f, "unsupported tokenizer: {m}"),
            Error::InvalidTokenizer(m) => write!(f, "invalid tokenizer: {m}"),
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Gzip { path, source } => {
                write!(f, "corpus file {}: corrupt or truncated gzip stream ({source})", path.display())
            }
            Error::InvalidArgument(m) | Error::Aborted(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } | Error::Gzip { source, .. } => Some(source),
            _ => None,
        }
    }
}
