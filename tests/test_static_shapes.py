"""Static shapes for compiled training: bucket sizes, the collator's `masked_positions`, the overflow path, and
run_pretraining.py under torch.compile (inductor on CPU) compiling once per phase with the eager run's losses."""

import json
import logging
import sys

import pytest
import torch

from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.phases import CurriculumPhase
from bioptimus_hf.pretraining.static_shapes import masked_positions, masked_positions_bucket, overflow_size
from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids
from helpers import corpus_lines
from helpers.pretraining import curriculum_run_flags


PHASES = (
    CurriculumPhase("0.1", masking_unit="token", masking_rate=0.15),
    CurriculumPhase("0.2", masking_unit="word", masking_rate=0.15),
    CurriculumPhase("0.3", masking_unit="word", masking_rate=0.3, corruption=False),
)


@pytest.fixture(scope="module")
def blocks(tiny_tokenizer):
    """Packed 64-token blocks of real corpus lines, with word ids (what run_pretraining.py feeds the collator)."""
    encoded = tokenize_with_word_ids({"text": corpus_lines(1500)}, tiny_tokenizer, line_by_line=False)
    packed = group_texts(encoded, 64)
    return [dict(zip(packed, values)) for values in zip(*packed.values())]


def test_bucket_is_a_bound_rounded_to_eight_and_capped():
    # Token phase: B * round(rate * L), the collator's exact budget for sequences with every token maskable.
    assert masked_positions_bucket(0.15, False, 16, 128) == 304  # 16 * 19
    assert masked_positions_bucket(0.15, False, 3, 128) == 64  # 57 -> 64
    # Whole words: + 4 * sqrt(B) tokens of margin for the sequences' overshoots.
    assert masked_positions_bucket(0.15, True, 16, 128) == 320  # 304 + 16
    assert masked_positions_bucket(0.2, True, 64, 128) == 1696  # 64 * 26 + 32
    # Never more rows than positions; at least one masked token per sequence.
    assert masked_positions_bucket(0.9, True, 1, 4) == 4
    assert masked_positions_bucket(0.01, False, 2, 16) == 8


def test_positions_are_the_labelled_ones_in_order_padded_and_never_truncated():
    labels = torch.full((3, 10), -100)
    labels[0, 2] = labels[1, 0] = labels[1, 9] = labels[2, 5] = 7
    positions = masked_positions(labels, bucket=8)
    assert positions.tolist() == [2, 10, 19, 25, -1, -1, -1, -1]
    # More labelled positions than the bucket: the next size of the ladder holds them all.
    labels[:, :] = 7
    labels[0, 0] = -100
    assert overflow_size(8, 29, 30) == 30  # 8 -> 16 -> 30 (capped at the batch's positions)
    positions = masked_positions(labels, bucket=8)
    assert positions.tolist() == list(range(1, 30)) + [-1]
    assert overflow_size(8, 12, 100) == 16 and overflow_size(8, 8, 100) == 8
    with pytest.raises(ValueError):
        overflow_size(8, 31, 30)


def test_collator_emits_one_length_per_phase_covering_every_label(tiny_tokenizer, blocks):
    collator = CurriculumDataCollator(tiny_tokenizer, PHASES, seed=3, static_masked_positions=True)
    for index, phase in enumerate(PHASES):
        collator.set_phase(index)
        bucket = masked_positions_bucket(phase.masking_rate, phase.whole_word, 8, 64)
        for start in range(0, 8 * 40, 8):
            batch = collator(blocks[start : start + 8]).to("cpu")  # consumed: counted
            positions, labels = batch["masked_positions"], batch["labels"]
            assert positions.shape == (bucket,)
            count = int((labels != -100).sum())
            assert positions[:count].tolist() == (labels.reshape(-1) != -100).nonzero().flatten().tolist()
            assert (positions[count:] == -1).all()
    assert collator.stats.overflows == [0, 0, 0] and all(collator.stats.maskable)
    # Without the option, batches are as before.
    plain = CurriculumDataCollator(tiny_tokenizer, PHASES, seed=3)
    assert "masked_positions" not in plain(blocks[:8])


