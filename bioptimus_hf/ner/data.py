"""A NER run's splits: from a CoNLL directory (``train.tsv``, ``devel.tsv``, optional ``test.tsv``) or a ``datasets``
dataset (a Hub id, a folder of data files named by split, or a ``save_to_disk`` directory), validated, cut to
``--max_*_samples``, and the label set checked across them. A dataset's ``--text_column_name`` (default ``tokens``)
holds word lists, its ``--label_column_name`` (default ``ner_tags``) per-word tags: ``Sequence(ClassLabel)`` ids
(read as their names) or the tag strings themselves (docs/ner.md).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .conll import (
    NER_SPLITS,
    REQUIRED_NER_SPLITS,
    ConllFormatError,
    check_entity_types,
    ner_split_path,
    read_conll,
    sentences_from_tags,
)
from .fine_tuning_config import NerDataArguments


def load_ner_dataset(name: str, config_name: str | None = None):
    """A ``DatasetDict``: ``load_from_disk`` for a ``save_to_disk`` directory, else ``load_dataset``."""
    import datasets

    if os.path.isfile(os.path.join(name, "dataset_dict.json")):
        return datasets.load_from_disk(name)
    return datasets.load_dataset(name, config_name)


def check_string_tags(tags: Sequence[Sequence[Any]], where: str, column: str) -> None:
    """Tags without ``ClassLabel`` names must be strings: integer ids alone cannot be mapped to labels."""
    tag = next((tag for row in tags for tag in row), "O")
    if not isinstance(tag, str):
        raise ConllFormatError(
            f"{where}: column {column!r} holds {type(tag).__name__} tags ({tag!r}) without ClassLabel names, "
            "so they cannot be mapped to B-/I- labels; give a column of tag strings with --label_column_name, "
            "or cast it to Sequence(ClassLabel(names=[...])) (docs/ner.md)"
        )


def _dataset_splits(data_args: NerDataArguments):
    """(train, devel, test-or-None) of ``--dataset_name``, as validated ConllSplits."""
    raw = load_ner_dataset(data_args.dataset_name, data_args.dataset_config_name)

    def to_split(split_names):
        split = next((s for s in split_names if s in raw), None)
        if split is None:
            return None
        where, column = f"{data_args.dataset_name}[{split}]", data_args.label_column_name
        names = getattr(getattr(raw[split].features[column], "feature", None), "names", None)
        tags = raw[split][column]
        if names is not None:  # Sequence(ClassLabel) -> strings
            tags = [[names[i] for i in row] for row in tags]
        else:
            check_string_tags(tags, where, column)
        return sentences_from_tags(raw[split][data_args.text_column_name], tags, where, data_args.strict_iob)

    train, devel, test = to_split(["train"]), to_split(["validation", "devel", "dev"]), to_split(["test"])
    if train is None or devel is None:
        raise ConllFormatError(f"{data_args.dataset_name}: needs a 'train' and a 'validation' split, has {list(raw)}")
    return train, devel, test


def load_ner_splits(data_args: NerDataArguments):
    """(name, train, devel, test-or-None) as validated ConllSplits."""
    if data_args.data_dir:
        paths = {split: ner_split_path(data_args.data_dir, split) for split in NER_SPLITS}
        for split in REQUIRED_NER_SPLITS:
            if not os.path.isfile(paths[split]):
                raise ConllFormatError(
                    f"{data_args.data_dir}: missing {split}.tsv (need train.tsv, devel.tsv, test.tsv)"
                )
        train, devel = (read_conll(paths[split], data_args.strict_iob) for split in REQUIRED_NER_SPLITS)
        test = read_conll(paths["test"], data_args.strict_iob) if os.path.isfile(paths["test"]) else None
        name = os.path.basename(os.path.normpath(data_args.data_dir))
    elif data_args.dataset_name:
        train, devel, test = _dataset_splits(data_args)
        name = data_args.dataset_name
    else:
        raise ValueError("give --data_dir (train.tsv/devel.tsv/test.tsv) or --dataset_name")
    limits = (data_args.max_train_samples, data_args.max_eval_samples, data_args.max_test_samples)
    for split, limit in zip((train, devel, test), limits):
        if split is not None and limit is not None and limit < len(split.sentences):
            split.sentences = split.sentences[:limit]
            split.path = f"{split.path} (first {limit} sentences)"
    for other in (devel, test):  # after subsetting: the label set comes from the training sentences used
        if other is not None:
            check_entity_types(train, other)
    return name, train, devel, test
