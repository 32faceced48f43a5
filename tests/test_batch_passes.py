"""A BLURB batch trained in passes (``--max_tokens_per_pass``, ``blurb_config.batch_in_passes``): how a batch is
split, the default on a CPU and on a GPU, and that a batch trained in passes takes the optimizer step the whole batch
takes, for every problem type of BLURB's heads."""

from __future__ import annotations

import copy

import pytest
import torch
from datasets import Dataset
from transformers import BertConfig, BertForSequenceClassification

from bioptimus_hf.blurb.blurb_config import CPU_TOKENS_PER_PASS, BlurbTrainingArguments, batch_in_passes
from bioptimus_hf.finetuning.row_order_trainer import RowOrderTrainer
from bioptimus_hf.utils.hardware import FAKE_GPUS_ENV


pytestmark = pytest.mark.usefixtures("one_thread")


def arguments(tmp_path, **settings) -> BlurbTrainingArguments:
    return BlurbTrainingArguments(output_dir=str(tmp_path), report_to="none", **settings)


@pytest.mark.parametrize(
    "batch, length, limit, accumulation, expected",
    [
        (32, 512, None, 1, (2, 16)),  # HoC's recipe on a CPU: the default's 1024 tokens
        (32, 128, None, 1, (8, 4)),  # GAD's
        (32, 32, None, 1, (32, 1)),  # fits whole
        (16, 512, 4096, 2, (8, 4)),  # the user's accumulation multiplied
        (6, 512, 2048, 1, (3, 2)),  # the fewest equal passes: 3 + 3 rows, never 4 + 2
        (7, 512, 2048, 1, (1, 7)),
        (4, 4096, 2048, 1, (1, 4)),  # a row longer than the limit: one row a pass
        (32, 512, 0, 1, (32, 1)),  # 0: whole batches
    ],
)
def test_a_batch_splits_into_the_fewest_equal_passes_that_fit(tmp_path, batch, length, limit, accumulation, expected):
    args = arguments(
        tmp_path,
        use_cpu=True,
        per_device_train_batch_size=batch,
        gradient_accumulation_steps=accumulation,
        max_tokens_per_pass=limit,
    )
    split = batch_in_passes(args, length)
    assert (split.per_device_train_batch_size, split.gradient_accumulation_steps) == expected
    assert split.per_device_train_batch_size * split.gradient_accumulation_steps == batch * accumulation
    assert (split is args) == (expected == (batch, accumulation))  # the arguments given are never changed
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (batch, accumulation)


def test_the_default_splits_on_a_cpu_and_not_on_a_gpu(tmp_path, monkeypatch):
    monkeypatch.delenv(FAKE_GPUS_ENV, raising=False)
    cpu = batch_in_passes(arguments(tmp_path, use_cpu=True, per_device_train_batch_size=32), 512)
    assert cpu.per_device_train_batch_size * 512 <= CPU_TOKENS_PER_PASS < 2 * cpu.per_device_train_batch_size * 512
    monkeypatch.setenv(FAKE_GPUS_ENV, "40/80")
    on_gpu = arguments(tmp_path, per_device_train_batch_size=32)
    assert batch_in_passes(on_gpu, 512) is on_gpu
    # asked for, a GPU run splits too
    asked = arguments(tmp_path, per_device_train_batch_size=32, max_tokens_per_pass=8192)
    assert batch_in_passes(asked, 512).gradient_accumulation_steps == 2


def test_a_negative_limit_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--max_tokens_per_pass -1"):
        arguments(tmp_path, max_tokens_per_pass=-1)


ROWS, LENGTH = 8, 6


def rows(problem_type: str) -> Dataset:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 60, (ROWS, LENGTH), generator=generator)
    if problem_type == "regression":
        labels = torch.rand(ROWS, generator=generator).tolist()
    elif problem_type == "multi_label_classification":
        labels = torch.randint(0, 2, (ROWS, 3), generator=generator).float().tolist()
    else:
        labels = torch.randint(0, 3, (ROWS,), generator=generator).tolist()
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": [[1] * LENGTH] * ROWS, "labels": labels})