def test_phase_switch_remasks_and_recomputes_positions(tiny_tokenizer, blocks):
    collator = CurriculumDataCollator(tiny_tokenizer, PHASES, seed=3, static_masked_positions=True)
    batch = collator(blocks[:8])  # masked for phase 0.1, counted
    collator.set_phase(2)
    batch.to("cpu")  # reaches the model after the switch: re-masked for phase 0.3
    assert collator.remasked_batches == 1
    count = int((batch["labels"] != -100).sum())
    assert batch["masked_positions"].shape == (masked_positions_bucket(0.3, True, 8, 64),)
    assert (
        batch["masked_positions"][:count].tolist()
        == (batch["labels"].reshape(-1) != -100).nonzero().flatten().tolist()
    )


def test_overflow_is_counted_logged_and_drops_nothing(tiny_tokenizer, blocks, monkeypatch, caplog):
    monkeypatch.setattr(CurriculumDataCollator, "bucket_size", staticmethod(lambda phase, batch, length: 8))
    collator = CurriculumDataCollator(tiny_tokenizer, PHASES, seed=3, static_masked_positions=True)
    collator.set_phase(1)
    with caplog.at_level(logging.WARNING):
        batches = [collator(blocks[i : i + 4]).to("cpu") for i in range(0, 12, 4)]  # consumed: counted
    for batch in batches:
        count = int((batch["labels"] != -100).sum())
        assert count > 8 and len(batch["masked_positions"]) >= count
        assert set(batch["masked_positions"].tolist()) - {-1} == set(
            (batch["labels"].reshape(-1) != -100).nonzero().flatten().tolist()
        )
    assert collator.stats.overflows == [0, 3, 0]
    assert caplog.text.count("more than the static bucket") == 1  # once per phase, then counted
    state = collator.stats.state_dict()
    assert state["masked_positions_overflows"] == [0, 3, 0]
    restored = type(collator.stats)(3)
    assert restored.load_state_dict(state) and restored.overflows == [0, 3, 0]
    # A checkpoint written before overflows were counted still loads.
    assert restored.load_state_dict({"masked_tokens": [1, 2, 3], "maskable_tokens": [4, 5, 6]})
    assert restored.overflows == [0, 0, 0]


def _tiny_one_layer_bert(directory, tokenizer):
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    BertForMaskedLM(
        BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=64,
            pad_token_id=tokenizer.pad_token_id,
        )
    ).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.mark.compile
