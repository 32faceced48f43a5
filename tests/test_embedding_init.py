import copy
import dataclasses
import json
import os

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, BertTokenizer

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.pretraining.bioptimus_config import EmbeddingInitArguments
from bioptimus_hf.testing.numerics import (
    assert_close_normwise,
    encoder_tolerance,
    linear_output_scale,
    normwise_relative_error,
    recorded_linear_outputs,
    relative_tolerance,
)
from bioptimus_hf.utils import hardware
from bioptimus_hf.utils.hardware import resolve_precision
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer, build_initialized_model
from helpers import python_path, run_launcher
from helpers.embedding_init import (
    LETTERS,
    NEW_TOKENS,
    NEW_VOCAB,
    ctx,
    float64_copy,
    hand_contextualized,
    init_args,
    make_base,
    make_tokenizer,
    run,
)


def test_shared_rows_and_bias_copied_exactly(init_setup):
    model, base_tok, new_tok = init_setup
    base_in = model.get_input_embeddings().weight.detach().clone()
    base_bias = model.get_output_embeddings().bias.detach().clone()
    _, out, report = run(model, base_tok, new_tok, "averaged")
    new_in, new_bias = out.get_input_embeddings().weight, out.get_output_embeddings().bias
    assert new_in.shape[0] == len(NEW_VOCAB) == out.config.vocab_size
    base_ids, new_ids = base_tok.get_vocab(), new_tok.get_vocab()
    shared = [t for t in NEW_VOCAB if t in base_ids]
    assert "[MASK]" in shared and "receptor" in shared and "##ase" in shared
    for token in shared:
        assert torch.equal(new_in[new_ids[token]], base_in[base_ids[token]]), token
        assert new_bias[new_ids[token]] == base_bias[base_ids[token]], token
    assert report["counts"]["copied"] == len(shared)
    assert report["counts"]["averaged"] == len(NEW_TOKENS)
    assert out.config.pad_token_id == new_tok.pad_token_id


def test_averaged_rows_are_means_of_base_pieces(init_setup):
    model, base_tok, new_tok = init_setup
    base_in = model.get_input_embeddings().weight.detach().clone()
    base_bias = model.get_output_embeddings().bias.detach().clone()
    _, out, _ = run(model, base_tok, new_tok, "averaged")
    v = base_tok.get_vocab()
    new_ids = new_tok.get_vocab()
    expected_pieces = {
        "kinase": ["kin", "##ase"],
        "thymus": ["t", "##h", "##y", "##m", "##u", "##s"],
        # a continuation piece is split with the base "##" pieces, greedy longest match
        "##kinase": ["##k", "##i", "##n", "##ase"],
    }
    for token, pieces in expected_pieces.items():
        ids = [v[p] for p in pieces]
        row = out.get_input_embeddings().weight[new_ids[token]]
        assert torch.allclose(row, base_in[ids].mean(0), atol=1e-6), token
        assert torch.isclose(out.get_output_embeddings().bias[new_ids[token]], base_bias[ids].mean(), atol=1e-6)


# float32 and bf16 asked for explicitly run on every CPU (bf16 emulated where not native); `auto` is the
# path this machine takes, and tests/README.md's second pass forces its bf16 branch (BIOPTIMUS_FORCE_BF16).
PRECISIONS = ["float32", "bf16", pytest.param("auto", marks=pytest.mark.precision)]


def check_row(row, expected, linear_outputs, config, precision, what, bug=None):
    """``row`` equals its float64 reference within the bound of the precision ``precision`` resolves to on
    this CPU; ``bug`` (the reference as a known bug computes it) lies beyond three times that bound, so the
    comparison keeps its power to fail."""
    dtype = resolve_precision(precision, "cpu")
    scale = linear_output_scale(linear_outputs, expected)
    tolerance = encoder_tolerance(config, dtype, contribution_scale=scale)
    assert_close_normwise(row, expected, tolerance, what)
    if bug is not None:
        assert normwise_relative_error(bug, expected) > 3 * tolerance, (
            f"{what}: the bound {tolerance:.2e} would not see the bug"
        )


