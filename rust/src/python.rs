//! `bioptimus_hf._qikfind`: the Python binding (feature "python"). Thin: converts arguments, results
//! and errors; the logic lives in the library modules.
//!
//! Errors (`crate::Error`) become Python exceptions; the two project-specific classes are defined in
//! Python (so that they exist, and can be caught, without the extension) and looked up here:
//!
//! | variant | Python exception |
//! |---|---|
//! | `UnsupportedTokenizer` | `bioptimus_hf.vocabulary.qikfind.UnsupportedTokenizerError` (a `ValueError`; `.family`, `.reason`) |
//! | `InvalidTokenizer`, `InvalidArgument` | `ValueError` |
//! | `Io` | `FileNotFoundError` or another `OSError`, with `filename` set |
//! | `Gzip` | `bioptimus_hf.utils.corpus_reader.CorpusFileError` (a `ValueError`; the message names the file) |
//! | `Aborted` | the exception the progress callback raised, or `KeyboardInterrupt` |

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::exceptions::{PyFileNotFoundError, PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;

use crate::error::Error;
use crate::finder::{self, Options};
use crate::search::{unique_targets, SearchBuffers, TargetSearch};
use crate::text;
use crate::tokenizer::{Scratch, Token, Tokenizer as RustTokenizer};

type RawContext = (String, usize, usize, u64);
type ScanResult = (HashMap<u32, Vec<RawContext>>, HashMap<&'static str, u64>);

/// The Python class `module.name`, an exception class defined by the pure-Python package.
fn python_class<'py>(py: Python<'py>, module: &str, name: &str) -> PyResult<&'py PyType> {
    Ok(py.import(module)?.getattr(name)?.downcast::<PyType>()?)
}

/// `module.name(message)`; the import error itself if the class cannot be found (a broken install).
fn python_error(py: Python<'_>, module: &str, name: &str, message: String) -> PyErr {
    match python_class(py, module, name) {
        Ok(class) => PyErr::from_type(class, message),
        Err(error) => error,
    }
}

fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::UnsupportedTokenizer { family, reason } => {
            match python_class(py, "bioptimus_hf.vocabulary.qikfind", "UnsupportedTokenizerError") {
                Ok(class) => PyErr::from_type(class, (message, family, reason)),
                Err(error) => error,
            }
        }
        Error::Gzip { .. } => python_error(py, "bioptimus_hf.utils.corpus_reader", "CorpusFileError", message),
        Error::Io { path, source } => {
            // OSError(errno, strerror, filename): str() names the file, .filename holds it.
            let not_found = source.kind() == std::io::ErrorKind::NotFound;
            let errno = source.raw_os_error().unwrap_or(if not_found { 2 } else { 0 });
            let args = (errno, source.to_string(), path.display().to_string());
            if not_found {
                PyFileNotFoundError::new_err(args)
            } else {
                PyOSError::new_err(args)
            }
        }
        Error::InvalidTokenizer(_) | Error::InvalidArgument(_) | Error::Aborted(_) => PyValueError::new_err(message),
    }
}

fn load(py: Python<'_>, tokenizer_json: &str) -> PyResult<RustTokenizer> {
    RustTokenizer::from_tokenizer_json(tokenizer_json).map_err(|e| to_py_err(py, e))
}

/// FindOptions(*, max_per_token=20, seed=0, max_context_chars=1000, num_threads=0, batch_bytes=4 MiB):
/// how `find_contexts` samples (defaults: those of the Rust `Options`). num_threads=0: all cores.
#[pyclass(module = "bioptimus_hf._qikfind")]
#[derive(Clone)]
struct FindOptions {
    #[pyo3(get, set)]
    max_per_token: usize,
    #[pyo3(get, set)]
    seed: u64,
    #[pyo3(get, set)]
    max_context_chars: usize,
    #[pyo3(get, set)]
    num_threads: usize,
    #[pyo3(get, set)]
    batch_bytes: usize,
}

impl From<&FindOptions> for Options {
    fn from(o: &FindOptions) -> Self {
        Options {
            max_per_token: o.max_per_token,
            seed: o.seed,
            max_context_chars: o.max_context_chars,
            num_threads: o.num_threads,
            batch_bytes: o.batch_bytes,
        }
    }
}

