"""CoNLL reading/validation, tagging schemes, label alignment and windowing (no training)."""

import random

import pytest
from transformers import AutoTokenizer

from bioptimus_hf.ner.conll import ConllFormatError, check_entity_types, read_conll, write_conll
from bioptimus_hf.ner.encoding import IGNORE_INDEX, encode_split
from bioptimus_hf.ner.evaluation import span_scores
from bioptimus_hf.ner.schemes import convert_tags, detect_scheme, label_list, spans_to_tags, tags_to_spans
from bioptimus_hf.ner.windows import Window, merge_window_predictions, plan_windows
from helpers.ner import build_tiny_bert, synthetic_sentences, write_tsv


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return AutoTokenizer.from_pretrained(build_tiny_bert(str(tmp_path_factory.mktemp("tiny_bert"))))


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------- schemes


def test_schemes_encode_known_spans():
    spans = [("Dis", 0, 2), ("Chem", 2, 3), ("Dis", 4, 7)]
    assert spans_to_tags(spans, 8, "BIO") == ["B-Dis", "I-Dis", "B-Chem", "O", "B-Dis", "I-Dis", "I-Dis", "O"]
    assert spans_to_tags(spans, 8, "BIOUL") == ["B-Dis", "L-Dis", "U-Chem", "O", "B-Dis", "I-Dis", "L-Dis", "O"]
    assert spans_to_tags(spans, 8, "IOBES") == ["B-Dis", "E-Dis", "S-Chem", "O", "B-Dis", "I-Dis", "E-Dis", "O"]
    assert spans_to_tags(spans, 8, "IO") == ["I-Dis", "I-Dis", "I-Chem", "O", "I-Dis", "I-Dis", "I-Dis", "O"]


def random_spans(rng, length, types=("A", "B")):
    spans, position = [], 0
    while position < length:
        position += rng.randint(0, 2)
        size = rng.randint(1, 3)
        if position + size > length:
            break
        spans.append((rng.choice(types), position, position + size))
        position += size  # adjacent entities happen when the next gap is 0
    return spans


@pytest.mark.parametrize("scheme", ["BIO", "BIOUL", "IOBES"])
def test_round_trip_spans_tags_spans(scheme):
    rng = random.Random(0)
    for _ in range(300):
        length = rng.randint(0, 15)
        spans = random_spans(rng, length)
        tags = spans_to_tags(spans, length, scheme)
        assert tags_to_spans(tags, scheme) == spans
        assert convert_tags(convert_tags(tags, scheme, "BIO"), "BIO", scheme) == tags


def test_io_round_trip_loses_only_adjacent_same_type_boundaries():
    rng = random.Random(1)
    for _ in range(300):
        length = rng.randint(1, 15)
        spans = random_spans(rng, length)
        decoded = tags_to_spans(spans_to_tags(spans, length, "IO"), "IO")
        merged = []
        for span in spans:
            if merged and merged[-1][0] == span[0] and merged[-1][2] == span[1]:
                merged[-1] = (span[0], merged[-1][1], span[2])
            else:
                merged.append(span)
        assert decoded == merged


def test_lenient_decoding_of_ill_formed_predictions():
    assert tags_to_spans(["O", "I-X", "I-X", "B-X", "I-Y"], "BIO") == [("X", 1, 3), ("X", 3, 4), ("Y", 4, 5)]
    assert tags_to_spans(["L-X", "B-X", "I-X", "O", "U-X", "I-X"], "BIOUL") == [
        ("X", 0, 1),
        ("X", 1, 3),
        ("X", 4, 5),
        ("X", 5, 6),
    ]


def test_detect_scheme_and_label_list():
    assert detect_scheme(["O", "B-X", "I-X"]) == "BIO"
    assert detect_scheme(["S-X", "B-X", "E-X"]) == "IOBES"
    assert detect_scheme(["U-X"]) == "BIOUL"
    with pytest.raises(ValueError, match="mixed tagging schemes"):
        detect_scheme(["S-X", "L-X"])
    assert label_list(["Dis", "Chem"], "BIOUL") == [
        "O",
        "B-Chem",
        "I-Chem",
        "L-Chem",
        "U-Chem",
        "B-Dis",
        "I-Dis",
        "L-Dis",
        "U-Dis",
    ]
    assert label_list(["Dis"], "IO") == ["O", "I-Dis"]


# ---------------------------------------------------------------- CoNLL reading and bad input


