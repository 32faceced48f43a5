"""Extending a base vocabulary (bioptimus train-tokenizer --vocabulary_mode extend) on a WordPiece BERT, a byte-level
BPE RoBERTa and a SentencePiece Unigram DeBERTa base (tests/helpers/families.py; the extension itself on a
SentencePiece BPE base too): the base kept entry for entry, the domain tokens appended the way each family's model
works, the coverage report, every init strategy copying the base rows bit for bit, and the whole recipe to a release
that reloads with from_pretrained."""

import json
import logging

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertForMaskedLM

import run_pretraining
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.releases.record import RunFacts
from bioptimus_hf.vocabulary import focus_init, qikfind
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from bioptimus_hf.vocabulary.tokenizer_config import TokenizerTrainingArguments
from bioptimus_hf.vocabulary.tokenizer_training import extend_tokenizer, save_tokenizer
from helpers import corpus_lines
from helpers.families import BASE_VOCAB_SIZE, build_base, write_corpus


FAMILIES = {"bert": "wordpiece", "roberta": "byte_level_bpe", "deberta": "sentencepiece_unigram"}
BASE_SIZE = BASE_VOCAB_SIZE
HELDOUT = corpus_lines(60, 1500)  # lines neither the bases nor the corpora saw


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("bases")
    corpus = write_corpus(root / "corpus.txt", lines=300)
    return {base: build_base(base, root / base) for base in [*FAMILIES, "sentencepiece_bpe"]}, corpus


def _extend(corpus, base_dir, vocab_size: int, sample_lines: int):
    args = TokenizerTrainingArguments(
        [str(corpus)], str(base_dir), "unused", "extend", vocab_size, coverage_sample_lines=sample_lines
    )
    return extend_tokenizer(args, show_progress=False)


def _pipeline(tokenizer):
    return json.loads(tokenizer.backend_tokenizer.to_str())


def _pieces_by_word(tokenizer, line):
    encoded = tokenizer(line, add_special_tokens=False)
    words: dict[int, list[int]] = {}
    for index, word in zip(encoded["input_ids"], encoded.word_ids()):
        words.setdefault(word, []).append(index)
    return words


def assert_base_kept_and_base_text_tokenized_as_base(base, extended):
    """Every base entry keeps its string and id; a word the extended tokenizer spells in base pieces only is
    spelled exactly as the base spells it; some words use an added token."""
    assert {t: extended.get_vocab()[t] for t in base.get_vocab()} == base.get_vocab()
    assert extended.all_special_tokens == base.all_special_tokens
    assert extended.all_special_ids == base.all_special_ids
    base_only = with_added = 0
    for line in HELDOUT:
        base_words, extended_words = _pieces_by_word(base, line), _pieces_by_word(extended, line)
        assert base_words.keys() == extended_words.keys()  # the same pre-tokeniser: the same words
        for word, ids in extended_words.items():
            if all(i < len(base) for i in ids):
                assert ids == base_words[word], (line, word)
                base_only += 1
            else:
                with_added += 1
    assert base_only > 100 and with_added > 20
    assert base("x y")["input_ids"][:1] == extended("x y")["input_ids"][:1]  # the post-processor's specials


