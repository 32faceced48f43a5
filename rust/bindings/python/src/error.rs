//! Library errors (`qikfind::Error`) as Python exceptions. The two project-specific classes are defined in
//! Python (so that they exist, and can be caught, without the extension) and looked up here:
//!
//! | variant | Python exception |
//! |---|---|
//! | `UnsupportedTokenizer` | `bioptimus_hf.vocabulary.qikfind.UnsupportedTokenizerError` (a `ValueError`; `.family`, `.reason`) |
//! | `InvalidTokenizer`, `InvalidArgument` | `ValueError` |
//! | `Io` | `FileNotFoundError` or another `OSError`, with `filename` set |
//! | `Gzip` | `bioptimus_hf.utils.corpus_reader.CorpusFileError` (a `ValueError`; the message names the file) |
//! | `Aborted` | the exception the progress callback raised, or `KeyboardInterrupt` |

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;
use qikfind::Error;

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

pub fn to_py_err(py: Python<'_>, error: Error) -> PyErr {
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
