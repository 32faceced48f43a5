//! `bioptimus_hf._qikfind`: the Python binding of the `qikfind` crate. Thin: converts arguments, results
//! and errors (`error`); the logic lives in the library crate.
//!
//! * `finder`: `find_contexts`, `FindOptions`;
//! * `tokenizer`: `Tokenizer` (also exported as `WordPieceTokenizer`, its former name);
//! * here: `split_sentences`, `TOKENIZERS_REFERENCE`, and the module itself.

mod error;
mod finder;
mod tokenizer;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use qikfind::search::text;

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
    module.add_function(wrap_pyfunction!(finder::find_contexts, module)?)?;
    module.add_function(wrap_pyfunction!(split_sentences, module)?)?;
    module.add_class::<finder::FindOptions>()?;
    module.add_class::<tokenizer::Tokenizer>()?;
    module.add("WordPieceTokenizer", module.getattr("Tokenizer")?)?;
    module.add("TOKENIZERS_REFERENCE", qikfind::generated::bert_unicode::REFERENCE)?;
    Ok(())
}