@pytest.mark.parametrize("base_name", [*FAMILIES, "sentencepiece_bpe"])
def test_extension_keeps_the_base_pipeline_and_appends_the_family_s_entries(tmp_path, bases, base_name):
    base_dirs, corpus = bases
    base = AutoTokenizer.from_pretrained(base_dirs[base_name])
    extension = _extend(corpus, base_dirs[base_name], BASE_SIZE + 60, sample_lines=300)
    extended = extension.tokenizer
    save_tokenizer(extended, str(tmp_path / "extended"))
    assert len(extended) == BASE_SIZE + 60 and extension.added_tokens == 60
    assert_base_kept_and_base_text_tokenized_as_base(base, extended)

    # Only the model's vocabulary grew: normaliser, pre-tokeniser, post-processor, decoder, added tokens as the base.
    base_json, extended_json = _pipeline(base), _pipeline(extended)
    base_model, extended_model = base_json.pop("model"), extended_json.pop("model")
    assert extended_json == base_json
    assert type(extended).__name__ == type(base).__name__
    if (
        extended_model["type"] == "BPE"
    ):  # byte-level or SentencePiece: base merges first, then the domain's with tokens
        merges = extended_model["merges"]
        assert merges[: len(base_model["merges"])] == base_model["merges"]
        appended = merges[len(base_model["merges"]) :]
        assert len(appended) == 60
        assert [a + b for a, b in appended] == extended.convert_ids_to_tokens(list(range(BASE_SIZE, BASE_SIZE + 60)))
    elif base_name == "deberta":  # Unigram: the base pieces with their scores, then the domain pieces with theirs
        # Scores to 1e-12: tokenizers' JSON parser (serde_json without float_roundtrip) may read a score 1 ulp off.
        pieces = [piece for piece, _ in extended_model["vocab"]]
        assert pieces[:BASE_SIZE] == [piece for piece, _ in base_model["vocab"]]
        assert [s for _, s in extended_model["vocab"][:BASE_SIZE]] == pytest.approx(
            [s for _, s in base_model["vocab"]], rel=1e-12
        )
        candidate_scores = dict(map(tuple, _pipeline(extension.candidate)["model"]["vocab"]))
        assert [s for _, s in extended_model["vocab"][BASE_SIZE:]] == pytest.approx(
            [candidate_scores[piece] for piece in pieces[BASE_SIZE:]], rel=1e-12
        )
    else:  # WordPiece: "##" continuations among the added entries, ranked by emissions of the candidate tokenizer
        added = extended.convert_ids_to_tokens(list(range(BASE_SIZE, BASE_SIZE + 60)))
        assert any(t.startswith("##") for t in added) and any(not t.startswith("##") for t in added)
        candidate = extension.candidate
        emitted = {}
        for ids in candidate(corpus.read_text().splitlines(), add_special_tokens=False)["input_ids"]:
            for i in ids:
                emitted[i] = emitted.get(i, 0) + 1
        counts = [emitted.get(candidate.convert_tokens_to_ids(t), 0) for t in added]
        assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]

    # save_pretrained round trip: the same vocabulary and the same tokenization.
    reloaded = AutoTokenizer.from_pretrained(tmp_path / "extended")
    assert reloaded.get_vocab() == extended.get_vocab()
    assert [reloaded(line)["input_ids"] for line in HELDOUT] == [extended(line)["input_ids"] for line in HELDOUT]


@pytest.mark.parametrize("base_name", ["bert", "deberta"])
def test_an_added_token_past_the_model_s_entries_keeps_its_id(tmp_path, bases, base_name):
    """As DeBERTa-v3's [MASK] (an added token whose id follows the model's pieces): appended entries come after it,
    and a Unigram model, whose ids are list positions, holds it at its id."""
    base_dirs, corpus = bases
    base = AutoTokenizer.from_pretrained(base_dirs[base_name])
    assert base.add_tokens(["[EXTRA]"], special_tokens=True) == 1
    assert base.convert_tokens_to_ids("[EXTRA]") == BASE_SIZE
    base.save_pretrained(tmp_path / "base")
    extended = _extend(corpus, tmp_path / "base", BASE_SIZE + 21, sample_lines=100).tokenizer
    assert len(extended) == BASE_SIZE + 21 and extended.convert_tokens_to_ids("[EXTRA]") == BASE_SIZE
    assert sorted(extended.get_vocab().values()) == list(range(BASE_SIZE + 21))
    text = "the kinase [EXTRA] binds"
    assert extended(text)["input_ids"].count(BASE_SIZE) == 1 == base(text)["input_ids"].count(BASE_SIZE)