@pytest.mark.parametrize("problem_type", ["single_label_classification", "multi_label_classification", "regression"])
def test_a_batch_in_passes_takes_the_whole_batchs_step(tmp_path, problem_type):
    """One SGD step on 8 rows, whole and in two passes of 4: the same loss and the same weights (float32
    rounding apart). Summing the passes' mean losses, as the Trainer does for a model that takes
    num_items_in_batch, would double both."""
    config = BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=1 if problem_type == "regression" else 3,
        problem_type=problem_type,
    )
    torch.manual_seed(0)
    start = BertForSequenceClassification(config)
    data = rows(problem_type)
    trained = {}
    for name, limit in (("whole", 0), ("passes", 4 * LENGTH)):
        args = arguments(
            tmp_path / name,
            use_cpu=True,
            per_device_train_batch_size=ROWS,
            max_tokens_per_pass=limit,
            max_steps=1,
            optim="sgd",
            learning_rate=0.5,
            lr_scheduler_type="constant",
            max_grad_norm=0.0,
            save_strategy="no",
        )
        args = batch_in_passes(args, LENGTH)
        trainer = RowOrderTrainer(model=copy.deepcopy(start), args=args, train_dataset=data)
        trained[name] = (trainer.train().training_loss, trainer.model.state_dict())
    assert trained["passes"][0] == pytest.approx(trained["whole"][0], rel=1e-5)
    for key, whole in trained["whole"][1].items():
        torch.testing.assert_close(trained["passes"][1][key], whole, rtol=1e-5, atol=1e-6, msg=key)
    moved = max((trained["whole"][1][k] - v).abs().max().item() for k, v in start.state_dict().items())
    assert moved > 1e-3  # the step is large enough for a doubled one to show


def test_bioptimus_blurbs_limit_reaches_its_jobs_beyond_ner_and_their_estimates(tmp_path, monkeypatch):
    """``bioptimus blurb --max_tokens_per_pass``: a GAD job trains (and is estimated) in passes, a NER job keeps its
    batches (it pads each to its longest window)."""
    from transformers import BertConfig

    from bioptimus_hf.blurb.benchmark import find_datasets, ner_fine_tuning, seed_jobs
    from bioptimus_hf.blurb.benchmark_config import BenchmarkArguments
    from bioptimus_hf.blurb.jobs import fine_tuning_memory_bytes, job_arguments, job_estimates
    from helpers.blurb import write_task_dir
    from helpers.ner import write_dataset_dir

    monkeypatch.delenv(FAKE_GPUS_ENV, raising=False)
    write_dataset_dir(str(tmp_path / "ner" / "MyGenes"))
    write_task_dir(tmp_path / "blurb" / "GAD", "relation_extraction")
    config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2)
    for limit, gad_passes in ((None, (8, 4)), (2048, (16, 2)), (0, (32, 1))):
        args = BenchmarkArguments(
            model_name_or_path="m", output_dir=str(tmp_path / "out"), ner_dir=str(tmp_path / "ner"),
            blurb_dir=str(tmp_path / "blurb"), seeds=[1], max_tokens_per_pass=limit,
        )  # fmt: skip
        jobs = {
            job.dataset: job
            for job in seed_jobs(args, find_datasets(args.blurb_dir, args.ner_dir), ner_fine_tuning(args))
        }
        training = batch_in_passes(job_arguments(jobs["GAD"])[3], 128)  # GAD's recipe: 32 rows of 128 tokens
        assert (training.per_device_train_batch_size, training.gradient_accumulation_steps) == gad_passes
        memory, work = job_estimates(jobs["GAD"], 64, config, "cpu")
        assert memory == fine_tuning_memory_bytes(config, gad_passes[0], 128, bf16=False)
        assert work == 64 * 10 * 128  # rows × epochs × length, whatever the passes
        ner_training = job_arguments(jobs["MyGenes"])[3]
        assert (ner_training.per_device_train_batch_size, ner_training.gradient_accumulation_steps) == (32, 1)