@pytest.mark.parametrize("precision", PRECISIONS)
def test_contextualized_rows_match_hand_computation(init_setup, precision):
    model, base_tok, new_tok = init_setup
    reference = float64_copy(model)
    new_ids = new_tok.get_vocab()
    s1 = "the kinase of the thymus cells"
    s2 = "interleukin receptor kinase"
    s3 = "kinase kinase receptor"
    contexts = {
        new_ids["kinase"]: [ctx(s1, "kinase", 0), ctx(s2, "kinase", 1), ctx(s3, "kinase", 2, occurrence=1)],
        new_ids["thymus"]: [ctx(s1, "thymus", 0)],
        new_ids["interleukin"]: [ctx(s2, "interleukin", 1)],
        new_ids["##kinase"]: [],  # never found -> averaged fallback
    }
    initializer, out, report = run(
        model, base_tok, new_tok, "contextualized", contexts=contexts, init_precision=precision
    )
    assert report["forward"]["bf16"] is (resolve_precision(precision, "cpu") == torch.bfloat16)
    rows = out.get_input_embeddings().weight
    for token in ("kinase", "thymus", "interleukin"):
        sizes = []
        expected = torch.stack([hand_contextualized(reference, base_tok, c, sizes) for c in contexts[new_ids[token]]])
        forgetful = torch.stack(
            [hand_contextualized(reference, base_tok, c, drop_last_piece=True) for c in contexts[new_ids[token]]]
        )
        check_row(rows[new_ids[token]], expected.mean(0), sizes, model.config, precision, token, bug=forgetful.mean(0))
    v = base_tok.get_vocab()
    fallback = reference.get_input_embeddings().weight[[v["##k"], v["##i"], v["##n"], v["##ase"]]].mean(0)
    # no matrix product on this path: a mean of four float32 rows, exact to float32 rounding
    assert_close_normwise(rows[new_ids["##kinase"]], fallback, relative_tolerance(torch.float32, 4), "##kinase")
    # Each distinct sentence is encoded once although it serves several (token, sentence) pairs.
    assert initializer.forward_passes == 3 == report["forward"]["distinct_sentences"]
    assert report["forward"]["sampled_pairs"] == 5
    counts = report["counts"]
    assert (counts["contextualized"], counts["averaged_fallback"], counts["random"]) == (3, 1, 0)
    assert counts["copied"] + counts["contextualized"] + counts["averaged_fallback"] == counts["new_vocab_size"]
    assert report["contexts_per_token"]["histogram"] == {"0": 1, "1": 2, "3": 1}
    assert report["contexts_per_token_found"]["min"] == 1


def test_contexts_capped_per_token_with_seeded_sample(init_setup):
    model, base_tok, new_tok = init_setup
    kinase = new_tok.get_vocab()["kinase"]
    sentences = [f"the kinase {c} cells" for c in LETTERS[:30]]
    contexts = {kinase: [ctx(s, "kinase", i) for i, s in enumerate(sentences)]}
    initializer, _, report = run(
        model, base_tok, new_tok, "contextualized", contexts=contexts, max_contexts_per_token=20
    )
    assert report["contexts_per_token"]["max"] == 20
    assert report["forward"]["sampled_pairs"] == 20 == initializer.forward_passes
    again = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, init_args(), seed=0)
    other = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, init_args(), seed=1)
    assert again._sample_contexts(contexts) == initializer._sample_contexts(contexts)
    assert other._sample_contexts(contexts) != initializer._sample_contexts(contexts)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_long_sentence_cropped_to_model_length(tmp_path, precision):
    model, base_tok = make_base(tmp_path, max_positions=16)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    reference = float64_copy(model)
    kinase = new_tok.get_vocab()["kinase"]
    sentence = " ".join(["cells"] * 30) + " kinase " + " ".join(["the"] * 30)
    contexts = {kinase: [ctx(sentence, "kinase")]}
    _, out, report = run(model, base_tok, new_tok, "contextualized", contexts=contexts, init_precision=precision)
    assert report["forward"]["cropped_pairs"] == 1
    ids = base_tok(sentence, add_special_tokens=False)["input_ids"]

    def window_states(first, sizes=None):
        window = [base_tok.cls_token_id] + ids[first : first + 14] + [base_tok.sep_token_id]
        with torch.no_grad(), recorded_linear_outputs(reference) as recorded:
            states = reference.bert(input_ids=torch.tensor([window])).last_hidden_state[0]
        if sizes is not None:
            sizes.extend(recorded)
        return states

    # Window of 14 base tokens centred on [kin, ##ase] (positions 30, 31 of 62): tokens 24..37, so the
    # span sits at window positions 7, 8 ([CLS] first). An off-centre crop (tokens 20..33) is the bug.
    sizes = []
    expected = window_states(24, sizes)[7:9].mean(0)
    off_centre = window_states(20)[11:13].mean(0)
    check_row(
        out.get_input_embeddings().weight[kinase], expected, sizes, model.config, precision, "kinase", bug=off_centre
    )


