"""Distillation on tiny BERTs: the trainer's loss against a hand computation from full forwards, the frozen
teacher, the released student, layer removal, resume with the projection, and bad configurations refused
before any step."""

import copy
import json
import math

import pytest
import torch
import torch.nn.functional as F
from safetensors import safe_open
from transformers import AutoModelForMaskedLM, BertConfig, BertForMaskedLM, TrainingArguments

from bioptimus_hf.distillation.distillation_config import DistillationConfig, check_shared_vocabulary
from bioptimus_hf.distillation.distillation_trainer import DistillationTrainer
from bioptimus_hf.distillation.student import PROJECTION_NAME, build_student, keep_layers, load_teacher
from bioptimus_hf.distillation.student_release import distillation_facts, write_student_release
from bioptimus_hf.pretraining.collator import CurriculumDataCollator
from bioptimus_hf.pretraining.masked_lm import disable_masked_only_prediction
from bioptimus_hf.pretraining.tokenization import group_texts, tokenize_with_word_ids
from bioptimus_hf.releases.card import validate_card
from bioptimus_hf.releases.record import ReleaseInfo
from helpers import corpus_lines


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory, tiny_tokenizer):
    """A 4-layer teacher with its MLM head, no dropout (so a forward is a function of the weights)."""
    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=len(tiny_tokenizer),
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=tiny_tokenizer.pad_token_id,
    )
    out = tmp_path_factory.mktemp("teacher")
    BertForMaskedLM(config).save_pretrained(out)
    tiny_tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def blocks(tiny_tokenizer):
    features = tokenize_with_word_ids({"text": corpus_lines(200)}, tiny_tokenizer, line_by_line=False)
    features.pop("chunk")
    packed = group_texts(features, 24)
    return [dict(zip(packed, values)) for values in zip(*packed.values())]


def teacher_model(teacher_dir):
    return AutoModelForMaskedLM.from_pretrained(teacher_dir)


def make_trainer(tmp_path, teacher_dir, tiny_tokenizer, blocks, seed=0, **config):
    teacher = teacher_model(teacher_dir)
    plan = DistillationConfig(**config).resolve(teacher.config)
    torch.manual_seed(seed)
    student = build_student(teacher, plan)
    args = TrainingArguments(
        str(tmp_path / "run"),
        max_steps=3,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        report_to="none",
        use_cpu=True,
        remove_unused_columns=False,
        save_strategy="no",
        disable_tqdm=True,
    )
    collator = CurriculumDataCollator(tiny_tokenizer, seed=seed)
    trainer = DistillationTrainer(
        model=student,
        teacher_model=teacher,
        plan=plan,
        args=args,
        train_dataset=blocks,
        processing_class=tiny_tokenizer,
        data_collator=collator,
    )
    return trainer, plan, collator


def full_forward(model, batch):
    """A plain copy of the model (no masked-only head, eager attention): logits at every position."""
    plain = disable_masked_only_prediction(copy.deepcopy(model))
    plain.set_attn_implementation("eager")
    return plain(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        output_hidden_states=True,
        output_attentions=True,
    )


def hand_losses(trainer, plan, batch):
    """Every loss from full-vocabulary logits at every position, written out from the definitions."""
    student, teacher = trainer.model, trainer.teacher_model
    with torch.no_grad():
        s, t = full_forward(student, batch), full_forward(teacher, batch)
    T = plan.temperature
    masked = batch["labels"] != -100
    real = batch["attention_mask"].bool()
    s_logits, t_logits = s.logits[masked], t.logits[masked]
    p_t = torch.softmax(t_logits / T, -1)
    projection = getattr(student, PROJECTION_NAME, None)
    states = [projection(h) if projection is not None else h for h in s.hidden_states]
    losses = {
        "mlm": F.cross_entropy(s_logits, batch["labels"][masked]),
        "kl": (p_t * (torch.log(p_t) - torch.log_softmax(s_logits / T, -1))).sum(-1).mean() * T * T,
        "soft_ce": -(p_t * torch.log_softmax(s_logits / T, -1)).sum(-1).mean(),
        "cos": (1 - F.cosine_similarity(states[-1][real], t.hidden_states[-1][real], dim=-1)).mean(),
        "embedding": ((states[0][real] - t.hidden_states[0][real]) ** 2).mean(),
        "hidden": sum(
            ((states[l + 1][real] - t.hidden_states[g + 1][real]) ** 2).mean() for l, g in enumerate(plan.layer_map)
        ),
        "attention": sum(
            ((s.attentions[l].transpose(1, 2)[real] - t.attentions[g].transpose(1, 2)[real]) ** 2).mean()
            for l, g in enumerate(plan.layer_map)
        ),
    }
    return {name: float(value) for name, value in losses.items() if plan.weights[name] > 0}


