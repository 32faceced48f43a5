//! `Tokenizer`: the library's tokenizer of one family, for Python (differential tests against Hugging Face
//! `tokenizers`, and a tokenizer loaded once for several scans).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use qikfind::search::target::{unique_targets, SearchBuffers, TargetSearch};
use qikfind::tokenizer::{Scratch, Token, Tokenizer as RustTokenizer};

use crate::error::to_py_err;

/// The library's tokenizer of a tokenizer.json, or its error as a Python exception.
pub fn load(py: Python<'_>, tokenizer_json: &str) -> PyResult<RustTokenizer> {
    RustTokenizer::from_tokenizer_json(tokenizer_json).map_err(|e| to_py_err(py, e))
}

/// Tokenizer(tokenizer_json): the Rust tokenizer of the family the tokenizer.json belongs to (WordPiece
/// or byte-level BPE), or UnsupportedTokenizerError (with `.family` and `.reason`). `find_contexts`
/// takes it in place of the JSON; `tokenize` and `find_targets` are there for differential tests
/// against Hugging Face tokenizers. `WordPieceTokenizer` is the same class (its former name).
#[pyclass(module = "bioptimus_hf._qikfind")]
pub struct Tokenizer {
    pub inner: RustTokenizer,
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
