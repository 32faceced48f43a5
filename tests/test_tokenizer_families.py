"""Every tokenizer family through the first stage and the word-level contracts (issue 33): family detection,
vocabulary training that keeps the base's pipeline, a coverage report that means the same per family, the
`averaged` decomposition and contextualised rows per family, whole-word masking from word ids, NER words, and
the refusals at start. Bases: tests/helpers/families.py (tiny, built in code)."""

import copy
import json
import re

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoModelForMaskedLM, AutoTokenizer, PreTrainedTokenizerFast

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.ner.tagger import split_words
from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.phases import CurriculumPhase
from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids
from bioptimus_hf.testing.numerics import (
    assert_close_normwise,
    encoder_tolerance,
    linear_output_scale,
    normwise_relative_error,
    recorded_linear_outputs,
)
from bioptimus_hf.utils.tokenizer_families import (
    TOKENIZER_FAMILIES,
    UnsupportedTokenizerFamily,
    tokenizer_family,
    tokenizer_for_words,
)
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer, build_initialized_model
from bioptimus_hf.vocabulary.tokenizer_training import train_tokenizer
from helpers import corpus_lines
from helpers.families import BASE_LINES, BASES, FAMILY_OF_BASE, build_base, write_corpus


NEW_VOCAB_SIZE = 520
# A word-initial entry and a continuation entry of each family, as regular expressions over letters only (so
# that the surface string is plain text).
WORD_INITIAL = {
    "wordpiece": r"[a-z]{3,}",
    "byte_level_bpe": r"Ġ[a-z]{3,}",
    "sentencepiece_unigram": r"▁[a-z]{3,}",
    "sentencepiece_bpe": r"▁[a-z]{3,}",
}
CONTINUATION = {
    "wordpiece": r"##[a-z]{2,}",
    "byte_level_bpe": r"[a-z]{2,}",
    "sentencepiece_unigram": r"[a-z]{2,}",
    "sentencepiece_bpe": r"[a-z]{2,}",
}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """{base: (base directory, new tokenizer directory, corpus)} for every base of helpers.families."""
    root = tmp_path_factory.mktemp("families")
    corpus = write_corpus(root / "corpus.txt", lines=400)
    built = {}
    for base in BASES:
        base_dir = build_base(base, root / base)
        new_dir = root / f"{base}_new"
        train_tokenizer(
            [str(corpus)], str(base_dir), vocab_size=NEW_VOCAB_SIZE, output_dir=str(new_dir), show_progress=False
        )
        built[base] = (base_dir, new_dir, corpus)
    return built


def _without_ids(post_processor: dict | None) -> dict | None:
    """A post-processor's JSON with token ids dropped (ids depend on the vocabulary; the tokens may not)."""
    if post_processor is None:
        return None
    text = json.dumps(post_processor)
    text = re.sub(r'"ids": \[[0-9, ]*\]', '"ids": []', text)
    text = re.sub(r'\["([^"]+)", [0-9]+\]', r'["\1"]', text)  # RobertaProcessing's ["</s>", 2]
    return json.loads(text)


# ----------------------------------------------------------------- families and vocabulary training
@pytest.mark.parametrize("base", BASES)
def test_new_vocabulary_keeps_the_base_pipeline_and_family(bases, base):
    base_dir, new_dir, _ = bases[base]
    base_tok, new_tok = AutoTokenizer.from_pretrained(base_dir), AutoTokenizer.from_pretrained(new_dir)
    assert tokenizer_family(base_tok).name == tokenizer_family(new_tok).name == FAMILY_OF_BASE[base]
    assert type(new_tok) is type(base_tok) and new_tok.is_fast
    assert len(new_tok) <= NEW_VOCAB_SIZE and new_tok.get_vocab() != base_tok.get_vocab()
    base_json = json.loads(base_tok.backend_tokenizer.to_str())
    new_json = json.loads(new_tok.backend_tokenizer.to_str())
    for part in ("normalizer", "pre_tokenizer", "decoder"):
        assert new_json[part] == base_json[part], part
    assert _without_ids(new_json["post_processor"]) == _without_ids(base_json["post_processor"])
    assert new_json["model"]["type"] == base_json["model"]["type"]
    for role in ("unk_token", "cls_token", "sep_token", "pad_token", "mask_token", "bos_token", "eos_token"):
        assert getattr(new_tok, role) == getattr(base_tok, role), role
    for token, added in base_tok.added_tokens_decoder.items():  # special tokens keep their flags (lstrip...)
        new_added = new_tok.added_tokens_decoder[new_tok.convert_tokens_to_ids(added.content)]
        assert (new_added.lstrip, new_added.rstrip, new_added.normalized) == (
            added.lstrip,
            added.rstrip,
            added.normalized,
        )
    # The post-processor puts the same special tokens around a text, with the new ids.
    assert new_tok("kinase").tokens()[0] == base_tok("kinase").tokens()[0]
    assert new_tok("kinase").tokens()[-1] == base_tok("kinase").tokens()[-1]
    # The new vocabulary learnt corpus words, marked as its family marks word starts.
    learnt = [
        t
        for t in set(new_tok.get_vocab()) - set(base_tok.get_vocab())
        if re.fullmatch(WORD_INITIAL[FAMILY_OF_BASE[base]], t)
    ]
    assert learnt, "no new word-initial entry"


