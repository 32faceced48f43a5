"""Reading a BLURB dataset directory: ``train.jsonl``, ``dev.jsonl`` and (optionally) ``test.jsonl``, one JSON object
per line (``../shared/data/blurb/<DATASET>/README``). The task type is read from the first training row unless
``--task_type`` names it, and every row is checked against it; HoC's sentence rows are joined per document
(:func:`join_documents`). Bad input raises :class:`BlurbDataError` naming the file, the line and the field."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from .tasks import (
    DOCUMENT_CLASSIFICATION,
    DOCUMENT_ID_FIELD,
    ID_FIELD,
    SENTENCE_SIMILARITY,
    TASK_TYPES,
    TaskType,
    get_task_type,
    task_type_of_fields,
)


SPLITS = ("train", "dev", "test")
SUFFIX = ".jsonl"
NEEDED = f"need train{SUFFIX}, dev{SUFFIX}, test{SUFFIX}"


class BlurbDataError(ValueError):
    """Bad BLURB input; the message names the file (and line) at fault."""


@dataclass
class BlurbSplit:
    path: str
    rows: list[dict]


@dataclass
class BlurbData:
    name: str  # the directory's name: DDI, GAD, ...
    task: TaskType
    train: BlurbSplit
    dev: BlurbSplit
    test: BlurbSplit | None
    labels: list[str]  # the classes, in the model's order (none for a regression task)

    def splits(self) -> dict[str, BlurbSplit]:
        return {
            name: split
            for name, split in (("train", self.train), ("dev", self.dev), ("test", self.test))
            if split is not None
        }


def split_path(data_dir: str, split: str) -> str:
    return os.path.join(data_dir, split + SUFFIX)


def json_error_message(error: json.JSONDecodeError) -> str:
    """What is wrong with a line and where, whole: ``json``'s own message ends in "at" when a position follows."""
    what = error.msg.removesuffix(" at")
    hint = " (a tab or line break inside a string must be written \\t or \\n)" if "control character" in what else ""
    return f"not valid JSON: {what} at column {error.pos + 1}{hint}"


def read_jsonl(path: str, limit: int | None = None) -> list[dict]:
    """The rows of a JSON Lines file (the first ``limit``); blank lines are skipped."""
    rows = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if limit is not None and len(rows) >= limit:
                    break
                if not line.strip():
                    continue
                try:
                    row = json.loads(line.rstrip("\r\n"))
                except json.JSONDecodeError as error:
                    raise BlurbDataError(f"{path}, line {number}: {json_error_message(error)}") from None
                if not isinstance(row, dict):
                    raise BlurbDataError(f"{path}, line {number}: expected a JSON object, got {type(row).__name__}")
                row["_line"] = number
                rows.append(row)
    except UnicodeDecodeError as error:
        raise BlurbDataError(f"{path}: not UTF-8 text ({error})") from None
    if not rows:
        raise BlurbDataError(f"{path}: file contains no rows")
    return rows


def _fields(row: dict) -> list[str]:
    return [key for key in row if key != "_line"]


def read_task_type(data_dir: str, task_type: str | None = None) -> TaskType:
    """``task_type`` when given, else the type the first row of ``train.jsonl`` fits."""
    if task_type:
        return get_task_type(task_type)
    path = split_path(data_dir, "train")
    if not os.path.isfile(path):
        raise BlurbDataError(f"{data_dir}: missing train{SUFFIX} ({NEEDED})")
    row = read_jsonl(path, limit=1)[0]
    task = task_type_of_fields(row)
    if task is None:
        expected = "; ".join(f"{t.name}: {', '.join(t.text_fields + (t.label_field,))}" for t in TASK_TYPES.values())
        raise BlurbDataError(
            f"{path}, line {row['_line']}: fields {_fields(row)} fit no task type ({expected}); "
            "rename the fields or give --task_type"
        )
    return task


