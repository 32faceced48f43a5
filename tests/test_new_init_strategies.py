"""mean_cov and token_distillation: rows, frozen weights, shared rows copied, casing refused."""

import copy

import pytest
import torch

from bioptimus_hf.vocabulary.embedding_init import ContextualizedEmbeddingInitializer
from helpers.embedding_init import (
    NEW_TOKENS,
    NEW_VOCAB,
    S1,
    contexts_of,
    ctx,
    init_args,
    make_base,
    make_tokenizer,
    run,
)


NEW_STRATEGIES = ("mean_cov", "token_distillation")


def hand_objective(model, base_tok, row, context, layer=-1):
    """MSE between the base model's states over the sub-tokens and over the sequence with `row` in their place."""
    enc = base_tok(context.sentence, return_offsets_mapping=True)
    span = [i for i, (a, b) in enumerate(enc["offset_mapping"]) if b > a and a < context.end and b > context.start]
    first, last = span[0], span[-1]
    ids = torch.tensor([enc["input_ids"]])
    with torch.no_grad():
        teacher = model.bert(input_ids=ids, output_hidden_states=True).hidden_states[layer][0]
        embeds = model.get_input_embeddings()(ids)[0]
        student_embeds = torch.cat([embeds[:first], row[None], embeds[last + 1 :]])[None]
        student = model.bert(inputs_embeds=student_embeds, output_hidden_states=True).hidden_states[layer][0]
    kept = list(range(first)) + list(range(last + 1, ids.shape[1]))
    student_kept = list(range(first)) + list(range(first + 1, student.shape[0]))
    return ((student[student_kept] - teacher[kept]) ** 2).mean().item()


def test_token_distillation_reduces_its_objective_and_freezes_the_model(init_setup):
    model, base_tok, new_tok = init_setup
    reference = copy.deepcopy(model)
    contexts = contexts_of(new_tok)
    _, averaged, _ = run(copy.deepcopy(model), base_tok, new_tok, "averaged")
    _, out, report = run(
        model, base_tok, new_tok, "token_distillation", contexts=contexts, distill_steps=30, distill_learning_rate=1e-2
    )
    ids = new_tok.get_vocab()
    start = averaged.get_input_embeddings().weight.detach()
    learnt = out.get_input_embeddings().weight.detach()
    for token in ("thymus", "interleukin", "kinase"):
        before = sum(hand_objective(reference, base_tok, start[ids[token]], c) for c in contexts[ids[token]])
        after = sum(hand_objective(reference, base_tok, learnt[ids[token]], c) for c in contexts[ids[token]])
        assert after < before - 1e-4, (token, before, after)  # hand-computed objective, not the report
    info = report["token_distillation"]
    assert info["mse_end"] < info["mse_start"] - 1e-4
    assert (info["distilled_tokens"], info["sequences"]) == (3, 4)
    assert report["counts"]["token_distillation"] == 3 and report["counts"]["averaged_fallback"] == 1
    # The never-found token keeps its averaged row; every weight but the new rows is the base model's.
    assert torch.equal(learnt[ids["##kinase"]], start[ids["##kinase"]])
    base_state, out_state = reference.state_dict(), out.state_dict()
    for name, value in base_state.items():
        if "word_embeddings" in name or name.startswith("cls.predictions.decoder") or name == "cls.predictions.bias":
            continue
        assert torch.equal(out_state[name], value), name
    assert all(p.requires_grad for p in out.parameters())  # the caller's flags restored


def test_token_distillation_layer_setting_changes_the_target(init_setup):
    model, base_tok, new_tok = init_setup
    contexts = {new_tok.get_vocab()["thymus"]: [ctx(S1, "thymus")]}
    _, last, _ = run(copy.deepcopy(model), base_tok, new_tok, "token_distillation", contexts=contexts, distill_steps=3)
    _, first, report = run(
        model, base_tok, new_tok, "token_distillation", contexts=contexts, distill_steps=3, distill_layer=1
    )
    row = new_tok.get_vocab()["thymus"]
    assert report["token_distillation"]["layer"] == 1
    assert not torch.equal(last.get_input_embeddings().weight[row], first.get_input_embeddings().weight[row])


def test_mean_cov_rows_have_the_base_mean(init_setup):
    model, base_tok, new_tok = init_setup
    base_in = model.get_input_embeddings().weight.detach().clone()
    base_bias = model.get_output_embeddings().bias.detach().clone()
    _, out, report = run(model, base_tok, new_tok, "mean_cov")
    ids = [new_tok.get_vocab()[t] for t in NEW_TOKENS]
    rows = out.get_input_embeddings().weight.detach()[ids]
    for row in rows:  # transformers samples with covariance 1e-9 * the base covariance: each row is the mean
        assert torch.allclose(row, base_in.mean(dim=0), atol=1e-3)
    assert not torch.allclose(rows.mean(0), base_in[ids].mean(0), atol=1e-3)  # not the rows that were there
    assert torch.allclose(out.get_output_embeddings().bias[ids], base_bias.mean().expand(len(ids)), atol=1e-4)
    assert report["counts"]["mean_cov"] == len(NEW_TOKENS)
    assert out.get_input_embeddings().weight.data_ptr() == out.get_output_embeddings().weight.data_ptr()


