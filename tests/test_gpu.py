"""The paths users run on a GPU, where `auto` precision resolves to bf16: marked ``gpu``, skipped without
CUDA (CI has none; benchmarks/gpu_session.sh runs them on a lent GPU). Numbers against a float64 CPU
reference within the bounds of bioptimus_hf/testing/numerics.py, decisions only where they have margin."""

import copy
import json

import pytest
import torch
from transformers import AutoModelForMaskedLM, AutoModelForTokenClassification, BertConfig, BertForMaskedLM

import run_pretraining
from bioptimus_hf.ner.tagger import NerTagger
from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction
from bioptimus_hf.testing.numerics import (
    assert_close_normwise,
    encoder_tolerance,
    linear_output_scale,
    recorded_linear_outputs,
)
from bioptimus_hf.utils.hardware import resolve_precision
from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from helpers import run_script
from helpers.embedding_init import (
    NEW_VOCAB,
    ctx,
    float64_copy,
    hand_contextualized,
    init_args,
    make_base,
    make_tokenizer,
)
from helpers.ner import build_tiny_tagger, tagging_texts
from helpers.pretraining import base_args


pytestmark = [pytest.mark.gpu, pytest.mark.precision]


def test_contextualized_init_on_the_gpu_with_auto_precision(tmp_path):
    model, base_tok = make_base(tmp_path)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    reference = float64_copy(model)
    ids = new_tok.get_vocab()
    s1, s2 = "the kinase of the thymus cells", "interleukin receptor kinase"
    contexts = {ids["kinase"]: [ctx(s1, "kinase", 0), ctx(s2, "kinase", 1)], ids["thymus"]: [ctx(s1, "thymus", 0)]}
    config = init_args(init_device="cuda", init_norm_match=False, init_precision="auto")
    initializer = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, config, progress=False)
    out, report = initializer.initialize(contexts=contexts)
    dtype = resolve_precision("auto", "cuda")
    assert report["forward"]["device"].startswith("cuda") and report["forward"]["bf16"] is (dtype == torch.bfloat16)
    for token in ("kinase", "thymus"):
        sizes = []
        expected = torch.stack(
            [hand_contextualized(reference, base_tok, c, sizes) for c in contexts[ids[token]]]
        ).mean(0)
        bound = encoder_tolerance(model.config, dtype, contribution_scale=linear_output_scale(sizes, expected))
        assert_close_normwise(out.get_input_embeddings().weight[ids[token]].cpu(), expected, bound, token)


def test_masked_only_head_on_the_gpu_in_bf16():
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=120,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=32,
    )
    model = BertForMaskedLM(config).eval()
    reference = copy.deepcopy(model).double()
    enable_masked_only_prediction(model.cuda())
    input_ids = torch.randint(5, 120, (8, 32))
    labels = torch.where(
        torch.rand(input_ids.shape, generator=torch.Generator().manual_seed(2)) < 0.15, input_ids, -100
    )
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(input_ids=input_ids.cuda(), labels=labels.cuda())
    with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
        expected = reference(input_ids=input_ids).logits[labels != -100]
    bound = encoder_tolerance(
        config, torch.bfloat16, extra_depth=2, contribution_scale=linear_output_scale(sizes, expected)
    )
    assert_close_normwise(out.logits.float().cpu(), expected, bound, "labelled logits")


def test_tagger_on_the_gpu_with_auto_precision(tmp_path):
    directory = build_tiny_tagger(str(tmp_path / "model"))
    tagger = NerTagger(directory, max_seq_length=16, stride=4, batch_size=8)
    assert tagger.device.type == "cuda"
    dtype = torch.bfloat16 if tagger.precision.startswith("bf16") else torch.float32
    reference = AutoModelForTokenClassification.from_pretrained(directory).double().eval()
    _, encoding = tagger.encode(tagging_texts())
    windows = encoding.columns["input_ids"]
    for rows, batch in tagger.batches(windows):
        with torch.no_grad(), tagger.autocast():
            logits = tagger.model(**batch).logits.float().cpu()
        for i, row in enumerate(rows):
            with torch.no_grad(), recorded_linear_outputs(reference) as sizes:
                expected = reference(input_ids=torch.tensor([windows[row]])).logits[0]
            bound = encoder_tolerance(
                reference.config, dtype, extra_depth=1, contribution_scale=linear_output_scale(sizes, expected)
            )
            assert_close_normwise(logits[i, : len(windows[row])], expected, bound, f"window {row}")


def test_run_pretraining_on_the_gpu_in_bf16_writes_loadable_releases(
    monkeypatch, tmp_path, tiny_model_dir, make_corpus
):
    out = tmp_path / "out"
    run_script(
        monkeypatch,
        run_pretraining,
        base_args(tiny_model_dir, make_corpus(600, bad_byte=True), out)
        + ["--bf16", "true", "--max_steps", 8, "--logging_steps", 1],
    )
    losses = [e["loss"] for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    assert len(losses) == 8 and all(torch.isfinite(torch.tensor(losses)))
    released = AutoModelForMaskedLM.from_pretrained(out / "releases" / "v0.4")
    assert released.bert.embeddings.word_embeddings.weight.dtype == torch.float32
