"""The fast NER paths give the same answers as the simple ones: streamed and chunked tagging, windows
sorted and batched across texts, length-grouped training batches, bf16 detection and fallback."""

import itertools
import json
import logging

import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer, TrainingArguments

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.finetuning.row_order_trainer import RowOrderTrainer
from bioptimus_hf.ner import tagger as tagger_module
from bioptimus_hf.ner import tagging_run
from bioptimus_hf.ner.encoding import encode_split
from bioptimus_hf.ner.evaluation import predicted_spans
from bioptimus_hf.ner.tagger import NerTagger
from bioptimus_hf.testing.numerics import encoder_tolerance
from bioptimus_hf.utils import hardware
from helpers.ner import TAGGER_LABELS, synthetic_sentences


pytestmark = pytest.mark.usefixtures("one_thread")


LABELS = TAGGER_LABELS


def texts():
    sentences = [" ".join(tokens) for tokens, _ in synthetic_sentences(14, 7)]
    # long texts (several windows at max_seq_length 16), empty and blank lines, among short ones
    return sentences[:5] + ["", " ".join(sentences[5:9])] + sentences[9:12] + ["   ", " ".join(sentences[12:])]


def keys(entities):
    return [[(e["entity_group"], e["start"], e["end"], e["word"]) for e in found] for found in entities]


def float64_logits(model_dir, windows):
    """Each window's logits, alone (no padding), from a float64 copy of the tagging model: the reference
    that decides whether a comparison of decisions has margin (bioptimus_hf/testing/numerics.py)."""
    model = AutoModelForTokenClassification.from_pretrained(model_dir).double().eval()
    with torch.no_grad():
        return model.config, [model(input_ids=torch.tensor([ids])).logits[0] for ids in windows]


@pytest.mark.precision
def test_streaming_matches_the_whole_list_reads_lazily_and_keeps_order(tagging_model):
    """Streamed (3 texts a chunk) and whole-list tagging see different batch compositions at the default
    batch size; a tiny random tagger has near-tie decisions that bf16 rounding flips between them (issue
    30). So both paths here batch one window at a time: identical compositions, hence identical numbers
    in any precision, and `auto` (this machine's path; bf16 in the second pass) is compared exactly."""
    corpus = texts()
    whole = NerTagger(tagging_model, max_seq_length=16, stride=4, chunk_size=1000, batch_size=1)(corpus)
    assert sum(map(len, whole)) > 10  # the comparison below is not between empty lists
    # a stream that swapped two texts' outputs would be seen: neighbours differ
    assert all(whole[i] != whole[i + 1] for i in range(len(whole) - 1) if whole[i] or whole[i + 1])
    pulled = []

    def lines():
        for text in corpus:
            pulled.append(text)
            yield text

    stream = NerTagger(tagging_model, max_seq_length=16, stride=4, chunk_size=3, batch_size=1).tag_stream(lines())
    first = next(stream)
    assert len(pulled) == 3  # only the first chunk has been read
    assert [first] + list(stream) == whole
    assert len(pulled) == len(corpus)


def test_sorted_batches_across_texts_equal_one_text_at_a_time_in_float32(tagging_model):
    corpus = texts()
    batched = NerTagger(tagging_model, max_seq_length=16, stride=4, batch_size=4, precision="float32")
    alone = NerTagger(tagging_model, max_seq_length=16, stride=4, batch_size=1, precision="float32")
    # Padding and batch shape move float32 sums in the last bits; the decisions are compared because the
    # float64 reference puts every winning logit ahead of the runner-up by far more than that.
    _, encoding = batched.encode(corpus)
    config, logits = float64_logits(tagging_model, encoding.columns["input_ids"])
    bound = encoder_tolerance(config, torch.float32, extra_depth=1)
    largest = max(window.norm().item() for window in logits)  # normwise bound -> any one logit's error
    top2 = [window.topk(2, -1).values for window in logits]
    margin = min((top[:, 0] - top[:, 1]).min().item() for top in top2)
    assert margin > 2 * bound * largest, (margin, bound * largest)  # (48 times over, measured)
    together = batched(corpus)
    one_by_one = [alone(text) for text in corpus]
    assert keys(together) == keys(one_by_one)
    # a score is a mean of softmax probabilities, which move by at most as much as the largest logit
    for a, b in zip(itertools.chain(*together), itertools.chain(*one_by_one)):
        assert a["score"] == pytest.approx(b["score"], abs=2 * bound * largest + 1e-4)  # + the 4-decimal rounding


