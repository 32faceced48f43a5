//! The crate's one error type. Every variant that concerns a file names it; the Python binding maps
//! the variants to Python exceptions (`bindings/python/src/error.rs`).

use std::fmt;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub enum Error {
    /// A valid tokenizer that qik-find cannot reproduce exactly: `family` names what it is ("WordPiece",
    /// "byte-level BPE", "SentencePiece Unigram", ...), `reason` what the Rust backend does not reproduce
    /// (a model, normaliser or pre-tokenizer it does not implement, an option such as BPE dropout, added
    /// tokens with flags it does not handle). Callers can fall back to the Hugging Face tokenizer.
    UnsupportedTokenizer { family: String, reason: String },
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
    /// An `UnsupportedTokenizer` whose family the caller names (`in_family`).
    pub fn unsupported(reason: impl Into<String>) -> Self {
        Error::UnsupportedTokenizer { family: String::new(), reason: reason.into() }
    }

    /// The same error, naming the tokenizer family if it does not yet.
    pub fn in_family(self, name: &str) -> Self {
        match self {
            Error::UnsupportedTokenizer { family, reason } if family.is_empty() => {
                Error::UnsupportedTokenizer { family: name.to_string(), reason }
            }
            other => other,
        }
    }

    /// The same error, saying which tokenizer file it comes from.
    pub fn in_file(self, path: &Path) -> Self {
        match self {
            Error::UnsupportedTokenizer { family, reason } => {
                Error::UnsupportedTokenizer { family, reason: format!("{reason} (in {})", path.display()) }
            }
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
            // The Python side catches UnsupportedTokenizerError (never this text), and logs it.
            Error::UnsupportedTokenizer { family, reason } if family.is_empty() => {
                write!(f, "unsupported tokenizer: {reason}")
            }
            Error::UnsupportedTokenizer { family, reason } => write!(f, "unsupported tokenizer ({family}): {reason}"),
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