@pytest.mark.parametrize("base", BASES)
def test_cli_coverage_report_counts_whitespace_words_in_every_family(tmp_path, bases, base):
    base_dir, _, _ = bases[base]
    lines = corpus_lines(40, BASE_LINES)
    corpus = tmp_path / "sample.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = bioptimus(
        "train-tokenizer",
        [
            "--train_files",
            str(corpus),
            "--base_tokenizer",
            str(base_dir),
            "--output_dir",
            str(tmp_path / "tok"),
            "--vocab_size",
            "480",
            "--coverage_sample_lines",
            "100",
        ],
    )
    family = TOKENIZER_FAMILIES[FAMILY_OF_BASE[base]]
    assert report["family"] == family.name and report["word_start"] == family.word_start
    assert report["shared_tokens"] + report["new_tokens"] == report["new_vocab_size"]
    sample = report["sample"]
    # Every line sampled: the words are the whitespace-separated words, whatever the family's pre-tokeniser.
    assert sample["lines"] == len(lines) and sample["words"] == sum(len(line.split()) for line in lines)
    # Pieces per word by hand: each word tokenized alone, in its position (byte-level: after a space).
    for name, key in ((base_dir, "base_pieces_per_word"), (tmp_path / "tok", "new_pieces_per_word")):
        tokenizer = AutoTokenizer.from_pretrained(name)
        pieces = 0
        for line in lines:
            for i, word in enumerate(line.split()):
                text = " " + word if i and family.name == "byte_level_bpe" else word
                pieces += len(tokenizer(text, add_special_tokens=False)["input_ids"])
        assert sample[key] == pytest.approx(pieces / sample["words"], rel=1e-12), key


def test_families_are_detected_and_others_refused_with_the_reason():
    char_bpe = Tokenizer(models.BPE(vocab={"a": 0, "b": 1, "ab</w>": 2}, merges=[], end_of_word_suffix="</w>"))
    char_bpe.pre_tokenizer = pre_tokenizers.Whitespace()
    with pytest.raises(UnsupportedTokenizerFamily, match=r"BPE model with pre-tokenizer \['Whitespace'\].*none of"):
        tokenizer_family(char_bpe)
    word_level = Tokenizer(models.WordLevel(vocab={"[UNK]": 0, "kinase": 1}, unk_token="[UNK]"))
    with pytest.raises(UnsupportedTokenizerFamily, match="WordLevel model"):
        tokenizer_family(word_level)


@pytest.mark.parametrize(
    "base, option, reason",
    [
        ("deberta", "--min_frequency", "no pair-frequency threshold"),
        ("deberta", "--limit_alphabet", "keeps every character"),
        ("roberta", "--limit_alphabet", "256 byte symbols"),
    ],
)
def test_trainer_options_a_family_lacks_are_refused_before_the_corpus_is_read(tmp_path, bases, base, option, reason):
    base_dir, _, _ = bases[base]
    argv = [
        "--train_files",
        str(tmp_path / "absent.txt"),
        "--base_tokenizer",
        str(base_dir),
        "--output_dir",
        str(tmp_path / "out"),
        option,
        "3",
    ]
    with pytest.raises(SystemExit, match=f"error: {option} does not apply to a .*{reason}.*Leave {option} out"):
        bioptimus("train-tokenizer", argv)
    assert not (tmp_path / "out").exists()