def test_cli_extends_reports_every_vocabulary_and_grows_auto_in_steps(tmp_path, bases, caplog):
    base_dirs, corpus = bases
    heldout = tmp_path / "heldout.txt"
    heldout.write_text("\n".join(HELDOUT) + "\n")
    common = [
        "--train_files",
        str(corpus),
        "--base_tokenizer",
        str(base_dirs["bert"]),
        "--heldout_files",
        str(heldout),
        "--vocabulary_mode",
        "extend",
        "--coverage_sample_lines",
        "300",
    ]
    with caplog.at_level(logging.INFO, logger="bioptimus_hf.vocabulary.tokenizer_training"):
        report = bioptimus(
            "train-tokenizer",
            common
            + [
                "--output_dir",
                str(tmp_path / "auto"),
                "--vocab_size",
                "auto",
                "--auto_vocab_step",
                "30",
                "--auto_vocab_threshold",
                "0.02",
            ],
        )
    assert json.loads((tmp_path / "auto" / "coverage_report.json").read_text()) == report
    steps = report["auto_steps"]
    assert steps[0] == {
        "added_tokens": 0,
        "vocab_size": BASE_SIZE,
        "tokens_per_word": steps[0]["tokens_per_word"],
        "improvement": None,
    }
    assert [s["added_tokens"] for s in steps[1:]] == [30 * k for k in range(1, len(steps))]
    # Kept: the last step that improved tokens per word by 2 % or more; the step after it did not.
    assert all(s["improvement"] >= 0.02 for s in steps[1:-1]) and steps[-1]["improvement"] < 0.02
    assert report["added_tokens"] == steps[-2]["added_tokens"] > 0
    assert len(AutoTokenizer.from_pretrained(tmp_path / "auto")) == BASE_SIZE + report["added_tokens"]
    assert sum("vocabulary growth: +" in r.getMessage() for r in caplog.records) == len(steps) - 1

    for where in ("corpus", "heldout"):
        measured = report["vocabularies"][where]
        assert set(measured) == {"base", "replaced", "extended"}
        assert measured["base"]["changed_base_ids"] == measured["extended"]["changed_base_ids"] == 0
        assert measured["replaced"]["changed_base_ids"] > 100  # a new vocabulary renumbers the base's entries
        assert measured["base"]["median_line_shortening_vs_base"] == 0
        assert measured["extended"]["vocab_size"] == BASE_SIZE + report["added_tokens"]
        for name in ("replaced", "extended"):
            assert measured[name]["tokens_per_word"] < measured["base"]["tokens_per_word"]
            assert measured[name]["words_split_3_or_more"] < measured["base"]["words_split_3_or_more"]
            assert measured[name]["median_line_shortening_vs_base"] > 0
    assert report["vocabulary_mode"] == "extend" and "emissions" in report["added_tokens_ranked_by"]

    # replace (the default) measures the base and the replacement only.
    replaced = bioptimus(
        "train-tokenizer",
        common[:-4] + ["--output_dir", str(tmp_path / "new"), "--vocab_size", "480", "--coverage_sample_lines", "100"],
    )
    assert replaced["vocabulary_mode"] == "replace" and set(replaced["vocabularies"]["corpus"]) == {"base", "replaced"}
    assert "added_tokens" not in replaced


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--vocab_size", "auto"],
            (
                r"^error: --vocab_size auto grows an extended vocabulary: it needs "
                r"--vocabulary_mode extend$"
            ),
        ),
        (["--vocab_size", "lots"], r"^error: --vocab_size 'lots' is neither a number nor auto$"),
        (
            ["--vocabulary_mode", "extend", "--vocab_size", "420"],
            r"^error: --vocab_size 420 leaves nothing to add to the base's 420 entries .* Use --vocab_size 421 or more",
        ),
        (
            ["--vocabulary_mode", "extend", "--vocab_size", "auto", "--auto_vocab_threshold", "0"],
            r"^error: --auto_vocab_threshold 0.0 must be positive",
        ),
    ],
)
def test_bad_extension_flags_end_with_one_line_naming_the_flag(tmp_path, bases, flags, message):
    base_dirs, corpus = bases
    with pytest.raises(SystemExit, match=message):
        bioptimus(
            "train-tokenizer",
            [
                "--train_files",
                str(corpus),
                "--base_tokenizer",
                str(base_dirs["bert"]),
                "--output_dir",
                str(tmp_path / "out"),
            ]
            + flags,
        )
    assert not (tmp_path / "out").exists()


def _untied_bert(directory, target):
    model = BertForMaskedLM.from_pretrained(directory)
    model.config.tie_word_embeddings = False
    untied = BertForMaskedLM(model.config)
    untied.load_state_dict(model.state_dict())
    with torch.no_grad():  # a decoder of its own, unlike the input rows
        untied.get_output_embeddings().weight.copy_(torch.randn_like(untied.get_output_embeddings().weight))
    untied.save_pretrained(target)
    AutoTokenizer.from_pretrained(directory).save_pretrained(target)
    return target


@pytest.mark.parametrize("tied", [True, False], ids=["tied", "untied"])
@pytest.mark.parametrize(
    "strategy", ["random", "averaged", "contextualized", "mean_cov", "token_distillation", "focus"]
)
def test_every_strategy_copies_every_base_row_bit_for_bit_and_searches_added_tokens_only(
    tmp_path, bases, monkeypatch, strategy, tied
):
    base_dirs, corpus = bases
    base_dir = base_dirs["bert"] if tied else _untied_bert(base_dirs["bert"], tmp_path / "untied")
    base = AutoTokenizer.from_pretrained(base_dir)
    extended = _extend(corpus, base_dir, BASE_SIZE + 40, sample_lines=300).tokenizer
    model = AutoModelForMaskedLM.from_pretrained(base_dir)
    before = {
        name: layer.detach().clone()
        for name, layer in (
            ("input", model.get_input_embeddings().weight),
            ("output", model.get_output_embeddings().weight),
            ("bias", model.get_output_embeddings().bias),
        )
    }
    searched = []
    real_find = qikfind.find_contexts
    monkeypatch.setattr(
        qikfind,
        "find_contexts",
        lambda files, tok, targets, *a, **kw: (searched.extend(targets), real_find(files, tok, targets, *a, **kw))[1],
    )
    if strategy == "focus":  # deepfocus stands in: rows for every id, of which only the added ones may be used
        monkeypatch.setattr(
            focus_init,
            "_deepfocus",
            lambda: (
                lambda target_tokenizer, **kw: torch.randn(len(target_tokenizer), 32),
                lambda *a, **kw: None,
                lambda token, model: False,
            ),
        )
    args = EmbeddingInitArguments(
        init_strategy=strategy, max_contexts_per_token=1, distill_steps=1, init_device="cpu", init_num_threads=1
    )
    initializer = ContextualizedEmbeddingInitializer(model, base, extended, args, seed=0, progress=False)
    out, report = initializer.initialize(corpus_files=[str(corpus)])

    added = list(range(BASE_SIZE, BASE_SIZE + 40))
    assert initializer.targets == added
    assert report["vocabulary"] == {"mode": "extend", "added_tokens": 40}
    assert report["counts"]["copied"] == BASE_SIZE and report["tied_embeddings"] == tied
    rows = {
        "input": out.get_input_embeddings().weight,
        "output": out.get_output_embeddings().weight,
        "bias": out.get_output_embeddings().bias,
    }
    for name, base_rows in before.items():
        assert rows[name].shape[0] == BASE_SIZE + 40
        assert torch.equal(rows[name][:BASE_SIZE], base_rows), name
        assert torch.isfinite(rows[name][BASE_SIZE:]).all()
    if tied:
        assert out.get_output_embeddings().weight.data_ptr() == out.get_input_embeddings().weight.data_ptr()
    assert not torch.equal(rows["input"][BASE_SIZE], rows["input"][BASE_SIZE + 1])
    if strategy in ("contextualized", "token_distillation"):
        assert sorted(searched) == added  # qik-find looked for the added tokens, no base token
        assert report["forward"]["sampled_pairs"] > 0 if strategy == "contextualized" else True
    else:
        assert searched == []