def test_run_pretraining_compiles_once_per_phase_with_the_eager_losses(monkeypatch, tmp_path, tiny_tokenizer, caplog):
    """--torch_compile true (inductor, CPU) over three phases: dynamo captures a new graph at each phase's
    first step and never after (static masked positions, one bucket per phase), no graph breaks, and it trains
    what the uncompiled run (boolean gather, eager) trains: same logged losses, weights within float32 rounding."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    import run_pretraining
    from bioptimus_hf.pretraining.callback import PhaseScheduleCallback
    from bioptimus_hf.testing.numerics import assert_close_normwise, relative_tolerance, transformer_depth

    model_dir = _tiny_one_layer_bert(tmp_path / "model", tiny_tokenizer)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines(300)) + "\n")
    curriculum = tmp_path / "curriculum.json"
    curriculum.write_text(json.dumps([p.to_dict() for p in PHASES]))

    graphs_at_step = []
    on_step_end = PhaseScheduleCallback.on_step_end

    def recording_step_end(self, args, state, control, **kwargs):
        graphs_at_step.append((state.global_step, self.collator.phase_index, counters["stats"]["unique_graphs"]))
        return on_step_end(self, args, state, control, **kwargs)

    monkeypatch.setattr(PhaseScheduleCallback, "on_step_end", recording_step_end)
    losses = {}
    for compiled in ("true", "false"):
        torch._dynamo.reset()
        counters.clear()
        graphs_at_step.clear()
        out = tmp_path / f"out_{compiled}"
        argv = [
            "run_pretraining.py",
            *curriculum_run_flags(
                model_dir,
                corpus,
                out,
                (3, 3, 3),
                logging_steps=1,
                seed=5,
                use_cpu=True,
                bf16=False,
                optim="sgd",
                learning_rate=0.5,
                curriculum=curriculum,
                torch_compile=compiled,
                torch_compile_backend="inductor",
                log_level="info",  # the run's own INFO lines, as a user asks for them
            ),
        ]
        monkeypatch.setattr(sys, "argv", [str(a) for a in argv])
        with caplog.at_level(logging.INFO):
            run_pretraining.main()
        history = json.loads((out / "trainer_state.json").read_text())["log_history"]
        losses[compiled] = torch.tensor([entry["loss"] for entry in history if "loss" in entry], dtype=torch.float64)
        if compiled == "true":
            assert "static masked positions (one compiled shape per phase): on" in caplog.text
            # A graph at the first step of each phase (steps 1, 4, 7), none at any other step.
            assert graphs_at_step == [
                (1, 0, 1),
                (2, 0, 1),
                (3, 0, 1),
                (4, 1, 2),
                (5, 1, 2),
                (6, 1, 2),
                (7, 2, 3),
                (8, 2, 3),
                (9, 2, 3),
            ]
            assert not counters["graph_break"]
            assert all(entry.get("masked_positions_overflows") == 0 for entry in history if "loss" in entry)
        caplog.clear()
    torch._dynamo.reset()
    # The logged losses (the Trainer rounds them to 4 significant digits) agree to that rounding...
    assert len(losses["true"]) == 9
    torch.testing.assert_close(losses["true"], losses["false"], rtol=2e-4, atol=0)
    # ...and the trained weights agree within float32 rounding: the update each run made (last release minus the
    # start) is the sum of 9 SGD steps, each within the gradient bound of the float64 value; a step's error also
    # moves the later gradients, which for 9 small steps adds to the errors rather than multiplying them.
    from transformers import AutoModelForMaskedLM

    start = torch.cat([p.detach().flatten() for p in AutoModelForMaskedLM.from_pretrained(model_dir).parameters()])
    updates = {}
    for compiled in ("true", "false"):
        release = AutoModelForMaskedLM.from_pretrained(tmp_path / f"out_{compiled}" / "releases" / "v0.3")
        updates[compiled] = torch.cat([p.detach().flatten() for p in release.parameters()]).double() - start.double()
    gradient_bound = relative_tolerance(torch.float32, 128, 2 * (transformer_depth(1) + 2))
    assert_close_normwise(updates["true"], updates["false"], 9 * gradient_bound, "compiled vs eager updates")
    assert updates["true"].norm() > 1e-3 * start.norm()  # the runs did train


@pytest.mark.gpu
def test_static_gather_needs_no_host_synchronisation():
    """On a GPU: the static gather, the head and the loss (forward and backward) run with CUDA's
    synchronisation debugging set to raise; the boolean gather raises (the host must read the count back).
    (These checks passed on an H100 with torch 2.11 on 2026-11-25.)"""
    from transformers import BertConfig, BertForMaskedLM
    from transformers.loss.loss_utils import ForMaskedLMLoss

    from bioptimus_hf.pretraining.masked_lm import enable_masked_only_prediction, gather_labelled_rows

    torch.manual_seed(0)
    model = enable_masked_only_prediction(
        BertForMaskedLM(
            BertConfig(
                vocab_size=97,
                hidden_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                intermediate_size=64,
                max_position_embeddings=64,
            )
        ).cuda()
    )
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(5, 97, (4, 24), generator=generator)
    labels = torch.where(torch.rand(4, 24, generator=generator) < 0.2, input_ids, -100)
    positions = masked_positions(labels, 32).cuda()
    input_ids, labels = input_ids.cuda(), labels.cuda()
    hidden = model.bert(input_ids=input_ids)[0].detach().requires_grad_(True)
    count = (labels != -100).sum()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        rows, targets = gather_labelled_rows(hidden, labels, positions)
        loss = ForMaskedLMLoss(model.cls(rows), targets, vocab_size=97, num_items_in_batch=count)
        loss.backward()
        with pytest.raises(RuntimeError):
            gather_labelled_rows(hidden, labels)  # boolean indexing: the host waits for the count
    finally:
        torch.cuda.set_sync_debug_mode(0)