def test_random_rows_follow_initializer_range(init_setup):
    model, base_tok, new_tok = init_setup
    _, out, report = run(model, base_tok, new_tok, "random")
    ids = [new_tok.get_vocab()[t] for t in NEW_TOKENS]
    rows = out.get_input_embeddings().weight[ids]
    assert abs(rows.std().item() - model.config.initializer_range) < 0.006
    assert torch.all(out.get_output_embeddings().bias[ids] == 0)
    assert report["counts"]["random"] == len(NEW_TOKENS)


def test_norm_match_rescales_to_base_norms(init_setup):
    model, base_tok, new_tok = init_setup
    base_norms = model.get_input_embeddings().weight.detach()[5:].norm(dim=1)
    new_ids = new_tok.get_vocab()
    s = "interleukin kinase the thymus"
    contexts = {new_ids[t]: [ctx(s, t)] for t in ("interleukin", "kinase", "thymus")}
    _, out, report = run(model, base_tok, new_tok, "contextualized", contexts=contexts, norm_match=True)
    norms = out.get_input_embeddings().weight[list(contexts)].norm(dim=1)
    assert abs(norms.mean().item() - base_norms.mean().item()) < 1e-4
    assert abs(norms.std().item() - base_norms.std().item()) < 1e-4
    assert report["norm_match"]["contextualized_norm_mean_before"] > 2 * base_norms.mean().item()


def test_tied_after_init_and_after_save_load(init_setup, tmp_path):
    model, base_tok, new_tok = init_setup
    _, out, _ = run(model, base_tok, new_tok, "averaged")
    assert out.get_output_embeddings().weight.data_ptr() == out.get_input_embeddings().weight.data_ptr()
    out.save_pretrained(tmp_path / "ckpt")
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path / "ckpt")
    assert loaded.get_output_embeddings().weight.data_ptr() == loaded.get_input_embeddings().weight.data_ptr()
    assert torch.equal(loaded.get_input_embeddings().weight, out.get_input_embeddings().weight)
    assert torch.equal(loaded.get_output_embeddings().bias, out.get_output_embeddings().bias)
    logits = loaded(**new_tok("the kinase cells", return_tensors="pt")).logits
    assert logits.shape[-1] == len(NEW_VOCAB)


def test_untied_base_initialises_decoder_too(tmp_path):
    model, base_tok = make_base(tmp_path, tie=False)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    base_out = model.get_output_embeddings().weight.detach().clone()
    _, out, report = run(model, base_tok, new_tok, "averaged")
    assert report["tied_embeddings"] is False
    decoder = out.get_output_embeddings().weight
    assert decoder.data_ptr() != out.get_input_embeddings().weight.data_ptr()
    v, n = base_tok.get_vocab(), new_tok.get_vocab()
    assert torch.equal(decoder[n["receptor"]], base_out[v["receptor"]])
    assert torch.allclose(decoder[n["kinase"]], base_out[[v["kin"], v["##ase"]]].mean(0), atol=1e-6)


def test_special_tokens_mapped_by_role(tmp_path):
    model, base_tok = make_base(tmp_path)
    base_in = model.get_input_embeddings().weight.detach().clone()
    vocab = ["<mask>" if t == "[MASK]" else t for t in NEW_VOCAB]
    new_tok = make_tokenizer(vocab, tmp_path / "new_tok", mask_token="<mask>")
    _, out, report = run(model, base_tok, new_tok, "averaged")
    assert report["special_tokens_mapped_by_role"] == {"<mask>": "[MASK]"}
    row = out.get_input_embeddings().weight[new_tok.mask_token_id]
    assert torch.equal(row, base_in[base_tok.mask_token_id])