@pytest.mark.parametrize(
    "recipe,extra,active",
    [
        ("distilbiobert", {}, {"mlm", "kl", "cos"}),
        ("compactbiobert", {}, {"mlm", "kl", "hidden", "attention"}),
        ("tinybiobert", {"student_hidden_size": 16}, {"embedding", "hidden", "attention", "soft_ce"}),
    ],
)
def test_trainer_loss_is_the_weighted_sum_of_hand_computed_losses(
    tmp_path, teacher_dir, tiny_tokenizer, blocks, recipe, extra, active
):
    trainer, plan, collator = make_trainer(tmp_path, teacher_dir, tiny_tokenizer, blocks, recipe=recipe, **extra)
    assert set(plan.active_losses) == active
    batch = collator.mask(collator(blocks[:4]))
    trainer.model.train()
    loss = trainer.compute_loss(trainer.model, batch)
    expected = hand_losses(trainer, plan, batch)
    logged = dict(trainer._loss_sums.items())
    for name, value in expected.items():
        assert logged[name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
    assert float(loss.detach()) == pytest.approx(sum(plan.weights[n] * v for n, v in expected.items()), rel=1e-4)
    if recipe == "tinybiobert":
        assert plan.use_projection and trainer.model.config.hidden_size == 16
        assert plan.layer_map == [1, 3]  # TinyBERT's uniform map for 2 of 4 layers


def test_no_gradient_reaches_the_teacher(tmp_path, teacher_dir, tiny_tokenizer, blocks):
    trainer, plan, collator = make_trainer(tmp_path, teacher_dir, tiny_tokenizer, blocks, recipe="compactbiobert")
    teacher = trainer.teacher_model
    before = {name: p.detach().clone() for name, p in teacher.named_parameters()}
    assert not teacher.training and not any(p.requires_grad for p in teacher.parameters())
    trainer.model.train()
    trainer.compute_loss(trainer.model, collator.mask(collator(blocks[:4]))).backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert all(p.grad is not None for p in trainer.model.parameters())  # every student weight learns
    student_before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    trainer.train()
    assert all(torch.equal(before[name], p) for name, p in teacher.named_parameters())
    assert not torch.equal(
        student_before["bert.encoder.layer.0.attention.self.query.weight"],
        trainer.model.bert.encoder.layer[0].attention.self.query.weight,
    )
    assert [p.grad for p in teacher.parameters()] == [None] * len(before)


def test_saved_student_loads_and_matches_the_in_memory_student(tmp_path, teacher_dir, tiny_tokenizer, blocks):
    trainer, plan, collator = make_trainer(
        tmp_path, teacher_dir, tiny_tokenizer, blocks, recipe="tinybiobert", student_hidden_size=16
    )
    trainer.train()
    measured = trainer.measure_student_and_teacher(speed_batches=1)
    assert measured["speed"]["speedup"] > 0
    facts = distillation_facts(plan, str(teacher_dir), trainer.teacher_model, trainer.model, speed=measured["speed"])
    info = ReleaseInfo("0.4", distillation=facts)
    release = write_student_release(tmp_path / "out", trainer.model, tiny_tokenizer, info)
    assert release == tmp_path / "out" / "student"
    in_memory = trainer.model.eval()
    assert type(in_memory) is BertForMaskedLM and not hasattr(in_memory, PROJECTION_NAME)
    loaded = AutoModelForMaskedLM.from_pretrained(release).eval()
    batch = collator(blocks[4:8])
    with torch.no_grad():
        a = in_memory(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        b = loaded(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    assert a.shape == (4, 24, len(tiny_tokenizer))
    torch.testing.assert_close(a, b, rtol=0, atol=1e-5)
    with safe_open(str(release / "model.safetensors"), "pt") as handle:
        assert not [key for key in handle.keys() if "projection" in key]
    stored = ReleaseInfo.load(release)
    assert stored.format_version == 2 and stored.distillation.recipe == "tinybiobert"
    assert stored.distillation.student_hidden_size == 16 and stored.distillation.projection is True
    assert stored.distillation.student_parameters == sum(p.numel() for p in loaded.parameters())
    card = (release / "README.md").read_text()
    validate_card(card)
    assert "TinyBioBERT" in card and "| **This student** | **2** | **16** |" in card


def test_keep_layers_copies_weights_bit_for_bit(teacher_dir):
    teacher = teacher_model(teacher_dir)
    kept = keep_layers(teacher, [1, 3])
    assert kept.config.num_hidden_layers == 2 and teacher.config.num_hidden_layers == 4
    for new, old in [(0, 1), (1, 3)]:
        for (name, a), (_, b) in zip(
            kept.bert.encoder.layer[new].named_parameters(), teacher.bert.encoder.layer[old].named_parameters()
        ):
            assert torch.equal(a, b), name
    assert torch.equal(kept.bert.embeddings.word_embeddings.weight, teacher.bert.embeddings.word_embeddings.weight)
    assert kept.cls.predictions.decoder.weight is kept.bert.embeddings.word_embeddings.weight  # still tied
    with pytest.raises(ValueError, match=r"layers \[0, 4\]: the model has 4 layers"):
        keep_layers(teacher, [0, 4])


def test_remove_layers_command_keeps_lower_layers_bit_identical(tmp_path, teacher_dir):
    from bioptimus_hf.commands import run as bioptimus

    out = tmp_path / "top2-removed"
    report = bioptimus(
        "remove-layers",
        ["--model_name_or_path", str(teacher_dir), "--num_layers_to_remove", "2", "--output_dir", str(out)],
    )
    assert report["kept_layers"] == [0, 1] and report["removed_layers"] == [2, 3]
    teacher, shortened = teacher_model(teacher_dir), AutoModelForMaskedLM.from_pretrained(out)
    assert shortened.config.num_hidden_layers == 2
    source, result = teacher.state_dict(), shortened.state_dict()
    assert set(result) == {k for k in source if not any(f"layer.{i}." in k for i in (2, 3))}
    for key, value in result.items():
        assert torch.equal(value, source[key]), key
    assert json.loads((out / "layer_removal.json").read_text())["parameters"] == report["parameters"]
    assert (out / "tokenizer.json").is_file()
    with pytest.raises(SystemExit, match="at least one must stay"):
        bioptimus(
            "remove-layers",
            [
                "--model_name_or_path",
                str(teacher_dir),
                "--num_layers_to_remove",
                "4",
                "--output_dir",
                str(tmp_path / "none"),
            ],
        )
    with pytest.raises(SystemExit, match="already holds a model"):
        bioptimus(
            "remove-layers",
            ["--model_name_or_path", str(teacher_dir), "--num_layers_to_remove", "1", "--output_dir", str(out)],
        )


def test_an_interrupted_layer_removal_leaves_the_previous_model_whole(tmp_path, teacher_dir, monkeypatch):
    """Killed while replacing a shortened model (--overwrite_output_dir): the old one survives, bit for bit."""
    from bioptimus_hf.commands import run as bioptimus
    from bioptimus_hf.distillation import layer_removal

    out = tmp_path / "shortened"
    bioptimus(
        "remove-layers",
        ["--model_name_or_path", str(teacher_dir), "--num_layers_to_remove", "2", "--output_dir", str(out)],
    )
    before = {path.name: path.read_bytes() for path in out.iterdir()}

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(layer_removal, "write_json_atomic", interrupted)
    with pytest.raises(KeyboardInterrupt):
        bioptimus(
            "remove-layers",
            [
                "--model_name_or_path",
                str(teacher_dir),
                "--num_layers_to_remove",
                "1",
                "--output_dir",
                str(out),
                "--overwrite_output_dir",
            ],
        )
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["shortened"]  # no half-written neighbour left
    assert AutoModelForMaskedLM.from_pretrained(out).config.num_hidden_layers == 2


@pytest.mark.parametrize(
    "settings,message",
    [
        (
            {"student_layers": [0, 4]},
            r"--student_layers \[0, 4\]: layer\(s\) \[4\] do not exist in the 4-layer teacher",
        ),
        ({"student_layers": [2, 0]}, "distinct teacher layers in increasing order"),
        ({"student_layers": [0, 2], "layer_map": [1]}, "--layer_map has 1 entries for a 2-layer student"),
        ({"student_layers": [0, 2], "layer_map": [3, 1]}, "must not go down"),
        ({"student_hidden_size": 16}, "copies teacher layers, so the student must have the teacher's widths"),
        (
            {"student_init": "random", "student_hidden_size": 16, "use_projection": False},
            r"narrower than the teacher \(hidden size 16 vs 32\).*--use_projection true",
        ),
        ({"recipe": "tinybiobert", "student_num_attention_heads": 2}, "student has 2 heads, the teacher 4"),
        ({"alpha_mlm": 0, "alpha_kl": 0, "alpha_cos": 0}, "every loss weight is 0"),
        ({"alpha_kl": -1}, "--alpha_kl -1: a loss weight must be a finite number >= 0"),
        ({"temperature": 0}, "--temperature 0 must be > 0"),
    ],
)
def test_bad_configurations_are_refused_with_the_flag_named(teacher_dir, settings, message):
    teacher = teacher_model(teacher_dir)
    with pytest.raises(ValueError, match=message):
        DistillationConfig(**settings).resolve(teacher.config)


def test_vocabulary_and_head_checks(tmp_path, teacher_dir, tiny_tokenizer):
    teacher = teacher_model(teacher_dir)
    plan = DistillationConfig().resolve(teacher.config)
    other = BertConfig(
        vocab_size=len(tiny_tokenizer) + 5,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
    )
    with pytest.raises(ValueError, match="do not share the vocabulary: 600 vs 605 embedding rows"):
        DistillationTrainer(
            model=BertForMaskedLM(other),
            teacher_model=teacher,
            plan=plan,
            args=TrainingArguments(str(tmp_path), report_to="none", use_cpu=True),
        )
    with pytest.raises(ValueError, match="--student_config_name: vocab_size 605 differs"):
        DistillationConfig().resolve(teacher.config, other)
    small_vocab = copy.deepcopy(teacher.config)
    small_vocab.vocab_size = 100
    with pytest.raises(ValueError, match="has 600 entries but the teacher has 100 embedding rows"):
        check_shared_vocabulary(tiny_tokenizer, small_vocab)
    # A teacher saved without its MLM head cannot be distilled from with an output loss.
    headless = tmp_path / "headless"
    teacher.bert.save_pretrained(headless)
    with pytest.raises(ValueError, match="has no trained masked-LM head .*--alpha_kl 0"):
        load_teacher(str(headless), plan)
    load_teacher(str(headless), DistillationConfig(alpha_kl=0).resolve(teacher.config))  # warns only


def test_default_layer_choices_follow_the_recipes(teacher_dir):
    config = teacher_model(teacher_dir).config
    assert DistillationConfig().resolve(config).student_layers == [0, 2]
    assert DistillationConfig(recipe="compactbiobert").resolve(config).student_layers == [1, 3]
    tiny = DistillationConfig(recipe="tinybiobert").resolve(config)
    assert (tiny.student_init, tiny.student_hidden_size, tiny.layer_map, tiny.use_projection) == (
        "random",
        16,
        [1, 3],
        True,
    )
    assert math.isclose(tiny.temperature, 1.0) and tiny.weights["mlm"] == 0
    mlm_only = DistillationConfig(alpha_kl=0, alpha_cos=0).resolve(config)
    assert not mlm_only.needs_teacher and mlm_only.active_losses == ["mlm"]


def test_checkpoints_carry_the_projection_and_resume_restores_it(tmp_path, teacher_dir, tiny_tokenizer, blocks):
    trainer, plan, _ = make_trainer(
        tmp_path, teacher_dir, tiny_tokenizer, blocks, recipe="tinybiobert", student_hidden_size=16
    )
    trainer.args.save_strategy = "steps"
    trainer.args.save_steps = 3
    trainer.train()
    trained = getattr(trainer.model, PROJECTION_NAME).weight.detach().clone()
    fresh, _, _ = make_trainer(
        tmp_path / "again", teacher_dir, tiny_tokenizer, blocks, seed=7, recipe="tinybiobert", student_hidden_size=16
    )
    assert not torch.equal(getattr(fresh.model, PROJECTION_NAME).weight, trained)
    fresh._load_from_checkpoint(str(tmp_path / "run" / "checkpoint-3"))
    assert torch.equal(getattr(fresh.model, PROJECTION_NAME).weight, trained)