def test_length_grouping_keeps_every_window_once_and_evaluation_order(tagging_model, tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(tagging_model)
    sentences = [
        type("S", (), {"tokens": t, "spans": s})()
        for t, s in ((tokens, tagger_module.tags_to_spans(tags, "BIO")) for tokens, tags in synthetic_sentences(90, 3))
    ]
    label2id = {l: i for i, l in enumerate(LABELS)}
    train = encode_split(tokenizer, sentences, "BIO", label2id, 16, 4)
    args = TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        use_cpu=True,
        report_to="none",
        train_sampling_strategy="group_by_length",
    )
    model = AutoModelForTokenClassification.from_pretrained(tagging_model)
    trainer = RowOrderTrainer(model=model, args=args, train_dataset=train.dataset, processing_class=tokenizer)
    order = list(trainer._get_train_sampler())
    assert sorted(order) == list(range(len(train.dataset))) and order != sorted(order)
    lengths = [len(ids) for ids in train.dataset["input_ids"]]

    def padded(rows):
        return sum(4 * max(lengths[r] for r in rows[i : i + 4]) for i in range(0, len(rows), 4))

    shuffled = torch.randperm(len(lengths), generator=torch.Generator().manual_seed(0)).tolist()
    assert padded(order) < padded(shuffled)  # grouping saves padding
    # evaluation reads rows in order (transformers would shuffle them under group_by_length)
    assert list(trainer._get_eval_sampler(train.dataset)) == list(range(len(train.dataset)))
    # windows sorted by length: rows longest first, and the merge still rebuilds every sentence
    ordered = encode_split(tokenizer, sentences, "BIO", label2id, 16, 4, sort_by_length=True)
    sorted_lengths = [len(ids) for ids in ordered.dataset["input_ids"]]
    assert sorted_lengths == sorted(lengths, reverse=True) and len(ordered.windows) == len(train.windows)
    gold = [[max(label, 0) for label in row] for row in ordered.dataset["labels"]]
    id2label = dict(enumerate(LABELS))
    assert predicted_spans(ordered, gold, id2label, "BIO") == [s.spans for s in sentences]


@pytest.mark.parametrize("precision", ["bf16", "bf16-autocast"])
def test_bf16_paths_run_and_agree_with_float32_on_most_tokens(tagging_model, precision):
    # forced: runs natively on AMX/AVX512-BF16 CPUs, emulated (slower, same rounding) elsewhere
    corpus = texts()
    reference = NerTagger(tagging_model, max_seq_length=16, stride=4, precision="float32")
    low = NerTagger(tagging_model, max_seq_length=16, stride=4, precision=precision)
    assert low.precision == precision
    assert (next(low.model.parameters()).dtype == torch.bfloat16) == (precision == "bf16")
    _, encoding = reference.encode(corpus)
    ids = encoding.columns["input_ids"]
    labels32, _ = reference.predict_windows(ids)
    labels16, _ = low.predict_windows(ids)
    tokens = sum(map(len, labels32))
    agree = sum(a == b for row32, row16 in zip(labels32, labels16) for a, b in zip(row32, row16))
    assert agree / tokens >= 0.9, f"{precision}: {agree}/{tokens} token labels agree with float32"
    assert len(low(corpus)) == len(corpus)


def test_auto_precision_follows_the_hardware(tagging_model, monkeypatch):
    monkeypatch.setattr(tagger_module, "device_has_fast_bf16", lambda device: False)
    assert NerTagger(tagging_model).precision == "float32"
    monkeypatch.setattr(tagger_module, "device_has_fast_bf16", lambda device: True)
    tagger = NerTagger(tagging_model)
    assert tagger.precision == tagger_module.AUTO_BF16
    with pytest.raises(ValueError, match="precision must be one of"):
        NerTagger(tagging_model, precision="fp8")