def _check_row(row: dict, task: TaskType, path: str) -> None:
    where = f"{path}, line {row['_line']}"
    missing = [f for f in task.text_fields + (task.label_field,) if f not in row]
    if missing:
        fits = task_type_of_fields(row)
        hint = f": a {fits.name} file ({', '.join(fits.text_fields)})" if fits else ""
        raise BlurbDataError(f"{where}: {task.name} needs field(s) {missing}, the row has {_fields(row)}{hint}")
    for name in task.text_fields:
        if not isinstance(row[name], str):
            raise BlurbDataError(f"{where}: field {name!r} must be a string, got {row[name]!r}")
    label = row[task.label_field]
    if task is SENTENCE_SIMILARITY:
        if isinstance(label, bool) or not isinstance(label, (int, float)):
            raise BlurbDataError(f"{where}: field {task.label_field!r} must be a number, got {label!r}")
    elif task.problem_type == "multi_label_classification":
        if not isinstance(label, list) or not all(isinstance(item, str) for item in label):
            raise BlurbDataError(f"{where}: field {task.label_field!r} must be a list of strings, got {label!r}")
    elif isinstance(label, bool) or not isinstance(label, (str, int)):
        raise BlurbDataError(f"{where}: field {task.label_field!r} must be a string, got {label!r}")
    else:
        row[task.label_field] = str(label)  # GAD-style "0"/"1" written as numbers are the same classes


def _labels_of(split: BlurbSplit, task: TaskType) -> set[str]:
    if task.problem_type == "multi_label_classification":
        return {label for row in split.rows for label in row[task.label_field]}
    return {row[task.label_field] for row in split.rows}


def join_documents(rows: list[dict], task: TaskType) -> list[dict]:
    """One row per document: the rows sharing a ``document_id``, in file order, their texts joined by single
    spaces and their labels the union of theirs (in order of appearance); the row's ``id`` is the document's. A row
    without ``document_id`` stays a document of its own. (LinkBERT's ``scripts/preprocess_blurb.py`` builds HoC's
    abstracts the same way, from consecutive rows only.)"""
    (text,) = task.text_fields
    documents: dict = {}
    for row in rows:
        key = row.get(DOCUMENT_ID_FIELD, ("line", row["_line"]))
        if key not in documents:
            documents[key] = {
                **row,
                ID_FIELD: row.get(DOCUMENT_ID_FIELD, row.get(ID_FIELD)),
                text: [],
                task.label_field: [],
            }
        document = documents[key]
        document[text].append(row[text])
        document[task.label_field] += [
            label for label in row[task.label_field] if label not in document[task.label_field]
        ]
    return [{**document, text: " ".join(document[text])} for document in documents.values()]


def load_blurb_data(
    data_dir: str,
    task_type: str | None = None,
    limits: tuple[int | None, int | None, int | None] = (None, None, None),
    document_unit: str = "document",
) -> BlurbData:
    """The checked splits of ``data_dir`` (the first ``limits`` rows of train, dev, test); the labels are those of
    the whole training file, so that a subset (``--max_train_samples``) keeps every class. Document
    classification: with ``document_unit`` "document" a row is a document (:func:`join_documents`) and the limits
    count documents; with "sentence" a row is a line of the file."""
    task = read_task_type(data_dir, task_type)
    by_document = task is DOCUMENT_CLASSIFICATION and document_unit == "document"
    splits: dict[str, BlurbSplit | None] = {}
    for split, limit in zip(SPLITS, limits):
        path = split_path(data_dir, split)
        if not os.path.isfile(path):
            if split == "test":
                splits[split] = None
                continue
            raise BlurbDataError(f"{data_dir}: missing {split}{SUFFIX} ({NEEDED})")
        # the whole training file: its label set is the model's, however few rows train
        rows = read_jsonl(path, None if split == "train" or by_document else limit)
        for row in rows:
            _check_row(row, task, path)
        if by_document:
            rows = join_documents(rows, task)
            rows = rows if split == "train" else rows[:limit]
        splits[split] = BlurbSplit(path, rows)
    labels: list[str] = []
    if task is not SENTENCE_SIMILARITY:
        labels = sorted(_labels_of(splits["train"], task))
        for other in (splits["dev"], splits["test"]):
            if other is None:
                continue
            unknown = sorted(_labels_of(other, task) - set(labels))
            if unknown:
                raise BlurbDataError(
                    f"{other.path}: label(s) absent from the training file {splits['train'].path}: "
                    f"{', '.join(map(repr, unknown))}"
                )
    splits["train"].rows = splits["train"].rows[: limits[0]]
    return BlurbData(
        os.path.basename(os.path.normpath(data_dir)), task, splits["train"], splits["dev"], splits["test"], labels
    )
