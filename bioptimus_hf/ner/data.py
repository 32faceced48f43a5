"""A NER run's splits: train, devel and (optionally) test, from a CoNLL directory (``<split>.tsv``, :mod:`.conll`) or a
``datasets`` dataset (:mod:`.hub_data`), validated, cut to ``--max_*_samples``, and the label set checked across
them."""

from __future__ import annotations

import os

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
from .hub_data import check_string_tags, load_ner_dataset


def load_ner_splits(data_args: NerDataArguments):
    """(name, train, devel, test-or-None) as validated ConllSplits."""
    strict = data_args.strict_iob
    if data_args.data_dir:
        paths = {split: ner_split_path(data_args.data_dir, split) for split in NER_SPLITS}
        for split in REQUIRED_NER_SPLITS:
            if not os.path.isfile(paths[split]):
                raise ConllFormatError(
                    f"{data_args.data_dir}: missing {split}.tsv (need train.tsv, devel.tsv, test.tsv)"
                )
        train, devel = read_conll(paths["train"], strict), read_conll(paths["devel"], strict)
        test = read_conll(paths["test"], strict) if os.path.isfile(paths["test"]) else None
        name = os.path.basename(os.path.normpath(data_args.data_dir))
    elif data_args.dataset_name:
        raw = load_ner_dataset(data_args.dataset_name, data_args.dataset_config_name)

        def to_split(split_names):
            split = next((s for s in split_names if s in raw), None)
            if split is None:
                return None
            column = raw[split].features[data_args.label_column_name]
            names = getattr(getattr(column, "feature", None), "names", None)  # Sequence(ClassLabel) -> strings
            tags = raw[split][data_args.label_column_name]
            if names is not None:
                tags = [[names[i] for i in row] for row in tags]
            else:
                check_string_tags(tags, f"{data_args.dataset_name}[{split}]", data_args.label_column_name)
            return sentences_from_tags(
                raw[split][data_args.text_column_name], tags, f"{data_args.dataset_name}[{split}]", strict
            )

        train, devel, test = to_split(["train"]), to_split(["validation", "devel", "dev"]), to_split(["test"])
        if train is None or devel is None:
            raise ConllFormatError(
                f"{data_args.dataset_name}: needs a 'train' and a 'validation' split, has {list(raw)}"
            )
        name = data_args.dataset_name
    else:
        raise ValueError("give --data_dir (train.tsv/devel.tsv/test.tsv) or --dataset_name")
    for split, limit in (
        (train, data_args.max_train_samples),
        (devel, data_args.max_eval_samples),
        (test, data_args.max_test_samples),
    ):
        if split is not None and limit is not None and limit < len(split.sentences):
            split.sentences = split.sentences[:limit]
            split.path = f"{split.path} (first {limit} sentences)"
    # after subsetting: the label set comes from the training sentences actually used
    for other in (devel, test):
        if other is not None:
            check_entity_types(train, other)
    return name, train, devel, test