def test_bf16_detection_and_run_ner_fallback(monkeypatch, tmp_path, caplog):
    monkeypatch.delenv(hardware.DISABLE_BF16_ENV, raising=False)
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2", "amx_bf16"}))
    assert hardware.device_has_fast_bf16("cpu") is True
    monkeypatch.setattr(hardware, "cpu_flags", lambda: frozenset({"avx2"}))
    assert hardware.device_has_fast_bf16("cpu") is False
    assert hardware.device_has_fast_bf16("meta") is False

    args = TrainingArguments(output_dir=str(tmp_path), bf16=True, use_cpu=True, learning_rate=3e-5, report_to="none")
    plain = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    monkeypatch.setattr(hardware, "device_has_fast_bf16", lambda device: False)
    monkeypatch.setattr(hardware, "_BF16_FALLBACK_SAID", set())
    with caplog.at_level(logging.WARNING):
        fallback = hardware.resolve_bf16(args, if_supported=False, allow_emulated=False)
        hardware.resolve_bf16(args, if_supported=False, allow_emulated=False)  # the next seed's: not said again
    assert not fallback.bf16 and fallback.mixed_precision == "no" and fallback.learning_rate == 3e-5
    assert caplog.text.count("no native bf16") == 1
    assert not hardware.resolve_bf16(plain, if_supported=True, allow_emulated=False).bf16
    assert hardware.resolve_bf16(args, if_supported=False, allow_emulated=True).bf16
    monkeypatch.setattr(hardware, "device_has_fast_bf16", lambda device: True)
    assert hardware.resolve_bf16(args, if_supported=False, allow_emulated=False) is args
    on = hardware.resolve_bf16(plain, if_supported=True, allow_emulated=False)
    assert on.bf16 and on.mixed_precision == "bf16"
    assert hardware.resolve_bf16(plain, if_supported=False, allow_emulated=False) is plain


def test_cli_streams_and_keeps_finished_lines_on_bad_input(tagging_model, tmp_path, monkeypatch):
    monkeypatch.setattr(tagging_run, "retain_freed_memory", lambda: None)  # not in pytest's own process
    source = tmp_path / "abstracts.txt"
    source.write_bytes(b"the patients with breast cancer .\nthe study of aspirin\n\xff\xfe broken\nlast line\n")
    target = tmp_path / "entities.jsonl"
    argv = [
        "--model_name_or_path",
        tagging_model,
        "--input_file",
        str(source),
        "--output_file",
        str(target),
        "--max_seq_length",
        "16",
        "--chunk_size",
        "1",
    ]
    with pytest.raises(SystemExit, match=r"abstracts.txt, line 3: .*utf-8"):
        bioptimus("tag", argv)
    assert not target.exists()  # only complete outputs get the final name
    done = [json.loads(line) for line in (tmp_path / "entities.jsonl.partial").read_text().splitlines()]
    assert [row["line"] for row in done] == [1, 2]
    source.write_text("the patients with breast cancer .\n\nlast line\n")
    bioptimus("tag", argv)
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    expected = NerTagger(tagging_model, max_seq_length=16)(["the patients with breast cancer .", "", "last line"])
    assert [row["line"] for row in rows] == [1, 2, 3] and [row["entities"] for row in rows] == expected


def test_flop_estimate_counts_the_parameters_once_and_equals_the_trainers(tagging_model, tmp_path, monkeypatch):
    """RowOrderTrainer's per-step FLOP estimate is the stock Trainer's, with the model's parameters walked once, not
    every step (per-step work that is not the model)."""
    from transformers import Trainer

    model = AutoModelForTokenClassification.from_pretrained(tagging_model)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    trainer = RowOrderTrainer(model=model, args=args)
    walks = []
    count = type(model).num_parameters
    monkeypatch.setattr(type(model), "num_parameters", lambda self, **kw: walks.append(kw) or count(self, **kw))
    batches = [{"input_ids": torch.ones(4, n, dtype=torch.long)} for n in (7, 16, 3)]
    ours = [trainer.floating_point_ops(batch) for batch in batches]
    assert len(walks) == 1
    assert ours == [Trainer.floating_point_ops(trainer, batch) for batch in batches] and ours[0] > 0
    assert trainer.floating_point_ops({"labels": torch.ones(4, 7)}) == 0  # no input ids: the Trainer's 0