#[pymethods]
impl FindOptions {
    #[new]
    #[args(
        "*",
        max_per_token = "None",
        seed = "None",
        max_context_chars = "None",
        num_threads = "None",
        batch_bytes = "None"
    )]
    fn new(
        py: Python<'_>,
        max_per_token: Option<usize>,
        seed: Option<u64>,
        max_context_chars: Option<usize>,
        num_threads: Option<usize>,
        batch_bytes: Option<usize>,
    ) -> PyResult<Self> {
        let d = Options::default();
        let options = FindOptions {
            max_per_token: max_per_token.unwrap_or(d.max_per_token),
            seed: seed.unwrap_or(d.seed),
            max_context_chars: max_context_chars.unwrap_or(d.max_context_chars),
            num_threads: num_threads.unwrap_or(d.num_threads),
            batch_bytes: batch_bytes.unwrap_or(d.batch_bytes),
        };
        Options::from(&options).validate().map_err(|e| to_py_err(py, e))?;
        Ok(options)
    }

    fn __repr__(&self) -> String {
        format!(
            "FindOptions(max_per_token={}, seed={}, max_context_chars={}, num_threads={}, batch_bytes={})",
            self.max_per_token, self.seed, self.max_context_chars, self.num_threads, self.batch_bytes
        )
    }
}

/// find_contexts(paths, tokenizer, targets, options=None, *, progress=None)
///     -> ({token_id: [(sentence, start, end, sentence_index)]}, stats dict)
///
/// `tokenizer`: a `Tokenizer` or the text of a tokenizer.json. `options`: a FindOptions (defaults when
/// None); `progress(bytes_read)` is called after each batch.
#[pyfunction(options = "None", "*", progress = "None")]
fn find_contexts(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    tokenizer: &PyAny,
    targets: Vec<u32>,
    options: Option<FindOptions>,
    progress: Option<PyObject>,
) -> PyResult<ScanResult> {
    let options = options.as_ref().map_or_else(Options::default, Options::from);
    let loaded;
    let held: PyRef<Tokenizer>;
    let tokenizer: &RustTokenizer = if let Ok(json) = tokenizer.extract::<&str>() {
        loaded = load(py, json)?;
        &loaded
    } else {
        held = tokenizer.extract()?;
        &held.inner
    };
    // What stopped the scan from the callback: the exception it raised, or Ctrl-C.
    let mut stopped: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut report = |bytes: u64| -> Result<(), String> {
            Python::with_gil(|py| {
                let outcome = py.check_signals().and_then(|()| match &progress {
                    Some(callback) => callback.call1(py, (bytes,)).map(drop),
                    None => Ok(()),
                });
                outcome.map_err(|error| {
                    let message = error.to_string();
                    stopped = Some(error);
                    message
                })
            })
        };
        finder::find_contexts(&paths, &tokenizer, &targets, &options, &mut report)
    });
    let (found, stats) = match result {
        Ok(found) => found,
        Err(Error::Aborted(_)) => {
            return Err(stopped.unwrap_or_else(|| PyKeyboardInterrupt::new_err("qik-find interrupted")))
        }
        Err(error) => return Err(to_py_err(py, error)),
    };
    let contexts = found
        .into_iter()
        .map(|(t, list)| (t, list.into_iter().map(|f| (f.sentence, f.start, f.end, f.sentence_index)).collect()))
        .collect();
    Ok((contexts, stats.as_pairs().into_iter().collect()))
}

/// Tokenizer(tokenizer_json): the Rust tokenizer of the family the tokenizer.json belongs to (WordPiece
/// or byte-level BPE), or UnsupportedTokenizerError (with `.family` and `.reason`). `find_contexts`
/// takes it in place of the JSON; `tokenize` and `find_targets` are there for differential tests
/// against Hugging Face tokenizers. `WordPieceTokenizer` is the same class (its former name).
#[pyclass(module = "bioptimus_hf._qikfind")]
struct Tokenizer {
    inner: RustTokenizer,
}

/// Code point offsets of byte offsets that are character boundaries of `text` (any order).
fn char_offsets(text: &str, tokens: &[Token]) -> Vec<(u32, usize, usize)> {
    // Byte offset -> code point offset, for every boundary (text.len() included).
    let mut chars_before = vec![0usize; text.len() + 1];
    let mut count = 0;
    for (byte, c) in text.char_indices() {
        chars_before[byte] = count;
        count += 1;
        for i in 1..c.len_utf8() {
            chars_before[byte + i] = count; // not a boundary: never asked for
        }
    }
    chars_before[text.len()] = count;
    tokens.iter().map(|t| (t.id, chars_before[t.start], chars_before[t.end])).collect()
}

