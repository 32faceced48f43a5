//! `bioptimus_hf._qikfind`: the Python binding (feature "python"). Thin: argument conversion only.

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

use crate::finder::{self, Options};
use crate::text;
use crate::wordpiece::{BertWordPiece, Scratch};

type RawContext = (String, usize, usize, u64);
type ScanResult = (HashMap<u32, Vec<RawContext>>, HashMap<&'static str, u64>);

/// find_contexts(paths, tokenizer_json, targets, max_per_token, seed, max_context_chars, num_threads,
/// progress) -> ({token_id: [(sentence, start, end, sentence_index)]}, stats dict)
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn find_contexts(
    py: Python<'_>,
    paths: Vec<String>,
    tokenizer_json: &str,
    targets: Vec<u32>,
    max_per_token: usize,
    seed: u64,
    max_context_chars: usize,
    num_threads: usize,
    progress: Option<PyObject>,
) -> PyResult<ScanResult> {
    let tokenizer = BertWordPiece::from_tokenizer_json(tokenizer_json).map_err(|e| PyValueError::new_err(e.0))?;
    let options = Options { max_per_token, seed, max_context_chars, num_threads, ..Options::default() };
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    let mut interrupted = false;
    let result = py.allow_threads(|| {
        let mut report = |bytes: u64| -> Result<(), String> {
            Python::with_gil(|py| {
                if py.check_signals().is_err() {
                    interrupted = true;
                    return Err("interrupted".to_string());
                }
                if let Some(callback) = &progress {
                    callback.call1(py, (bytes,)).map_err(|e| e.to_string())?;
                }
                Ok(())
            })
        };
        finder::find_contexts(&paths, &tokenizer, &targets, &options, &mut report)
    });
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err("qik-find interrupted"));
    }
    let (found, stats) = result.map_err(|e| PyValueError::new_err(e.0))?;
    let contexts = found
        .into_iter()
        .map(|(t, list)| (t, list.into_iter().map(|f| (f.sentence, f.start, f.end, f.sentence_index)).collect()))
        .collect();
    Ok((contexts, stats.as_pairs().into_iter().collect()))
}

/// The Rust BERT WordPiece tokenizer, exposed for differential tests against Hugging Face tokenizers.
#[pyclass]
struct WordPieceTokenizer {
    inner: BertWordPiece,
}

#[pymethods]
impl WordPieceTokenizer {
    #[new]
    fn new(tokenizer_json: &str) -> PyResult<Self> {
        let inner = BertWordPiece::from_tokenizer_json(tokenizer_json).map_err(|e| PyValueError::new_err(e.0))?;
        Ok(WordPieceTokenizer { inner })
    }

    /// [(id, start, end)] with code point offsets, no special tokens added.
    fn tokenize(&self, text: &str) -> Vec<(u32, usize, usize)> {
        let mut tokens = Vec::new();
        self.inner.tokenize(text, &mut Scratch::default(), &mut tokens);
        tokens
            .iter()
            .map(|t| {
                let start = text[..t.start].chars().count();
                (t.id, start, start + text[t.start..t.end].chars().count())
            })
            .collect()
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
    module.add_class::<WordPieceTokenizer>()?;
    Ok(())
}
