"""The flags of a short run_pretraining.py run on a tiny model (tests/conftest.py's ``tiny_model_dir``)."""


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
