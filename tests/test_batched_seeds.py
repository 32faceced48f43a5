"""Every seed of a fine-tuning in one batched model (``bioptimus_hf/finetuning/batched_seeds.py``).

With dropout off, each seed of a batched run ends with the weights of that seed's separate run (a plain
``Trainer`` per seed) within float tolerance, for sequence and token classification, with per-seed heads, per-seed
data orders (random and length-grouped), weight decay, warm-up and a ``max_grad_norm`` small enough that every step
clips. The tolerance: a step's gradient is a forward and a backward pass through the network (twice its chain of
matrix products, ``testing/numerics.py``'s model); AdamW's update is elementwise in it, so carries the same relative
error; the steps' errors add at worst linearly. What a bug does (one seed's order for another, clipping over all
seeds, weight decay on LayerNorm) is a relative difference of 1e-2 to 1, far above it.
"""

from __future__ import annotations

import json
import logging

import datasets
import pytest
import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    BertTokenizerFast,
    DataCollatorForTokenClassification,
    DataCollatorWithPadding,
    TrainerCallback,
    TrainingArguments,
)

from bioptimus_hf.finetuning.batched_seeds import StackedSeedsModel, train_seeds_batched, train_seeds_separately
from bioptimus_hf.finetuning.finetuning_config import FineTuningModelArguments, StabilisationArguments
from bioptimus_hf.finetuning.seed_loop import SeedRecipe, fine_tune_seeds
from bioptimus_hf.testing.numerics import relative_tolerance, transformer_depth


pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = [1, 2, 3]
ROWS, BATCH, EPOCHS = 22, 4, 2  # 6 steps an epoch, the last one short
MAX_GRAD_NORM = 0.05  # below every seed's gradient norm at every step: clipping bites


def tiny_config(dropout: float = 0.0, **extra) -> BertConfig:
    return BertConfig(
        vocab_size=45,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
        **extra,
    )


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """(directory of a tiny random encoder without a head, tokenizer, rows of token ids with both kinds of labels)."""
    directory = tmp_path_factory.mktemp("batched_seeds")
    words = [f"w{i}" for i in range(40)]
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]))
    tokenizer = BertTokenizerFast(vocab_file=str(directory / "vocab.txt"))
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(ROWS):  # lengths 5 to 13: batches need padding, length grouping has something to group
        ids = [2, *torch.randint(5, 45, (int(torch.randint(3, 12, (1,), generator=generator)),), generator=generator)]
        ids = [int(i) for i in ids] + [3]
        tags = [-100, *[i % 4 for i in ids[1:-1]], -100]
        rows.append({"input_ids": ids, "attention_mask": [1] * len(ids), "label": ids[1] % 3, "tags": tags})
    torch.manual_seed(123)
    BertModel(tiny_config()).save_pretrained(directory / "encoder")
    return directory / "encoder", tokenizer, rows


def task(setup, kind: str, dropout: float = 0.0):
    """(model_init, train dataset, collator) of sequence (``seq``) or token (``token``) classification."""
    encoder, tokenizer, rows = setup
    dataset = datasets.Dataset.from_list(rows)
    if kind == "seq":
        model_class, num_labels, collator = BertForSequenceClassification, 3, DataCollatorWithPadding(tokenizer)
        dataset = dataset.remove_columns("tags")
    else:
        model_class, num_labels = BertForTokenClassification, 4
        collator = DataCollatorForTokenClassification(tokenizer)
        dataset = dataset.remove_columns("label").rename_column("tags", "labels")

    def model_init(seed):  # a fresh head, drawn from the seed's random state
        return model_class.from_pretrained(encoder, config=tiny_config(dropout, num_labels=num_labels))

    return model_init, dataset, collator


def training_args(tmp_path, sampling: str = "random", **extra) -> TrainingArguments:
    settings = {
        "output_dir": str(tmp_path / "out"),
        "per_device_train_batch_size": BATCH,
        "num_train_epochs": EPOCHS,
        "learning_rate": 1e-3,
        "weight_decay": 0.1,
        "warmup_steps": 2,
        "max_grad_norm": MAX_GRAD_NORM,
        "train_sampling_strategy": sampling,
        "save_strategy": "no",
        "logging_strategy": "no",
        "report_to": [],
        "disable_tqdm": True,
        "use_cpu": True,
    }
    return TrainingArguments(**{**settings, **extra})


def flat(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten().double() for p in model.parameters()])


class SeedNorms(TrainerCallback):
    """Each step, the seeds' gradient norms before clipping (the clipping callback runs after this one)."""

    def __init__(self):
        self.norms = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.norms.append(model.seed_gradient_norms())