def test_vocabulary_sizes_a_family_cannot_honour_are_refused(tmp_path, bases):
    roberta_dir, _, corpus = bases["roberta"]
    with pytest.raises(ValueError, match=r"256 byte symbols .* 5 special tokens .* --vocab_size 262 or more"):
        train_tokenizer([str(tmp_path / "absent.txt")], str(roberta_dir), vocab_size=261)  # before the corpus
    deberta_dir, _, _ = bases["deberta"]
    with pytest.raises(ValueError, match="--vocab_size 30 is smaller than the corpus alphabet .* Unigram trainer"):
        train_tokenizer([str(corpus)], str(deberta_dir), vocab_size=30, show_progress=False)


# ----------------------------------------------------------------- initialisation per family
def _initializer(bases, base, strategy, **kwargs):
    base_dir, new_dir, _ = bases[base]
    model = AutoModelForMaskedLM.from_pretrained(base_dir).eval()
    args = EmbeddingInitArguments(
        init_strategy=strategy, init_device="cpu", init_norm_match=False, init_precision="float32", **kwargs
    )
    return ContextualizedEmbeddingInitializer(
        model, AutoTokenizer.from_pretrained(base_dir), AutoTokenizer.from_pretrained(new_dir), args, progress=False
    )


def _continuation_pieces(base_tok, family: str, surface: str) -> list[int]:
    """The base tokenizer's pieces for ``surface`` inside a word (after its start), from the base tokenizer."""
    if family == "byte_level_bpe":  # no space before it: a text's start reads the same way as inside a word
        return base_tok(surface, add_special_tokens=False)["input_ids"]
    if family == "wordpiece":  # after a one-letter word start that no longer base entry begins with
        vocab = base_tok.get_vocab()
        lone = next(c for c in "qxjzvkwybfgh" if c in vocab and not any(len(t) > 1 and t.startswith(c) for t in vocab))
        ids = base_tok(lone + surface, add_special_tokens=False)["input_ids"]
        assert ids[0] == vocab[lone]
        return ids[1:]
    # SentencePiece: the base pipeline with its word-start marker off ("never" prepends "▁")
    backend = Tokenizer.from_str(base_tok.backend_tokenizer.to_str())
    metaspaces = (
        [backend.pre_tokenizer]
        if isinstance(backend.pre_tokenizer, pre_tokenizers.Metaspace)
        else [
            backend.pre_tokenizer[i]
            for i in range(len(json.loads(backend.pre_tokenizer.__getstate__())["pretokenizers"]))
        ]
    )
    for pre_tokenizer in metaspaces:
        if isinstance(pre_tokenizer, pre_tokenizers.Metaspace):
            pre_tokenizer.prepend_scheme = "never"
    return backend.encode(surface, add_special_tokens=False).ids


@pytest.mark.parametrize("base", BASES)
def test_averaged_rows_are_hand_means_of_the_base_pieces_in_the_same_position(bases, base):
    family = FAMILY_OF_BASE[base]
    initializer = _initializer(bases, base, "averaged")
    base_tok, new_tok = initializer.base_tokenizer, initializer.new_tokenizer
    base_in = initializer.model.get_input_embeddings().weight.detach().clone()
    base_bias = initializer.model.get_output_embeddings().bias.detach().clone()
    model, report = initializer.initialize()
    new_in, new_bias = model.get_input_embeddings().weight, model.get_output_embeddings().bias
    targets = new_tok.convert_ids_to_tokens(initializer.targets)
    checked = {"word-initial": 0, "continuation": 0}
    for token, token_id in zip(targets, initializer.targets):
        if re.fullmatch(WORD_INITIAL[family], token):
            # the word after a space in running text: its pieces by word id
            surface = new_tok.convert_tokens_to_string([token]).strip()
            encoded = base_tok("the " + surface, add_special_tokens=False)
            ids = [i for i, w in zip(encoded["input_ids"], encoded.word_ids()) if w == 1]
            position = "word-initial"
        elif re.fullmatch(CONTINUATION[family], token):
            ids = _continuation_pieces(base_tok, family, token.removeprefix("##"))
            position = "continuation"
        else:
            continue
        assert len(ids) >= 1
        assert torch.equal(new_in[token_id], base_in[ids].mean(0)), (token, base_tok.convert_ids_to_tokens(ids))
        assert torch.equal(new_bias[token_id], base_bias[ids].mean()), token
        checked[position] += 1
    assert checked["word-initial"] >= 5 and checked["continuation"] >= 3, checked
    assert report["counts"]["averaged"] == len(initializer.targets)


