"""NER data from the `datasets` side: a Hub id (parquet, as every loadable Hub dataset is since datasets 4),
a local folder of data files (``train.parquet``, ``validation.parquet``, ``test.parquet``; json/csv too) or a
``save_to_disk`` directory, and the check that makes an unusable label column a clear error.

The column mapping (docs/ner.md): ``--text_column_name`` (default ``tokens``) holds word lists;
``--label_column_name`` (default ``ner_tags``) holds per-word tags, either ``Sequence(ClassLabel)`` ids
(translated to their names) or the tag strings themselves (``B-Disease``...).
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from .conll import ConllFormatError


def load_ner_dataset(name: str, config_name: str | None = None):
    """A ``DatasetDict``: ``load_from_disk`` for a ``save_to_disk`` directory, else ``load_dataset`` (a Hub id,
    or a local folder whose files are named by split)."""
    import datasets

    if os.path.isfile(os.path.join(name, "dataset_dict.json")):
        return datasets.load_from_disk(name)
    return datasets.load_dataset(name, config_name)


def check_string_tags(tags: Sequence[Sequence[Any]], where: str, column: str) -> None:
    """Tags without ``ClassLabel`` names must be strings: integer ids alone cannot be mapped to labels."""
    for row in tags:
        for tag in row:
            if not isinstance(tag, str):
                raise ConllFormatError(
                    f"{where}: column {column!r} holds {type(tag).__name__} tags ({tag!r}) without ClassLabel names, "
                    "so they cannot be mapped to B-/I- labels; give a column of tag strings with --label_column_name, "
                    "or cast it to Sequence(ClassLabel(names=[...])) (docs/ner.md)"
                )
            return
