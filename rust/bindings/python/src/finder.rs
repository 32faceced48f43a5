//! `find_contexts` and its `FindOptions`: the library's corpus scan, with the GIL released while it runs
//! and the progress callback (and Ctrl-C) heard after each batch.

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use qikfind::search::finder::{self, Options};
use qikfind::tokenizer::Tokenizer as RustTokenizer;
use qikfind::Error;

use crate::error::to_py_err;
use crate::tokenizer::{load, Tokenizer};

type RawContext = (String, usize, usize, u64);
type ScanResult = (HashMap<u32, Vec<RawContext>>, HashMap<&'static str, u64>);

/// FindOptions(*, max_per_token=20, seed=0, max_context_chars=1000, num_threads=0, batch_bytes=4 MiB):
/// how `find_contexts` samples (defaults: those of the Rust `Options`). num_threads=0: all cores.
#[pyclass(module = "bioptimus_hf._qikfind")]
#[derive(Clone)]
pub struct FindOptions {
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
pub fn find_contexts(
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
        finder::find_contexts(&paths, tokenizer, &targets, &options, &mut report)
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