def _context_with_pieces(initializer, corpus):
    """A (token id, Context) pair as qik-find finds it (offsets from the new tokenizer) for a new token that the
    base splits into two or more pieces in that sentence."""
    from bioptimus_hf.vocabulary.qikfind import Context

    targets = set(initializer.targets)
    for index, sentence in enumerate(corpus.read_text(encoding="utf-8").splitlines()):
        encoded = initializer.new_tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
        base = initializer.base_tokenizer(sentence, add_special_tokens=False, return_offsets_mapping=True)
        for token_id, (start, end) in zip(encoded["input_ids"], encoded["offset_mapping"]):
            overlapping = [1 for a, b in base["offset_mapping"] if a < end and b > start]
            if token_id in targets and len(overlapping) >= 2 and len(base["input_ids"]) < 60:
                return token_id, Context(sentence, start, end, index)
    raise AssertionError("no new token split by the base in the corpus")


@pytest.mark.parametrize("base", BASES)
def test_contextualized_rows_average_the_base_pieces_covering_the_span(bases, base):
    initializer = _initializer(bases, base, "contextualized", max_contexts_per_token=1)
    token_id, context = _context_with_pieces(initializer, bases[base][2])
    reference = copy.deepcopy(initializer.model).double().eval()  # exact claims against float64
    model, report = initializer.initialize(contexts={token_id: [context]})
    row = model.get_input_embeddings().weight[token_id]

    base_tok = initializer.base_tokenizer
    encoded = base_tok(context.sentence, return_offsets_mapping=True)  # with the base's own special tokens
    positions = [
        i for i, (a, b) in enumerate(encoded["offset_mapping"]) if b > a and a < context.end and b > context.start
    ]
    with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
        states = reference.base_model(input_ids=torch.tensor([encoded["input_ids"]])).last_hidden_state[0]
    expected, forgot_one = states[positions].mean(0), states[positions[:-1]].mean(0)
    config = reference.config
    # DeBERTa's disentangled attention adds a relative-position product to each layer's longest chain
    extra = config.num_hidden_layers if config.model_type == "deberta-v2" else 0
    tolerance = encoder_tolerance(
        config, torch.float32, extra_depth=extra, contribution_scale=linear_output_scale(sizes, expected)
    )
    assert_close_normwise(row, expected, tolerance, f"{base} contextualized row")
    assert normwise_relative_error(forgot_one, expected) > 3 * tolerance, "the bound would not see a forgotten piece"
    assert report["counts"]["contextualized"] == 1


def test_roberta_windows_stay_inside_positions_numbered_from_the_pad_id(bases):
    """RoBERTa numbers positions from pad id + 1: a sentence longer than the model is cropped to
    max_position_embeddings - (pad id + 1) tokens, not to max_position_embeddings (an index error)."""
    initializer = _initializer(bases, "roberta", "contextualized", max_contexts_per_token=1)
    initializer.base_tokenizer.model_max_length = 10**6  # only the positions limit the window
    token_id, context = _context_with_pieces(initializer, bases["roberta"][2])
    long_sentence = (context.sentence + " ") * 8
    context = context._replace(sentence=long_sentence)
    model, report = initializer.initialize(contexts={token_id: [context]})
    config = model.config
    assert report["forward"]["cropped_pairs"] == 1
    assert report["forward"]["max_context_tokens"] == config.max_position_embeddings - config.pad_token_id - 1


def test_a_new_tokenizer_of_another_family_or_pad_id_is_refused_at_start(tmp_path, bases):
    args = EmbeddingInitArguments(init_strategy="averaged")
    with pytest.raises(
        ValueError,
        match=r"is wordpiece .* but the base tokenizer .* is byte_level_bpe .*"
        r"\(bioptimus train-tokenizer --base_tokenizer <base>\).*--init_strategy scratch",
    ):
        build_initialized_model(str(bases["roberta"][0]), str(bases["bert"][1]), args, progress=False)
    # RoBERTa: the pad id fixes every position; a vocabulary with another one is refused.
    moved = AutoTokenizer.from_pretrained(bases["roberta"][1])
    vocab = moved.get_vocab()
    pad, other = vocab["<pad>"], vocab["<unk>"]
    backend = json.loads(moved.backend_tokenizer.to_str())
    backend["model"]["vocab"]["<pad>"], backend["model"]["vocab"]["<unk>"] = other, pad
    for added in backend["added_tokens"]:
        added["id"] = {pad: other, other: pad}.get(added["id"], added["id"])
    swapped = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(backend)),
        **{
            role: getattr(moved, role)
            for role in ("bos_token", "eos_token", "cls_token", "sep_token", "unk_token", "pad_token", "mask_token")
        },
    )
    swapped.save_pretrained(tmp_path / "swapped")
    with pytest.raises(ValueError, match=r"numbers positions from its pad token id \+ 1 .* pad id 3: every position"):
        build_initialized_model(str(bases["roberta"][0]), str(tmp_path / "swapped"), args, progress=False)


