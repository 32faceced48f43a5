"""The flags of a short run_pretraining.py run on a tiny model (tests/conftest.py's ``tiny_model_dir``)."""

from helpers import flags


def base_args(model_dir, corpus, out):
    return [
        "--model_name_or_path",
        model_dir,
        "--train_file",
        corpus,
        "--output_dir",
        out,
        "--do_train",
        "--max_steps",
        12,
        "--per_device_train_batch_size",
        4,
        "--max_seq_length",
        32,
        "--report_to",
        "none",
        "--max_eval_samples",
        16,
        "--logging_steps",
        2,
        "--disable_tqdm",
        "true",
        "--save_steps",
        100,
    ]


def curriculum_run_flags(model_dir, corpus, out, phase_steps, **settings) -> list[str]:
    """run_pretraining.py's flags for a curriculum of ``phase_steps`` on a tiny model: batches of 4 blocks of 32
    tokens, no held-out split, no checkpoints, reports or progress bars; ``settings`` over them (a setting of
    ``None`` leaves its flag out)."""
    return flags(
        {
            "model_name_or_path": model_dir,
            "train_file": corpus,
            "output_dir": out,
            "do_train": True,
            "max_steps": sum(phase_steps),
            "phase_steps": list(phase_steps),
            "per_device_train_batch_size": 4,
            "max_seq_length": 32,
            "report_to": "none",
            "validation_split_percentage": 0,
            "disable_tqdm": True,
            "save_strategy": "no",
            **settings,
        }
    )
