"""The scale-out files parse with the loaders their engines use, and every documented launch keeps the
paper's effective batch of 256."""

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.utils import DistributedType
from accelerate.utils.deepspeed import HfDeepSpeedConfig


ROOT = Path(__file__).resolve().parents[1]
ACCELERATE = ROOT / "configs" / "accelerate"
FULL_SCALE = yaml.safe_load((ROOT / "configs" / "bioptimus_full_scale.yaml").read_text())
PAPER_BATCH = 256


@pytest.mark.parametrize(
    "name, distributed, processes, machines, precision, cpu",
    [
        ("multi_gpu_bf16.yaml", DistributedType.MULTI_GPU, 8, 1, "bf16", False),
        ("multi_node.yaml", DistributedType.MULTI_GPU, 16, 2, "bf16", False),
        ("cpu_two_processes.yaml", DistributedType.MULTI_GPU, 2, 1, "no", True),
    ],
)
def test_accelerate_configs_load(name, distributed, processes, machines, precision, cpu):
    config = load_config_from_file(str(ACCELERATE / name))
    assert config.distributed_type == distributed
    assert (config.num_processes, config.num_machines, config.mixed_precision, config.use_cpu) == (
        processes,
        machines,
        precision,
        cpu,
    )


def test_deepspeed_zero2_defers_to_training_arguments():
    path = ACCELERATE / "deepspeed_zero2.json"
    raw = json.loads(path.read_text())
    config = HfDeepSpeedConfig(str(path))
    assert config.is_zero2() and not config.is_zero3() and not config.is_offload()
    # Everything the Trainer also sets is "auto", so the yaml (batch, accumulation, bf16, clipping) governs
    # and the two can never disagree; without optimizer/scheduler sections the Trainer's own run.
    for key in (
        "train_batch_size",
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "gradient_clipping",
    ):
        assert raw[key] == "auto", key
    assert raw["bf16"]["enabled"] == "auto"
    assert "optimizer" not in raw and "scheduler" not in raw


def launch_rows():
    """(command, per device, accumulation, processes) of every row of docs/scale_out.md's launch table."""
    text = (ROOT / "docs" / "scale_out.md").read_text()
    table = text[text.index("## Launch commands") :].split("\n\n")[1]
    rows = []
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        product = re.fullmatch(r"(\d+) × (\d+) × (\d+) = (\d+)", cells[2])
        assert product, line
        rows.append((cells[1], *map(int, product.groups())))
    return rows


def test_every_documented_launch_keeps_the_paper_batch():
    rows = launch_rows()
    assert len(rows) >= 7
    for command, per_device, accumulation, processes, total in rows:
        assert per_device * accumulation * processes == total == PAPER_BATCH, command
        if command.startswith("`sbatch"):
            continue  # the script's numbers: test_slurm_script_is_valid_bash_and_uses_the_shipped_files
        # The numbers in the last column are those the command actually gives.
        launcher = re.search(r"--(?:nproc_per_node|num_processes) (\d+)", command)
        config_file = re.search(r"--config_file (\S+\.yaml)", command)
        if launcher:
            assert int(launcher.group(1)) == processes, command
        elif config_file:
            assert load_config_from_file(str(ROOT / config_file.group(1))).num_processes == processes, command
        else:
            assert command.startswith("`python ") and processes == 1, command
        flags = dict(re.findall(r"--(per_device_train_batch_size|gradient_accumulation_steps) (\d+)", command))
        assert int(flags.get("per_device_train_batch_size", FULL_SCALE["per_device_train_batch_size"])) == per_device
        assert int(flags.get("gradient_accumulation_steps", FULL_SCALE["gradient_accumulation_steps"])) == accumulation
        for config in re.findall(r"configs/\S+\.(?:yaml|json)", command):
            assert (ROOT / config).is_file(), config


def test_slurm_script_is_valid_bash_and_uses_the_shipped_files():
    script = ROOT / "scripts" / "slurm" / "pretrain_two_nodes.sbatch"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    assert "--nodes=2" in text and '--machine_rank "$SLURM_NODEID"' in text
    for config in re.findall(r"configs/\S+\.(?:yaml|json)", text):
        assert (ROOT / config).is_file(), config
    per_device = int(re.search(r"--per_device_train_batch_size (\d+)", text).group(1))
    nodes = int(re.search(r"--nodes=(\d+)", text).group(1))
    gpus = int(re.search(r"--gpus-per-node=(\d+)", text).group(1))
    assert per_device * nodes * gpus * FULL_SCALE["gradient_accumulation_steps"] == PAPER_BATCH