def test_bad_inputs_give_clear_errors(tmp_path, init_setup):
    model, base_tok, new_tok = init_setup
    cased = make_tokenizer(NEW_VOCAB, tmp_path / "cased_tok", do_lower_case=False)
    with pytest.raises(ValueError, match="normalises text differently"):
        ContextualizedEmbeddingInitializer(model, base_tok, cased, init_args())
    no_mask = BertTokenizer(vocab={w: i for i, w in enumerate(NEW_VOCAB)})
    no_mask.mask_token = None
    with pytest.raises(ValueError, match="no mask_token"):
        ContextualizedEmbeddingInitializer(model, base_tok, no_mask, init_args())
    initializer = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, init_args(), progress=False)
    with pytest.raises(ValueError, match="needs corpus_files"):
        initializer.initialize()
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"file {empty} is empty"):
        initializer.initialize(corpus_files=[str(empty)])
    with pytest.raises(ValueError, match="--init_strategy 'magic': expected one of"):
        init_args("magic")
    with pytest.raises(ValueError, match="maps rows for"):
        ContextualizedEmbeddingInitializer(model, base_tok, new_tok, init_args("continued"))


def test_build_and_cli_round_trip(tmp_path, init_setup):
    model, base_tok, new_tok = init_setup
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    base_tok.save_pretrained(base_dir)
    new_dir = str(tmp_path / "new_tok")

    cont_model, cont_tok, report = build_initialized_model(str(base_dir), None, init_args("continued"))
    assert cont_tok.get_vocab() == base_tok.get_vocab()
    with pytest.raises(ValueError, match="a new vocabulary needs --init_strategy averaged"):
        build_initialized_model(str(base_dir), new_dir, init_args("continued"))
    assert torch.equal(cont_model.get_input_embeddings().weight, model.get_input_embeddings().weight)

    scratch, scratch_tok, report = build_initialized_model(str(base_dir), new_dir, init_args("scratch"), seed=1)
    assert scratch.config.vocab_size == len(NEW_VOCAB) == len(scratch_tok)
    assert not torch.equal(
        scratch.bert.encoder.layer[0].attention.self.query.weight,
        model.bert.encoder.layer[0].attention.self.query.weight,
    )

    out_dir = tmp_path / "cli_out"
    report = bioptimus(
        "init-embeddings",
        [
            "--model_name_or_path",
            str(base_dir),
            "--tokenizer_name",
            new_dir,
            "--init_strategy",
            "averaged",
            "--output_dir",
            str(out_dir),
        ],
    )
    on_disk = json.load(open(out_dir / "init_report.json"))
    assert on_disk["counts"] == report["counts"]
    loaded = AutoModelForMaskedLM.from_pretrained(out_dir)
    reloaded_tok = AutoTokenizer.from_pretrained(out_dir)
    assert reloaded_tok.get_vocab() == new_tok.get_vocab()
    expected, _, _ = build_initialized_model(str(base_dir), new_dir, init_args("averaged"), progress=False)
    assert torch.equal(loaded.get_input_embeddings().weight, expected.get_input_embeddings().weight)
    assert os.path.isfile(out_dir / "model.safetensors")