def test_config_special_ids_follow_the_new_vocabulary(bases):
    """ModernBERT's config names its [CLS]/[SEP] ids (and bos/eos = [CLS]/[SEP], as released); they move with the
    tokens, which sit elsewhere in the new vocabulary."""
    base_dir, _, corpus = bases["modernbert"]
    base_tok = AutoTokenizer.from_pretrained(base_dir)
    # Specials last, as in ModernBERT's own vocabulary: every special id differs from the base's.
    moved = train_tokenizer([str(corpus)], base_tok, vocab_size=NEW_VOCAB_SIZE, show_progress=False)
    backend = json.loads(moved.backend_tokenizer.to_str())
    vocab = backend["model"]["vocab"]
    specials = [a["content"] for a in backend["added_tokens"]]
    order = [t for t in sorted(vocab, key=vocab.get) if t not in specials] + specials
    backend["model"]["vocab"] = {t: i for i, t in enumerate(order)}
    for added in backend["added_tokens"]:
        added["id"] = backend["model"]["vocab"][added["content"]]
    for entry in backend["post_processor"]["special_tokens"].values():
        entry["ids"] = [backend["model"]["vocab"][t] for t in entry["tokens"]]
    moved = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(backend)),
        **{
            role: getattr(base_tok, role)
            for role in ("cls_token", "sep_token", "unk_token", "pad_token", "mask_token")
        },
    )
    assert moved.cls_token_id != base_tok.cls_token_id
    base_model = AutoModelForMaskedLM.from_pretrained(base_dir)
    initializer = ContextualizedEmbeddingInitializer(
        base_model, base_tok, moved, EmbeddingInitArguments(init_strategy="random"), progress=False
    )
    config = initializer.initialize()[0].config
    assert (config.cls_token_id, config.sep_token_id, config.pad_token_id) == (
        moved.cls_token_id,
        moved.sep_token_id,
        moved.pad_token_id,
    )
    assert (config.bos_token_id, config.eos_token_id) == (moved.cls_token_id, moved.sep_token_id)


# ----------------------------------------------------------------- words: masking and NER
@pytest.mark.parametrize("base", BASES)
def test_whole_words_follow_each_family_s_word_start_marker(bases, base):
    family = TOKENIZER_FAMILIES[FAMILY_OF_BASE[base]]
    tokenizer = AutoTokenizer.from_pretrained(bases[base][1])
    encoded = tokenize_with_word_ids({"text": corpus_lines(60, BASE_LINES)}, tokenizer, line_by_line=False)
    encoded.pop("chunk")
    features = group_texts(encoded, 48)
    # A word is one pre-tokenised word: only its first piece carries a word-start marker (or only its later
    # pieces carry WordPiece's continuation marker).
    for ids, word_ids in zip(features["input_ids"], features["word_ids"]):
        tokens = tokenizer.convert_ids_to_tokens(ids)
        for i in range(1, len(ids)):
            if word_ids[i] < 0:
                continue
            same_word = word_ids[i] == word_ids[i - 1]
            if family.marks_continuations:
                assert same_word == tokens[i].startswith("##"), tokens[i - 1 : i + 1]
            elif tokens[i][0] in "Ġ▁":
                assert not same_word, tokens[i - 1 : i + 1]
    phase = CurriculumPhase("w", masking_unit="word", masking_rate=0.2)
    collator = CurriculumDataCollator(tokenizer, phases=[phase], seed=3)
    padded = collator([{k: features[k][i] for k in features} for i in range(len(features["input_ids"]))])
    selected = collator.mask(padded)["labels"] != -100
    word_ids = padded["word_ids"]
    assert selected.any()
    for row in range(selected.shape[0]):
        for word in set(word_ids[row][word_ids[row] >= 0].tolist()):
            flags = selected[row][word_ids[row] == word]
            assert flags.all() or not flags.any(), f"word {word} partly masked"