def test_read_iob2_and_iobes_give_the_same_spans(tmp_path):
    iob2 = read_conll(write(tmp_path, "a.tsv", "-DOCSTART-\tO\n\nBreast\tB-D\ncancer\tI-D\n,\tO\nFe\tB-C\n\nx\tO\n"))
    iobes = read_conll(write(tmp_path, "b.tsv", "Breast\tB-D\ncancer\tE-D\n,\tO\nFe\tS-C\n\n\n\nx\tO\n"))
    assert (iob2.scheme, iobes.scheme) == ("BIO", "IOBES")
    assert [s.spans for s in iob2.sentences] == [s.spans for s in iobes.sentences] == [[("D", 0, 2), ("C", 3, 4)], []]
    assert iob2.sentences[0].line == 3 and iob2.entity_types == ["C", "D"]


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = write(tmp_path, "train.tsv", "a\tO\nb\tB-X\n\nc O\n")
    with pytest.raises(ConllFormatError, match=r"train\.tsv:4: expected 2 tab-separated columns.*found 1"):
        read_conll(path)
    path = write(tmp_path, "devel.tsv", "a\tO\tNN\n")
    with pytest.raises(ConllFormatError, match=r"devel\.tsv:1: .*found 3"):
        read_conll(path)


def test_latin1_file_names_file_and_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes("aspirin\tB-Chemical\n\nna\u00efve\tO\n".encode("latin-1"))
    with pytest.raises(ConllFormatError, match=r"train\.tsv:3: not UTF-8 \(byte 2 of the line, 0xef\).*iconv"):
        read_conll(path)


def test_bad_label_names_line(tmp_path):
    with pytest.raises(ConllFormatError, match=r"x\.tsv:2: .*'Disease'"):
        read_conll(write(tmp_path, "x.tsv", "a\tO\nb\tDisease\n"))
    with pytest.raises(ConllFormatError, match=r"y\.tsv:1: unknown tag prefix"):
        read_conll(write(tmp_path, "y.tsv", "a\tZ-Dis\n"))


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(ConllFormatError, match=r"empty\.tsv: file contains no sentences"):
        read_conll(write(tmp_path, "empty.tsv", ""))
    with pytest.raises(ConllFormatError, match="no sentences"):
        read_conll(write(tmp_path, "blank.tsv", "\n\n  \n"))
    with pytest.raises(ConllFormatError, match="no such file"):
        read_conll(str(tmp_path / "nope.tsv"))


def test_mixed_schemes_in_one_file(tmp_path):
    with pytest.raises(
        ConllFormatError, match=r"mixed\.tsv: mixed tagging schemes: IOBES tags .* line 1 .* BIOUL tags .* line 3"
    ):
        read_conll(write(tmp_path, "mixed.tsv", "a\tS-X\n\nb\tU-X\n"))


def test_i_without_b_is_repaired_or_strict_error(tmp_path):
    path = write(tmp_path, "iob1.tsv", "a\tO\nb\tI-X\nc\tI-X\nd\tB-X\n\ne\tI-Y\n")
    split = read_conll(path)
    assert split.repaired_lines == [2, 6]
    assert [s.spans for s in split.sentences] == [[("X", 1, 3), ("X", 3, 4)], [("Y", 0, 1)]]
    with pytest.raises(ConllFormatError, match=r"iob1\.tsv:2: 'I-X' does not continue an entity"):
        read_conll(path, strict=True)


def test_entity_types_absent_from_train(tmp_path):
    train = read_conll(write(tmp_path, "train.tsv", "a\tB-X\n"))
    test = read_conll(write(tmp_path, "test.tsv", "a\tB-X\n\nb\tO\nc\tB-Gene\n"))
    with pytest.raises(
        ConllFormatError,
        match=r"test\.tsv: entity type\(s\) absent from the training file .*'Gene' \(first at line 4\)",
    ):
        check_entity_types(train, test)


def test_write_conll_is_iob2_gold_and_prediction(tmp_path):
    split = read_conll(write(tmp_path, "t.tsv", "a\tS-X\nb\tO\n"))
    out = tmp_path / "pred.conll"
    write_conll(out, split.sentences, [[("X", 0, 2)]])
    assert out.read_text() == "a\tB-X\tB-X\nb\tO\tI-X\n\n"


def test_span_scores_are_scheme_independent(tmp_path):
    split = read_conll(write_tsv(str(tmp_path / "g.tsv"), synthetic_sentences(30, 3)))
    gold = [s.spans for s in split.sentences]
    perfect = span_scores(split.sentences, gold)
    assert perfect["f1"] == 1.0
    dropped = [spans[1:] for spans in gold]  # every sentence loses its first entity
    scores = span_scores(split.sentences, dropped)
    kept = sum(len(s) for s in dropped)
    assert scores["precision"] == 1.0
    assert scores["recall"] == pytest.approx(kept / perfect["gold_entities"])