@pytest.mark.parametrize("precision", PRECISIONS)
def test_contextualized_from_corpus_with_bad_bytes_and_missing_tokens(tmp_path, init_setup, precision):
    model, base_tok, new_tok = init_setup
    reference = float64_copy(model)
    corpus = tmp_path / "corpus.txt"
    lines = [f"The kinase {c} binds the receptor." for c in "abcdefghijklmnopqrstuvwxy"]  # 25 sentences
    lines += ["Interleukin acts on the thymus.", "Bad \xff bytes near the thymus."]
    data = "\n".join(lines).encode("utf-8").replace("\xff".encode("utf-8"), b"\xff") + b"\n"
    corpus.write_bytes(data)
    initializer = ContextualizedEmbeddingInitializer(
        model,
        base_tok,
        new_tok,
        init_args(init_device="cpu", max_contexts_per_token=20, init_norm_match=False, init_precision=precision),
        progress=False,
    )
    out, report = initializer.initialize(corpus_files=[str(corpus)])
    ids = new_tok.get_vocab()
    hist = report["contexts_per_token"]
    # kinase: 25 sentences capped at 20; thymus: 2; interleukin: 1; ##kinase never occurs.
    assert hist["histogram"] == {"0": 1, "1": 1, "2": 1, "20": 1}
    assert report["contexts_per_token_found"]["min"] >= 1
    assert report["context_search"]["replacement_chars"] == 1
    assert report["counts"]["averaged_fallback"] == 1 and report["counts"]["contextualized"] == 3
    assert report["forward"]["sampled_pairs"] == 23
    assert initializer.forward_passes == report["forward"]["distinct_sentences"] == 22
    # interleukin has a single context: its row is exactly that context's mean state.
    sentence = "Interleukin acts on the thymus."
    sizes = []
    expected = hand_contextualized(reference, base_tok, ctx(sentence, "Interleukin"), sizes)
    forgetful = hand_contextualized(reference, base_tok, ctx(sentence, "Interleukin"), drop_last_piece=True)
    check_row(
        out.get_input_embeddings().weight[ids["interleukin"]],
        expected,
        sizes,
        model.config,
        precision,
        "interleukin",
        bug=forgetful,
    )


def test_cli_norm_matches_by_default_like_run_pretraining(tmp_path, init_setup):
    model, base_tok, _ = init_setup
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    base_tok.save_pretrained(base_dir)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The kinase binds the receptor.\nInterleukin acts on the thymus.\n", encoding="utf-8")
    common = [
        "--model_name_or_path",
        str(base_dir),
        "--tokenizer_name",
        str(tmp_path / "new_tok"),
        "--init_strategy",
        "contextualized",
        "--init_corpus_files",
        str(corpus),
        "--init_device",
        "cpu",
    ]
    default = bioptimus("init-embeddings", common + ["--output_dir", str(tmp_path / "default")])
    raw = bioptimus("init-embeddings", common + ["--output_dir", str(tmp_path / "raw"), "--init_norm_match", "false"])
    assert default["config"]["init_norm_match"] is True and "norm_match" in default
    assert raw["config"]["init_norm_match"] is False and "norm_match" not in raw
    reference_mean = default["norm_match"]["reference_norm_mean"]
    assert default["norm_match"]["contextualized_norm_mean_after"] == pytest.approx(reference_mean, rel=1e-4)


def test_precomputed_vectors_reproduce_a_run(tmp_path):
    model, base_tok = make_base(tmp_path)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    new_ids = new_tok.get_vocab()
    s = "interleukin kinase the thymus"
    contexts = {new_ids[t]: [ctx(s, t)] for t in ("interleukin", "kinase", "thymus")}
    first, out_plain, _ = run(copy.deepcopy(model), base_tok, new_tok, "contextualized", contexts=contexts)
    _, out_norm, _ = run(copy.deepcopy(model), base_tok, new_tok, "contextualized", contexts=contexts, norm_match=True)
    config = init_args(init_norm_match=True)
    again = ContextualizedEmbeddingInitializer(copy.deepcopy(model), base_tok, new_tok, config, progress=False)
    out_again, report = again.initialize(precomputed_vectors=first.vectors)
    assert again.forward_passes == 0 and report["counts"]["contextualized"] == 3
    assert torch.allclose(out_again.get_input_embeddings().weight, out_norm.get_input_embeddings().weight, atol=1e-6)
    assert not torch.allclose(out_plain.get_input_embeddings().weight, out_norm.get_input_embeddings().weight)