def test_mean_cov_untied_output_rows(tmp_path):
    model, base_tok = make_base(tmp_path, tie=False)
    new_tok = make_tokenizer(NEW_VOCAB, tmp_path / "new_tok")
    base_out = model.get_output_embeddings().weight.detach().clone()
    _, out, _ = run(model, base_tok, new_tok, "mean_cov")
    ids = [new_tok.get_vocab()[t] for t in NEW_TOKENS]
    for row in out.get_output_embeddings().weight.detach()[ids]:
        assert torch.allclose(row, base_out.mean(dim=0), atol=1e-3)


@pytest.mark.parametrize("strategy", NEW_STRATEGIES)
def test_new_strategies_copy_shared_rows_exactly(init_setup, strategy):
    model, base_tok, new_tok = init_setup
    base_in = model.get_input_embeddings().weight.detach().clone()
    base_bias = model.get_output_embeddings().bias.detach().clone()
    _, out, report = run(model, base_tok, new_tok, strategy, contexts=contexts_of(new_tok), distill_steps=2)
    base_ids, new_ids = base_tok.get_vocab(), new_tok.get_vocab()
    shared = [t for t in NEW_VOCAB if t in base_ids]
    for token in shared:
        assert torch.equal(out.get_input_embeddings().weight[new_ids[token]], base_in[base_ids[token]]), token
        assert out.get_output_embeddings().bias[new_ids[token]] == base_bias[base_ids[token]], token
    counts = report["counts"]
    assert counts["copied"] == len(shared)
    assert (
        counts["copied"] + counts[strategy] + counts["averaged_fallback"] == counts["new_vocab_size"] == len(NEW_VOCAB)
    )


@pytest.mark.parametrize("strategy", NEW_STRATEGIES)
def test_new_strategies_refuse_other_casing(tmp_path, init_setup, strategy):
    model, base_tok, _ = init_setup
    cased = make_tokenizer(NEW_VOCAB, tmp_path / "cased_tok", do_lower_case=False)
    with pytest.raises(ValueError, match="normalises text differently"):
        ContextualizedEmbeddingInitializer(model, base_tok, cased, init_args(strategy))


def test_distillation_settings_validated():
    with pytest.raises(ValueError, match="--distill_steps must be >= 1"):
        init_args("token_distillation", distill_steps=0)
    with pytest.raises(ValueError, match="--distill_learning_rate must be > 0"):
        init_args("token_distillation", distill_learning_rate=0.0)


def test_token_distillation_needs_a_corpus(init_setup):
    model, base_tok, new_tok = init_setup
    initializer = ContextualizedEmbeddingInitializer(
        model, base_tok, new_tok, init_args("token_distillation"), progress=False
    )
    with pytest.raises(ValueError, match="'token_distillation' needs corpus_files"):
        initializer.initialize()


@pytest.mark.parametrize("strategy", ["focus"])
def test_focus_refuses_other_casing_without_needing_deepfocus(tmp_path, init_setup, strategy):
    model, base_tok, _ = init_setup
    cased = make_tokenizer(NEW_VOCAB, tmp_path / "cased_tok", do_lower_case=False)
    with pytest.raises(ValueError, match="normalises text differently"):
        ContextualizedEmbeddingInitializer(model, base_tok, cased, init_args(strategy))


def test_focus_through_deepfocus_copies_shared_rows_and_falls_back(tmp_path, init_setup, monkeypatch):
    pytest.importorskip("deepfocus")
    import deepfocus.fasttext_embs

    monkeypatch.setattr(deepfocus.fasttext_embs, "CACHE_DIR", tmp_path / "deepfocus_cache")
    model, base_tok, new_tok = init_setup
    base_in = model.get_input_embeddings().weight.detach().clone()
    corpus = tmp_path / "corpus.txt"  # "thymus" never occurs: no fastText vector -> averaged
    corpus.write_text(
        "\n".join(["the kinase of the cells", "interleukin receptor kinase cells", "the receptor"] * 30),
        encoding="utf-8",
    )
    _, averaged, _ = run(copy.deepcopy(model), base_tok, new_tok, "averaged")
    config = init_args(
        "focus",
        init_device="cpu",
        init_num_threads=1,
        focus_fasttext_min_count=1,
        focus_fasttext_epochs=1,
        focus_fasttext_dim=8,
    )
    initializer = ContextualizedEmbeddingInitializer(model, base_tok, new_tok, config, progress=False)
    out, report = initializer.initialize(corpus_files=[str(corpus)])
    rows, ids, base_ids = out.get_input_embeddings().weight.detach(), new_tok.get_vocab(), base_tok.get_vocab()
    for token in (t for t in NEW_VOCAB if t in base_ids):
        assert torch.equal(rows[ids[token]], base_in[base_ids[token]]), token
    start = averaged.get_input_embeddings().weight.detach()
    assert torch.equal(rows[ids["thymus"]], start[ids["thymus"]])
    assert not torch.allclose(rows[ids["kinase"]], start[ids["kinase"]])
    # FOCUS rows are convex combinations of shared rows: inside the per-dimension range of the base rows.
    shared_rows = base_in[[base_ids[t] for t in NEW_VOCAB if t in base_ids]]
    assert torch.all(rows[ids["kinase"]] <= shared_rows.max(0).values + 1e-6)
    assert torch.all(rows[ids["kinase"]] >= shared_rows.min(0).values - 1e-6)
    assert report["focus"]["without_fasttext_vector"] >= 1 and report["counts"]["averaged_fallback"] >= 1
    counts = report["counts"]
    assert counts["copied"] + counts["focus"] + counts["averaged_fallback"] == counts["new_vocab_size"]