# ---------------------------------------------------------------- alignment and windows


def test_first_subtoken_label_alignment(tokenizer, tmp_path):
    split = read_conll(write(tmp_path, "a.tsv", "breast\tB-D\ncancers\tI-D\nwith\tO\naspirin\tS-C\n"))
    labels = label_list(split.entity_types, "BIOUL")
    label2id = {l: i for i, l in enumerate(labels)}
    encoded = encode_split(tokenizer, split.sentences, "BIOUL", label2id, 32, 4)
    row = encoded.dataset[0]
    tokens = tokenizer.convert_ids_to_tokens(row["input_ids"])
    assert tokens == ["[CLS]", "breast", "cancer", "##s", "with", "aspirin", "[SEP]"]
    assert [labels[i] if i != IGNORE_INDEX else None for i in row["labels"]] == [
        None,
        "B-D",
        "L-D",
        None,
        "O",
        "U-C",
        None,
    ]
    every = encode_split(
        tokenizer,
        split.sentences,
        "BIO",
        {l: i for i, l in enumerate(label_list(["C", "D"], "BIO"))},
        32,
        4,
        label_all_tokens=True,
    )
    bio = label_list(["C", "D"], "BIO")
    assert [bio[i] if i != IGNORE_INDEX else None for i in every.dataset[0]["labels"]] == [
        None,
        "B-D",
        "I-D",
        "I-D",
        "O",
        "B-C",
        None,
    ]


def test_plan_windows_respects_budget_and_overlap():
    rng = random.Random(2)
    for _ in range(200):
        lengths = [rng.randint(0, 4) for _ in range(rng.randint(1, 40))]
        budget, stride = rng.randint(4, 12), None
        stride = rng.randint(0, budget - 1)
        plan = plan_windows(lengths, budget, stride)
        assert plan[0][0] == 0 and plan[-1][1] == len(lengths)
        for (s1, e1), (s2, e2) in zip(plan, plan[1:]):
            assert s1 < s2 <= e1  # advances, no gap
            assert sum(lengths[s2:e1]) <= stride  # overlap within stride
        for start, end in plan:
            assert end - start == 1 or sum(lengths[start:end]) <= budget


def test_plan_windows_exact_and_errors():
    assert plan_windows([1] * 10, 4, 2) == [(0, 4), (2, 6), (4, 8), (6, 10)]
    assert plan_windows([1] * 4, 4, 2) == [(0, 4)]
    assert plan_windows([9, 1], 4, 1) == [(0, 1), (1, 2)]  # an over-long word gets a window of its own
    with pytest.raises(ValueError, match="stride"):
        plan_windows([1], 4, 4)


def test_merge_takes_each_word_from_its_most_central_window():
    windows = [Window(0, 0, 4, [1, 2, 3, 4]), Window(0, 2, 6, [1, 2, 3, 4])]
    # window 0 predicts 10+word, window 1 predicts 20+word (token position p <-> word start+p-1)
    predictions = [[0, 10, 11, 12, 13], [0, 22, 23, 24, 25]]
    merged = merge_window_predictions(windows, predictions, [6], default=-1)
    # word 2: centrality 1 in window 0, 0 in window 1 -> window 0; word 3: 0 vs 1 -> window 1
    assert merged == [[10, 11, 12, 23, 24, 25]]


def test_long_sentence_is_windowed_not_truncated(tokenizer, tmp_path):
    words = ["breast", "cancer", "with", "aspirin", "in", "the", "patients"] * 6
    tags = ["B-D", "I-D", "O", "B-C", "O", "O", "O"] * 6
    split = read_conll(write_tsv(str(tmp_path / "long.tsv"), [(words, tags), (["a"], ["O"])]))
    label2id = {l: i for i, l in enumerate(label_list(split.entity_types, "BIO"))}
    encoded = encode_split(tokenizer, split.sentences, "BIO", label2id, 16, 4)
    assert encoded.stats.sentences_split == 1 and encoded.stats.windows > 3 and encoded.stats.words_cut == 0
    assert all(len(ids) <= 16 for ids in encoded.dataset["input_ids"])
    # merging the gold labels of every window gives back every word's gold label
    gold_tokens = list(encoded.dataset["labels"])
    merged = merge_window_predictions(encoded.windows, gold_tokens, encoded.sentence_lengths, default=-1)
    assert merged[0] == [label2id[t] for t in tags]