@pytest.mark.parametrize("max_train_samples", [None, 20])
def test_run_pretraining_contextualized_contract(monkeypatch, capfd, tmp_path, tiny_model_dir, max_train_samples):
    """run_pretraining.py --init_strategy contextualized goes through build_initialized_model, and its
    --disable_tqdm silences the initialisation's progress bars too. The contexts come from the training files, or
    with --max_train_samples N from the first N training rows (a temporary file, removed after)."""
    import sys
    import tempfile

    import run_pretraining
    from bioptimus_hf.vocabulary.tokenizer_training import train_tokenizer
    from helpers import corpus_lines

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(150, start=5000)) + "\n", encoding="utf-8")
    new_dir = tmp_path / "new_tok"
    new_tok = train_tokenizer(
        [str(corpus)], str(tiny_model_dir), vocab_size=650, output_dir=str(new_dir), show_progress=False
    )
    out = tmp_path / "out"
    argv = [
        "run_pretraining.py",
        "--model_name_or_path",
        tiny_model_dir,
        "--tokenizer_name",
        new_dir,
        "--init_strategy",
        "contextualized",
        "--max_contexts_per_token",
        2,
        "--train_file",
        corpus,
        "--output_dir",
        out,
        "--do_train",
        "--max_steps",
        8,
        "--per_device_train_batch_size",
        4,
        "--max_seq_length",
        32,
        "--report_to",
        "none",
        "--max_eval_samples",
        8,
        "--disable_tqdm",
        "true",
        "--save_steps",
        100,
    ] + ([] if max_train_samples is None else ["--max_train_samples", max_train_samples])
    monkeypatch.setattr(sys, "argv", list(map(str, argv)))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    capfd.readouterr()
    run_pretraining.main()
    err = capfd.readouterr().err
    assert "qik-find (" not in err and "Encoding contexts" not in err
    searched = json.loads((out / "init_report.json").read_text())["context_search"]
    assert searched["lines"] == (150 if max_train_samples is None else 20)
    assert list((tmp_path / "tmp").iterdir()) == []
    release = sorted((out / "releases").iterdir())[-1]
    model = AutoModelForMaskedLM.from_pretrained(release)
    assert model.config.vocab_size == len(new_tok)
    assert AutoTokenizer.from_pretrained(release).get_vocab() == new_tok.get_vocab()


@pytest.mark.parametrize("strategy", ["continued", "random", "averaged", "contextualized", "scratch"])
def test_every_strategy_loads_the_base_with_cache_dir_and_revision(monkeypatch, tmp_path, init_setup, strategy):
    """--cache_dir and --model_revision reach every load of the base model, whatever the strategy."""
    import transformers

    model, base_tok, _ = init_setup
    base_dir = tmp_path / "base"
    model.save_pretrained(base_dir)
    base_tok.save_pretrained(base_dir)
    calls = []
    for cls in (transformers.AutoModelForMaskedLM, transformers.AutoConfig, transformers.AutoTokenizer):
        original = cls.from_pretrained.__func__

        def recording(klass, name, *args, _original=original, _cls=cls, **kwargs):
            calls.append((_cls.__name__, kwargs.get("cache_dir"), kwargs.get("revision")))
            return _original(klass, name, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(recording))
    args = init_args(strategy, cache_dir=str(tmp_path / "cache"), model_revision="v1.2", init_device="cpu")
    contexts = {} if strategy == "contextualized" else None
    new_dir = None if strategy == "continued" else str(tmp_path / "new_tok")
    build_initialized_model(str(base_dir), new_dir, args, contexts=contexts, progress=False)
    assert calls and all((cache, revision) == (str(tmp_path / "cache"), "v1.2") for _, cache, revision in calls), calls


def test_one_norm_match_default_everywhere():
    """The library, bioptimus pretrain and bioptimus init-embeddings share one default (norm matching on)."""
    from bioptimus_hf.commands import parse_args
    from bioptimus_hf.pretraining.bioptimus_config import PRETRAINING_ARGUMENT_TYPES
    from bioptimus_hf.vocabulary.init_config import StartModelArguments

    library = EmbeddingInitArguments()
    _, script = parse_args(PRETRAINING_ARGUMENT_TYPES, ["--output_dir", "x"])
    _, command = parse_args(
        (StartModelArguments, EmbeddingInitArguments), ["--model_name_or_path", "m", "--output_dir", "x"]
    )
    assert library.init_norm_match is script.init_norm_match is command.init_norm_match is True
    init_fields = [f.name for f in dataclasses.fields(EmbeddingInitArguments)]
    assert {n: getattr(script, n) for n in init_fields} == dataclasses.asdict(library) == dataclasses.asdict(command)