#[pymethods]
impl Tokenizer {
    #[new]
    fn new(py: Python<'_>, tokenizer_json: &str) -> PyResult<Self> {
        Ok(Tokenizer { inner: load(py, tokenizer_json)? })
    }

    /// The family served: "WordPiece" or "byte-level BPE".
    #[getter]
    fn family(&self) -> &'static str {
        self.inner.family().name()
    }

    /// What the family is made of ("BertNormalizer + BertPreTokenizer + WordPiece", ...).
    #[getter]
    fn family_description(&self) -> &'static str {
        self.inner.family().description()
    }

    /// [(id, start, end)] with code point offsets, no special tokens added.
    fn tokenize(&self, py: Python<'_>, text: &str) -> Vec<(u32, usize, usize)> {
        py.allow_threads(|| {
            let mut tokens = Vec::new();
            self.inner.tokenize(text, &mut Scratch::default(), &mut tokens);
            char_offsets(text, &tokens)
        })
    }

    /// The target tokens of each text as the corpus scan finds them (prefilter, then target search):
    /// [[(id, start, end)]] with code point offsets, in order; [] where the prefilter rules a text out.
    fn find_targets(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        targets: Vec<u32>,
    ) -> PyResult<Vec<Vec<(u32, usize, usize)>>> {
        let targets = unique_targets(&self.inner, &targets).map_err(|e| to_py_err(py, e))?;
        Ok(py.allow_threads(|| {
            let search = TargetSearch::new(&self.inner, &targets);
            let mut buffers = SearchBuffers::default();
            let mut hits = Vec::new();
            texts
                .iter()
                .map(|text| {
                    search.search(text, &mut buffers, &mut hits);
                    let tokens: Vec<Token> = hits
                        .iter()
                        .map(|&(slot, start, end)| Token { id: targets[slot as usize], start, end })
                        .collect();
                    char_offsets(text, &tokens)
                })
                .collect()
        }))
    }

    /// Byte-level BPE: the pre-tokens of `text` (no added-token splitting) as (start, end) code point
    /// offsets, as `pre_tokenizer.pre_tokenize_str` gives them. ValueError for WordPiece.
    fn pre_tokenize(&self, text: &str) -> PyResult<Vec<(usize, usize)>> {
        match &self.inner {
            RustTokenizer::ByteLevelBpe(t) => {
                let spans: Vec<Token> =
                    t.pre_tokenize(text).into_iter().map(|(start, end)| Token { id: 0, start, end }).collect();
                Ok(char_offsets(text, &spans).into_iter().map(|(_, a, b)| (a, b)).collect())
            }
            RustTokenizer::WordPiece(_) => Err(PyValueError::new_err("pre_tokenize: byte-level BPE only")),
        }
    }

    /// The normaliser's output for `text` (no added-token splitting), as `normalizer.normalize_str`
    /// (the text itself for byte-level BPE, which has none).
    fn normalize(&self, text: &str) -> String {
        self.inner.normalize_str(text)
    }
}

/// split_sentences(line, max_context_chars) -> ([sentences], chunked)
#[pyfunction]
fn split_sentences(line: &str, max_context_chars: usize) -> PyResult<(Vec<String>, usize)> {
    if max_context_chars == 0 {
        return Err(PyValueError::new_err("max_context_chars must be >= 1"));
    }
    let mut ranges = Vec::new();
    let chunked = text::split_sentences(line, max_context_chars, &mut ranges);
    Ok((ranges.into_iter().map(|(a, b)| line[a..b].to_string()).collect(), chunked))
}

#[pymodule]
fn _qikfind(_py: Python<'_>, module: &PyModule) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(find_contexts, module)?)?;
    module.add_function(wrap_pyfunction!(split_sentences, module)?)?;
    module.add_class::<FindOptions>()?;
    module.add_class::<Tokenizer>()?;
    module.add("WordPieceTokenizer", module.getattr("Tokenizer")?)?;
    module.add("TOKENIZERS_REFERENCE", crate::generated::bert_unicode::REFERENCE)?;
    Ok(())
}