@pytest.mark.parametrize(
    ("kind", "sampling", "accumulation"),
    [("seq", "random", 1), ("token", "group_by_length", 1), ("token", "random", 2)],
)
def test_each_seed_ends_with_its_separate_runs_weights(setup, tmp_path, kind, sampling, accumulation):
    """The third case accumulates 2 batches a step (``num_items_in_batch`` counted per seed)."""
    model_init, dataset, collator = task(setup, kind)
    args = training_args(tmp_path, sampling, gradient_accumulation_steps=accumulation)
    norms = SeedNorms()
    batched = train_seeds_batched(SEEDS, model_init, args, dataset, collator, callbacks=[norms])
    separate = train_seeds_separately(SEEDS, model_init, args, dataset, collator)

    steps = EPOCHS * -(-(-(-ROWS // BATCH)) // accumulation)
    assert len(norms.norms) == steps and min(n.min().item() for n in norms.norms) > MAX_GRAD_NORM
    config = batched[0].model.config
    depth = 2 * (transformer_depth(config.num_hidden_layers) + 2)  # forward and backward, pooler and classifier
    bound = steps * relative_tolerance(torch.float32, config.intermediate_size, depth)
    start = flat(model_init(0))
    for ours, theirs in zip(batched, separate):
        assert ours.seed == theirs.seed
        update = flat(theirs.model) - start
        error = ((flat(ours.model) - flat(theirs.model)).norm() / update.norm()).item()
        assert error <= bound, f"seed {ours.seed}: weights differ by {error:.2e} of the update (bound {bound:.2e})"
        assert ours.train_loss == pytest.approx(theirs.train_loss, rel=bound)
    # the seeds really differ (own head, own order): the comparison above is not satisfied by any one of them
    first, second = flat(separate[0].model), flat(separate[1].model)
    assert ((first - second).norm() / (first - start).norm()).item() > 100 * bound

    batched[1].model.save_pretrained(tmp_path / "seed_2")  # a seed's model is an ordinary model
    reloaded = type(batched[1].model).from_pretrained(tmp_path / "seed_2")
    assert torch.equal(flat(reloaded), flat(batched[1].model))


def test_dropout_draws_different_masks_per_seed(setup):
    model_init, dataset, collator = task(setup, "seq", dropout=0.1)
    torch.manual_seed(0)
    models = []
    for _ in SEEDS:  # three identical models: only dropout can tell the seeds apart
        torch.manual_seed(0)
        models.append(model_init(0))
    stacked = StackedSeedsModel(models)
    features = [dataset[i] for i in range(3)]
    batch = collator([{k: v for k, v in f.items() if k != "label"} for f in features] * len(SEEDS))
    batch = {key: value.view(len(SEEDS), -1, *value.shape[1:]) for key, value in batch.items()}
    stacked.eval()
    with torch.no_grad():
        logits = stacked(**dict(batch))["logits"]
    assert torch.equal(logits[0], logits[1]) and torch.equal(logits[1], logits[2])
    stacked.train()
    with torch.no_grad():
        logits = stacked(**dict(batch))["logits"]
    assert not torch.allclose(logits[0], logits[1]) and not torch.allclose(logits[1], logits[2])


class ItemBert(BertForSequenceClassification):
    """A model family that reads a value out of its input, which ``vmap`` refuses."""

    def forward(self, input_ids=None, **kwargs):
        if input_ids.max().item() < 0:
            raise ValueError("unreachable")
        return super().forward(input_ids=input_ids, **kwargs)


def test_an_unvmappable_model_falls_back_in_one_line_and_trains(setup, tmp_path, caplog):
    """Through the seed loop: one line, then each seed trained alone, saved and recorded as not batched."""
    encoder, _, _ = setup
    _, dataset, collator = task(setup, "seq")

    def load_model():
        return ItemBert.from_pretrained(encoder, config=tiny_config(num_labels=3))

    recipe = SeedRecipe(
        FineTuningModelArguments(str(encoder)),
        StabilisationArguments(),
        load_model,
        {"train_dataset": dataset, "data_collator": collator},
        score=lambda trainer: {},
        card=lambda run, run_info: "a card",
    )
    args = training_args(tmp_path, num_train_epochs=1)
    with caplog.at_level(logging.WARNING, logger="bioptimus_hf.finetuning.batched_seeds"):
        runs = fine_tune_seeds(recipe, SEEDS[:2], args, {}, batched=True)
    lines = [r.getMessage() for r in caplog.records if r.name == "bioptimus_hf.finetuning.batched_seeds"]
    assert len(lines) == 1 and "ItemBert cannot train its seeds batched" in lines[0] and "item" in lines[0]
    assert "\n" not in lines[0]
    assert [run["seed"] for run in runs] == SEEDS[:2]
    for seed in SEEDS[:2]:
        seed_dir = tmp_path / "out" / f"seed_{seed}"
        assert json.loads((seed_dir / "seed_results.json").read_text())["run_info"]["batched_seeds"] is False
        assert (seed_dir / "README.md").read_text() == "a card"
    torch.manual_seed(SEEDS[0])
    assert not torch.equal(flat(ItemBert.from_pretrained(tmp_path / "out" / "seed_1")), flat(load_model()))


def test_settings_that_cannot_batch_fall_back(setup, tmp_path, caplog):
    model_init, dataset, collator = task(setup, "seq")
    args = training_args(tmp_path, num_train_epochs=1, eval_strategy="steps", eval_steps=2)
    with caplog.at_level(logging.WARNING, logger="bioptimus_hf.finetuning.batched_seeds"):
        assert train_seeds_batched(SEEDS, model_init, args, dataset, collator) is None
    assert "--eval_strategy" in caplog.text