def test_two_gloo_ranks_split_the_sentences_and_match_one_process(tmp_path):
    """torchrun, 2 gloo ranks: qik-find runs on rank 0 only, each rank encodes about half of the distinct
    sentences, and the reduced vectors equal the single-process ones within float tolerance."""
    import sys
    from pathlib import Path

    from init_probe import initialise

    corpus = tmp_path / "corpus.txt"
    lines = [f"The kinase {c} binds the receptor of {d}." for c in "abcdefghij" for d in "xyz"]
    lines += [f"Interleukin {c} acts on the thymus." for c in "abcdefgh"] + ["A kinase kinase cascade."]
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    single, report = initialise(tmp_path, corpus)
    out = tmp_path / "ddp"
    tests_dir = Path(__file__).parent
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=python_path(tests_dir, tests_dir.parent))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        "29523",
        str(tests_dir / "init_probe.py"),
        str(corpus),
        str(out),
    ]
    result = run_launcher(command, env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["searches"] for r in ranks] == [1, 0]
    assert all(r["world"] == 2 for r in ranks)
    # Each rank encoded its own share; together exactly the single process's sequences.
    passes = [r["forward_passes"] for r in ranks]
    assert sum(passes) == single.forward_passes == report["forward"]["encoded_sequences"] and min(passes) > 0
    assert abs(passes[0] - passes[1]) <= 1
    for r in ranks:
        assert sorted(map(int, r["vectors"])) == sorted(single.vectors)
        for token_id, vector in single.vectors.items():
            # float32 (the suite's default), other batch compositions: float32 rounding, nothing more
            assert_close_normwise(
                torch.tensor(r["vectors"][str(token_id)]),
                vector,
                encoder_tolerance(single.model.config, torch.float32),
                f"token {token_id}",
            )


def _contextualized_rows(model, base_tok, new_tok, precision):
    new_ids = new_tok.get_vocab()
    s1, s2 = "the kinase of the thymus cells", "interleukin receptor kinase of the cells"
    contexts = {
        new_ids["kinase"]: [ctx(s1, "kinase", 0), ctx(s2, "kinase", 1)],
        new_ids["thymus"]: [ctx(s1, "thymus", 0)],
        new_ids["interleukin"]: [ctx(s2, "interleukin", 1)],
    }
    _, out, report = run(
        copy.deepcopy(model), base_tok, new_tok, "contextualized", contexts=contexts, init_precision=precision
    )
    ids = sorted(contexts)
    return out.get_input_embeddings().weight[ids].detach(), report


def test_auto_init_precision_takes_the_float32_or_the_bf16_path_as_the_hardware_report_says(init_setup, monkeypatch):
    """Both branches of `auto` on every machine: the hardware report is faked through the environment
    switches, and each branch is the explicit path bit for bit (their numbers are checked against float64
    in test_contextualized_rows_match_hand_computation)."""
    model, base_tok, new_tok = init_setup
    float32_rows, report = _contextualized_rows(model, base_tok, new_tok, "float32")
    bf16_rows, bf16_report = _contextualized_rows(model, base_tok, new_tok, "bf16")
    assert (report["forward"]["bf16"], bf16_report["forward"]["bf16"]) == (False, True)
    assert not torch.equal(bf16_rows, float32_rows)  # bf16 really ran
    monkeypatch.delenv(hardware.FORCE_BF16_ENV, raising=False)
    monkeypatch.setenv(hardware.DISABLE_BF16_ENV, "1")
    auto_rows, auto_report = _contextualized_rows(model, base_tok, new_tok, "auto")
    assert auto_report["forward"]["bf16"] is False and torch.equal(auto_rows, float32_rows)
    monkeypatch.delenv(hardware.DISABLE_BF16_ENV)
    monkeypatch.setenv(hardware.FORCE_BF16_ENV, "1")
    auto_rows, auto_report = _contextualized_rows(model, base_tok, new_tok, "auto")
    assert auto_report["forward"]["bf16"] is True and torch.equal(auto_rows, bf16_rows)


def test_init_precision_rejects_unknown_value():
    with pytest.raises(ValueError, match="--init_precision 'half'"):
        init_args(init_precision="half")