def test_whole_word_phases_refuse_a_tokenizer_without_word_boundaries(bases):
    tokenizer = AutoTokenizer.from_pretrained(bases["deberta"][1])
    tokenizer.backend_tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="always", split=False)
    word = CurriculumPhase("0.2", masking_unit="word", masking_rate=0.15)
    with pytest.raises(ValueError, match=r"phase v0.2 masks whole words, but .* one word id.*masking_unit: token"):
        CurriculumDataCollator(tokenizer, phases=[CurriculumPhase("0.1"), word])
    CurriculumDataCollator(tokenizer, phases=[CurriculumPhase("0.1")])  # token masking needs no words


@pytest.mark.parametrize("base", BASES)
def test_ner_words_are_tokenized_as_in_running_text(bases, base):
    tokenizer = tokenizer_for_words(AutoTokenizer.from_pretrained(bases[base][1]))
    text = "The kinase phosphorylation of interleukin receptors"
    words = text.split()
    by_word = tokenizer(words, is_split_into_words=True, add_special_tokens=False)
    running = tokenizer(text, add_special_tokens=False)
    for i in range(1, len(words)):  # a text's first word has no space before it in running text
        assert [t for t, w in zip(by_word.tokens(), by_word.word_ids()) if w == i] == [
            t for t, w in zip(running.tokens(), running.word_ids()) if w == i
        ], words[i]
    # The tagger's words are the surface words (no "Ġ"/"▁"), with their offsets.
    raw = "The kinase  binds IL-2 ."
    for word, (start, end) in split_words(tokenizer, raw):
        assert word == raw[start:end] and word.strip() == word and word


def test_the_roberta_modernbert_config_example_names_only_real_flags():
    """configs/roberta_modernbert_base.yaml: every key is a flag of run_pretraining.py, and the recipe's own
    settings parse (TrainingArguments' are only checked by name: its nccl backend needs GPUs)."""
    import dataclasses
    from pathlib import Path

    import yaml
    from transformers import TrainingArguments

    from bioptimus_hf.pretraining.bioptimus_config import (
        PRETRAINING_ARGUMENT_TYPES,
        CurriculumArguments,
        PretrainingDataArguments,
        PretrainingModelArguments,
        build_curriculum,
    )
    from bioptimus_hf.utils.config_mapping import CommandParser

    config = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "configs" / "roberta_modernbert_base.yaml").read_text()
    )
    flags = {f.name for cls in PRETRAINING_ARGUMENT_TYPES for f in dataclasses.fields(cls)}
    assert set(config) <= flags, set(config) - flags
    ours = (PretrainingModelArguments, EmbeddingInitArguments, PretrainingDataArguments, CurriculumArguments)
    names = {f.name for cls in ours for f in dataclasses.fields(cls)} - {
        f.name for f in dataclasses.fields(TrainingArguments)
    }
    parsed = CommandParser(ours).parse_dict({k: v for k, v in config.items() if k in names})
    assert parsed[1].init_strategy == "contextualized" and build_curriculum(parsed[3]).phases


def test_what_a_new_vocabulary_does_not_inherit_is_said_before_training(tmp_path, bases, caplog):
    """ModernBERT-style non-special added tokens and SentencePiece byte fallback are not relearnt: a warning at
    start says so (training still runs)."""
    base_tok = AutoTokenizer.from_pretrained(bases["sentencepiece_bpe"][0])
    pipeline = json.loads(base_tok.backend_tokenizer.to_str())
    pipeline["model"]["byte_fallback"] = True
    for byte in range(256):
        pipeline["model"]["vocab"][f"<0x{byte:02X}>"] = len(pipeline["model"]["vocab"])
    base_tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(pipeline)),
        **{
            role: getattr(base_tok, role)
            for role in ("cls_token", "sep_token", "unk_token", "pad_token", "mask_token")
        },
    )
    base_tok.add_tokens(["|||EMAIL_ADDRESS|||"])
    with caplog.at_level("WARNING"):
        with pytest.raises(FileNotFoundError):
            train_tokenizer([str(tmp_path / "absent.txt")], base_tok, vocab_size=400)
    said = caplog.text
    assert "not carried over: 1 non-special added tokens of the base ('|||EMAIL_ADDRESS|||')" in said
    assert "not carried over: byte fallback" in said