def test_run_facts_write_the_vocabulary_mode_only_when_known():
    facts = RunFacts(vocab_size=460, vocabulary_mode="extend", added_tokens=40)
    assert RunFacts.from_dict(facts.to_dict()) == facts
    plain = RunFacts(vocab_size=420).to_dict()
    assert "vocabulary_mode" not in plain and "added_tokens" not in plain
    assert RunFacts.from_dict(plain).vocabulary_mode is None  # a record written before the fields existed


@pytest.mark.parametrize("base_name", list(FAMILIES))
def test_extend_init_curriculum_and_a_release_that_tokenizes_base_text_as_the_base(tmp_path, bases, base_name):
    base_dirs, corpus = bases
    base_dir = base_dirs[base_name]
    tokenizer_dir = tmp_path / "tokenizer"
    report = bioptimus(
        "train-tokenizer",
        [
            "--train_files",
            str(corpus),
            "--base_tokenizer",
            str(base_dir),
            "--output_dir",
            str(tokenizer_dir),
            "--vocabulary_mode",
            "extend",
            "--vocab_size",
            "470",
            "--coverage_sample_lines",
            "100",
        ],
    )
    assert report["family"] == FAMILIES[base_name] and report["added_tokens"] == 50

    curriculum = tmp_path / "two_phases.yaml"
    curriculum.write_text(
        '[{version: "0.1", masking_unit: token, masking_rate: 0.15, corruption: true},'
        ' {version: "0.2", masking_unit: word, masking_rate: 0.2, corruption: false}]\n'
    )
    out = tmp_path / "run"
    run_pretraining.main(
        [
            "--model_name_or_path",
            str(base_dir),
            "--tokenizer_name",
            str(tokenizer_dir),
            "--init_strategy",
            "contextualized",
            "--max_contexts_per_token",
            "2",
            "--curriculum",
            str(curriculum),
            "--phase_steps",
            "0.5",
            "0.5",
            "--train_file",
            str(corpus),
            "--output_dir",
            str(out),
            "--do_train",
            "--max_steps",
            "2",
            "--per_device_train_batch_size",
            "2",
            "--max_seq_length",
            "32",
            "--max_train_samples",
            "16",
            "--max_eval_samples",
            "4",
            "--logging_steps",
            "1",
            "--save_steps",
            "100",
            "--report_to",
            "none",
            "--disable_tqdm",
            "true",
        ]
    )
    init_report = json.loads((out / "init_report.json").read_text())
    assert init_report["counts"]["copied"] == BASE_SIZE and init_report["counts"]["new_tokens"] == 50

    release = out / "releases" / "v0.2"
    model = AutoModelForMaskedLM.from_pretrained(release)
    tokenizer = AutoTokenizer.from_pretrained(release)
    assert model.get_input_embeddings().num_embeddings == len(tokenizer) == 470
    assert_base_kept_and_base_text_tokenized_as_base(AutoTokenizer.from_pretrained(base_dir), tokenizer)
    run = json.loads((release / "bioptimus_phase.json").read_text())["run"]
    assert (run["vocabulary_mode"], run["added_tokens"], run["vocab_size"]) == ("extend", 50, 470)
    assert "(470 entries): the base vocabulary extended by 50 tokens" in (release / "README.md").read_text()
