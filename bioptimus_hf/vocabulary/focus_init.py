"""`focus`: FOCUS (Dobler & de Melo, EMNLP 2023) through its published implementation, PyPI ``deepfocus`` (the
extra ``pip install 'bioptimus-hf[focus]'``): a new token's row is a sparse combination of shared tokens' base rows,
weighted by similarity in fastText embeddings that deepfocus trains on the corpus (docs/vocabulary_and_init.md).
Only the new tokens' rows are kept; a token too rare for a fastText vector falls back to `averaged`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time

from ..utils.corpus_reader import check_corpus_files
from ..utils.progress import progress_enabled
from .new_rows import NewRows


def _deepfocus():
    try:
        import deepfocus
        from deepfocus.fasttext_embs import load_target_token_embedding
        from deepfocus.focus import is_very_rare_token
    except ImportError as error:
        raise ImportError(
            "--init_strategy focus needs the published FOCUS implementation: pip install 'bioptimus-hf[focus]' "
            f"(deepfocus and fasttext); import failed: {error}"
        ) from error
    return deepfocus.FOCUS, load_target_token_embedding, is_very_rare_token


def focus_rows(initializer, input_weight, corpus_files=None, contexts=None) -> NewRows:
    focus, load_fasttext, is_very_rare_token = _deepfocus()
    cfg = initializer.config
    if corpus_files is None:
        raise ValueError("strategy 'focus' needs corpus_files (its fastText embeddings are trained on the corpus).")
    files = check_corpus_files(corpus_files, what="initialisation corpus").files
    timings = {}
    fasttext_settings = {
        "epochs": cfg.focus_fasttext_epochs,
        "dim": cfg.focus_fasttext_dim,
        "min_count": cfg.focus_fasttext_min_count,
        "processes": cfg.init_num_threads,
    }
    with _one_text_file(files) as text_path:
        t0 = time.perf_counter()
        fasttext_model = load_fasttext(
            initializer.new_tokenizer, target_training_data_path=text_path, **fasttext_settings
        )
        timings["fasttext"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = focus(
            target_tokenizer=initializer.new_tokenizer,
            source_tokenizer=initializer.base_tokenizer,
            source_embeddings=input_weight,
            target_training_data_path=text_path,  # the fastText model just trained, from deepfocus's cache
            fasttext_model_epochs=cfg.focus_fasttext_epochs,
            fasttext_model_dim=cfg.focus_fasttext_dim,
            fasttext_model_min_count=cfg.focus_fasttext_min_count,
            processes=cfg.init_num_threads,
            seed=initializer.seed,
            verbosity="info" if progress_enabled(initializer.progress) else "silent",
        )
        timings["focus"] = time.perf_counter() - t0
    tokens = initializer.new_tokenizer.convert_ids_to_tokens(list(initializer.targets))
    rare = {t for t, token in zip(initializer.targets, tokens) if is_very_rare_token(token, fasttext_model)}
    learnt = {t: rows[t].float().cpu() for t in initializer.targets if t not in rare}
    report = {
        "focus": {
            "focus_tokens": len(learnt),
            "without_fasttext_vector": len(rare),
            **fasttext_settings,
            "timings_s": timings,
        }
    }
    return NewRows(input=learnt, report=report)


@contextlib.contextmanager
def _one_text_file(files):
    """deepfocus reads one text file: several corpus files are concatenated into one in a private temporary
    directory (mode 0700), removed once deepfocus has read it. deepfocus caches its fastText model by the file's
    path, so a single corpus file finds it on a second run and a concatenation trains it again."""
    if len(files) == 1:
        yield str(files[0])
        return
    with tempfile.TemporaryDirectory(prefix="bioptimus_focus_") as directory:
        path = os.path.join(directory, "corpus.txt")
        with open(path, "wb") as out:
            for name in files:
                with open(name, "rb") as handle:
                    shutil.copyfileobj(handle, out)
                out.write(b"\n")
        yield path
