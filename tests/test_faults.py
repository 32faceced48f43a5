"""Faults of the machine a command runs on (issue 60): a full disk, a read-only or vanished output directory, a
checkpoint cut short, a Hub that refuses the token. Each ends in one line ``error: ...`` naming the file and what to
do, status 1, no traceback, and leaves nothing half-written that a later run trusts.

How each fault is made: a real tmpfs (``mount -t tmpfs -o size=...``, read-only with ``-o ro``) where this process
may mount one (root); elsewhere those tests are skipped and the same errors are injected in-process: the exception
safetensors, torch or the kernel raises, raised where the write happens (``monkeypatch``). The Hub is the loopback
fake Hub (``bioptimus_hf.testing.fake_hub``)."""

import errno
import gc
import json
import shutil
import subprocess
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
from safetensors import SafetensorError

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.pretraining.run_lifecycle import last_complete_checkpoint
from bioptimus_hf.testing.fake_hub import FakeHub
from bioptimus_hf.utils.cli import exit_on_bad_input
from bioptimus_hf.utils.errors import BadInput, os_error_message
from helpers.ner import build_tiny_bert, quick_ner_flags, write_dataset_dir
from helpers.pubmed import write_pubmed_fixtures


pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning"),  # huggingface_hub's LFS upload
]

TOKEN = "hf_FAKEtokenOfTheFaultTests0000000001"
WRONG_TOKEN = "hf_WRONGtokenOfTheFaultTests000000002"


@pytest.fixture
def corpus(make_corpus):
    return make_corpus(400)


def _pretrain_argv(model_dir, corpus, out, *extra):
    return [
        *("--model_name_or_path", model_dir, "--train_file", corpus, "--output_dir", out),
        *("--max_steps", 8, "--per_device_train_batch_size", 4, "--max_seq_length", 32, "--report_to", "none"),
        *("--max_eval_samples", 8, "--disable_tqdm", "true", "--phase_steps", 2, 2, 2, 2, *extra),
    ]


def _ended(name, argv) -> str:
    """The one line ``bioptimus NAME ARGV`` ends with (it must end with one)."""
    with pytest.raises(SystemExit) as ended:
        bioptimus(name, [str(a) for a in argv])
    message = str(ended.value)
    assert message.startswith("error: ") and "Traceback" not in message
    return message


@pytest.fixture
def tmpfs(tmp_path):
    """``tmpfs(name, size, read_only=False)``: a fresh tmpfs of ``size`` mounted at ``tmp_path/name``; the test is
    skipped where this process may not mount one."""
    mounted = []

    def mount(name: str, size: str, read_only: bool = False) -> Path:
        point = tmp_path / name
        point.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip() or done.returncode})")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "--lazy", str(point)], check=False)  # a run's open files would keep it busy


# ------------------------------------------------------------------------------- the translation on its own
@pytest.mark.parametrize(
    "error, expected",
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "out/releases/v0.2.partial/model.safetensors"),
            r"^out/releases/v0\.2\.partial/model\.safetensors: No space left on device \([\d.]+ MiB free there\); "
            r"free some space or use another --output_dir, then run the same command again$",
        ),
        (
            SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)"),
            r"^out: No space left on device \([\d.]+ MiB free there\); free some space",
        ),
        (
            RuntimeError(
                "[enforce fail at inline_container.cc:747] . open file failed with strerror: Read-only file system"
            ),
            r"^out: Read-only file system; choose a --output_dir on a writable file system$",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "out/.bioptimus-run.lock"),
            r"^out/\.bioptimus-run\.lock: Read-only file system; choose a --output_dir on a writable file system$",
        ),
        (
            FileNotFoundError(errno.ENOENT, "No such file or directory", "out/checkpoint-3/optimizer.pt"),
            r"^out was removed while the command wrote into it \(out/checkpoint-3/optimizer\.pt: No such file or "
            r"directory\); delete what is left of it and run the same command again$",
        ),
    ],
)
def test_a_refused_write_is_one_line_naming_the_file_and_what_to_do(tmp_path, monkeypatch, error, expected):
    monkeypatch.chdir(tmp_path)  # "out" is missing: where a write went is measured at its nearest parent
    assert os_error_message(error, [Path("out")]) is not None
    assert __import__("re").match(expected, os_error_message(error, [Path("out")]))


def test_torch_s_write_failure_is_read_from_the_state_of_the_output_directory(tmp_path, monkeypatch):
    """torch.save's ``unexpected pos`` says no cause: a full disk (little space left) is named from the directory."""
    out = tmp_path / "out"
    out.mkdir()
    error = RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534")
    assert os_error_message(error, [out]) is None  # plenty of space here: not a fault of ours to name
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(2**20, 2**20, 0))
    assert os_error_message(error, [out]).startswith(f"{out}: No space left on device (0.0 MiB free there)")
    shutil.rmtree(out)
    assert os_error_message(error, [out]).startswith(f"{out} was removed while the command wrote into it")


def test_what_is_not_a_refused_write_passes_as_it_is(tmp_path):
    missing_input = FileNotFoundError(errno.ENOENT, "No such file or directory", str(tmp_path / "corpus.txt"))
    assert os_error_message(missing_input, [tmp_path / "out"]) is None  # an input: bad input, said elsewhere
    try:
        raise BadInput("--resume_from_checkpoint out/checkpoint-9: incomplete") from FileNotFoundError(
            errno.ENOENT, "No such file or directory", str(tmp_path / "out" / "checkpoint-9")
        )
    except BadInput as error:
        assert os_error_message(error, [tmp_path / "out"]) is None  # refused by a check, not a vanished directory
    with pytest.raises(RuntimeError, match="a bug"), exit_on_bad_input(BadInput, output_dirs=[tmp_path]):
        raise RuntimeError("a bug")


# ------------------------------------------------------------------------------- a full disk
def test_pretrain_on_a_disk_that_fills_up_ends_in_one_line_and_resumes_from_a_complete_checkpoint(
    monkeypatch, tmp_path, tiny_model_dir, corpus
):
    """Injected: safetensors' own error when checkpoint-2's weights meet a full disk, as ``--save_steps 1`` on a
    small tmpfs meets it; the half-written checkpoint is set aside by the next run, which finishes the run."""
    from transformers import modeling_utils

    real = modeling_utils.safe_save_file  # what save_pretrained calls

    def save_file(tensors, filename, *args, **kwargs):
        if "checkpoint-2" in str(filename):
            Path(filename).write_bytes(b"\0" * 100)  # what a full disk leaves: part of the file
            raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
        return real(tensors, filename, *args, **kwargs)

    monkeypatch.setattr(modeling_utils, "safe_save_file", save_file)
    out = tmp_path / "out"
    argv = _pretrain_argv(tiny_model_dir, corpus, out, "--save_steps", 1)
    message = _ended("pretrain", argv)
    gc.collect()  # the failed run's lock, held by its traceback's frames: the process would have exited
    assert message.startswith(f"error: {out}/checkpoint-2/model.safetensors: No space left on device (")
    assert message.endswith("free some space or use another --output_dir, then run the same command again")
    monkeypatch.setattr(modeling_utils, "safe_save_file", real)  # space freed
    bioptimus("pretrain", [str(a) for a in argv])
    assert (out / "checkpoint-2.incomplete").is_dir() and last_complete_checkpoint(out).name == "checkpoint-8"
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1", "v0.2", "v0.3", "v0.4"]


def test_pretrain_on_a_small_tmpfs_ends_in_one_line_leaving_no_partial_release(tmpfs, tiny_model_dir, corpus):
    out = tmpfs("disk", "2m") / "out"
    message = _ended("pretrain", _pretrain_argv(tiny_model_dir, corpus, out, "--save_steps", 1))
    assert f"error: {out}/" in message and ": No space left on device (" in message
    assert not list(out.glob("releases/*.partial"))


def test_prepare_corpus_on_a_full_disk_ends_in_one_line(tmpfs, tmp_path):
    inputs = write_pubmed_fixtures(tmp_path / "pubmed", truncated=False)
    out = tmpfs("disk", "4k") / "corpus"
    message = _ended("prepare-corpus", ["--input_files", *inputs, "--output_dir", out, "--disable_tqdm", "true"])
    assert message.startswith(f"error: {out}") and ": No space left on device (" in message
    assert not (out / "manifest.json").exists()


# ------------------------------------------------------------------------------- a read-only output directory
@pytest.fixture(scope="module")
def ner_inputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ner_inputs")
    return build_tiny_bert(str(root / "bert")), write_dataset_dir(str(root / "ner"), sizes=(16, 8, 8))


def _ner_argv(ner_inputs, out):
    model, data = ner_inputs
    return ["--model_name_or_path", model, "--data_dir", data, "--output_dir", out, "--seeds", 1, *quick_ner_flags()]


def test_a_read_only_output_directory_ends_every_command_in_one_line(
    tmpfs, tmp_path, tiny_model_dir, corpus, ner_inputs
):
    read_only = tmpfs("ro", "1m", read_only=True)
    runs = {
        "pretrain": _pretrain_argv(tiny_model_dir, corpus, read_only / "run"),
        "prepare-corpus": [
            "--input_files",
            *write_pubmed_fixtures(tmp_path / "pubmed"),
            "--output_dir",
            read_only / "c",
        ],
        "ner": _ner_argv(ner_inputs, read_only / "ner"),
    }
    for name, argv in runs.items():
        where = argv[argv.index("--output_dir") + 1]
        assert (
            _ended(name, argv)
            == f"error: {where}: Read-only file system; choose a --output_dir on a writable file system"
        )


def test_a_read_only_output_directory_injected(monkeypatch, tmp_path, tiny_model_dir, corpus):
    """The kernel's EROFS, raised where pretrain first writes (its lock), for machines without a tmpfs to mount."""
    from bioptimus_hf.pretraining import run_lifecycle

    def refused(self):
        raise OSError(errno.EROFS, "Read-only file system", str(self.path))

    monkeypatch.setattr(run_lifecycle.OutputDirLock, "acquire", refused)
    out = tmp_path / "out"
    assert _ended("pretrain", _pretrain_argv(tiny_model_dir, corpus, out)) == (
        f"error: {out}/.bioptimus-run.lock: Read-only file system; choose a --output_dir on a writable file system"
    )


# ------------------------------------------------------------------------------- a vanished output directory
def test_pretrain_whose_output_directory_is_removed_mid_run_ends_in_one_line(
    monkeypatch, tmp_path, tiny_model_dir, corpus
):
    """The Trainer makes a removed output directory again and writes on; the run must stop, not end 0 with holes."""
    from transformers import Trainer

    real = Trainer._save_checkpoint
    out = tmp_path / "out"

    def _save_checkpoint(self, *args, **kwargs):
        if self.state.global_step == 4:
            shutil.rmtree(out)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "_save_checkpoint", _save_checkpoint)
    message = _ended("pretrain", _pretrain_argv(tiny_model_dir, corpus, out, "--save_steps", 2))
    assert message == (
        f"error: {out} was removed while the command wrote into it; delete what is left of it and run the same "
        "command again"
    )


def test_prepare_corpus_whose_output_directory_is_removed_mid_run_ends_in_one_line(monkeypatch, tmp_path):
    from bioptimus_hf.corpus import prepare

    real, out = prepare.parse_file, tmp_path / "corpus"

    def parse_file(path, work_dir, *args, **kwargs):
        shutil.rmtree(out, ignore_errors=True)
        return real(path, work_dir, *args, **kwargs)

    monkeypatch.setattr(prepare, "parse_file", parse_file)
    inputs = write_pubmed_fixtures(tmp_path / "pubmed", truncated=False)
    argv = ["--input_files", *inputs, "--output_dir", out, "--num_workers", 1, "--disable_tqdm", "true"]
    message = _ended("prepare-corpus", argv)
    assert message.startswith(f"error: {out} was removed while the command wrote into it ({out}/.prepare/")
    assert message.endswith("No such file or directory); delete what is left of it and run the same command again")


def test_ner_whose_output_directory_is_removed_before_its_last_write_ends_in_one_line(
    monkeypatch, tmp_path, ner_inputs
):
    from bioptimus_hf.ner import run as ner_run

    out = tmp_path / "ner"

    def write_json_atomic(path, data, **options):
        shutil.rmtree(out)
        with open(path, "w", encoding="utf-8") as handle:  # the kernel's ENOENT: the directory is gone
            json.dump(data, handle)

    monkeypatch.setattr(ner_run, "write_json_atomic", write_json_atomic)
    message = _ended("ner", _ner_argv(ner_inputs, out))
    assert message == (
        f"error: {out} was removed while the command wrote into it ({out}/model_index.json: No such file or "
        "directory); delete what is left of it and run the same command again"
    )


# ------------------------------------------------------------------------------- a checkpoint cut short
def test_a_checkpoint_whose_weights_are_cut_short_is_set_aside_for_the_newest_complete_one(
    monkeypatch, tmp_path, tiny_model_dir, corpus, caplog
):
    out = tmp_path / "out"
    argv = [str(a) for a in _pretrain_argv(tiny_model_dir, corpus, out, "--save_steps", 1)]
    bioptimus("pretrain", argv)
    for step in (6, 7, 8):
        shutil.rmtree(out / f"checkpoint-{step}")  # as if the run had crashed while saving checkpoint-5
    weights = out / "checkpoint-5" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:5000])
    with caplog.at_level("WARNING"):
        bioptimus("pretrain", argv)
    assert (
        f"{out}/checkpoint-5 is incomplete: model.safetensors cannot be read: Error while deserializing header"
    ) in caplog.text
    assert f"resuming from {out}/checkpoint-4 at step 4 of 8" in caplog.text
    assert "checkpoint-5 at step 5" not in caplog.text and last_complete_checkpoint(out).name == "checkpoint-8"


# ------------------------------------------------------------------------------- a Hub that refuses the token
@pytest.fixture
def hub(monkeypatch, tmp_path):
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    with FakeHub(token=TOKEN, lifetime_s=600) as fake:
        monkeypatch.setattr(hf_constants, "ENDPOINT", fake.url)
        yield fake


def test_push_to_hub_answered_401_ends_non_zero_with_the_releases_kept_and_the_command_last(
    monkeypatch, tmp_path, tiny_model_dir, corpus, hub
):
    out = tmp_path / "out"
    argv = _pretrain_argv(tiny_model_dir, corpus, out, "--push_to_hub", "--hub_model_id", "acme/x")
    message = _ended("pretrain", [*argv, "--hub_token", WRONG_TOKEN])
    first, command = message.split("\n")
    assert first.startswith("error: --push_to_hub: v0.1, v0.2, v0.3, v0.4 not published (HfHubHTTPError: ")
    assert "401" in first and first.endswith(
        f"the releases are kept in {out}/releases. Publish them, with the same token, by running:"
    )
    assert command == f"  bioptimus publish --run_dir {out} --hub_model_id acme/x"
    assert sorted(p.name for p in (out / "releases").iterdir()) == ["v0.1", "v0.2", "v0.3", "v0.4"]
    assert WRONG_TOKEN not in message
    bioptimus("publish", [*command.split()[2:], "--hub_token", TOKEN])  # the command it gives does the job
    assert set(hub.repos["acme/x"].tags) == {"v0.1", "v0.2", "v0.3", "v0.4"}


# ------------------------------------------------------------------------------- a token where it does not belong
def test_a_token_typed_where_the_config_goes_is_not_echoed(capsys):
    message = _ended("publish", [TOKEN, "--run_dir", "out", "--hub_model_id", "acme/x"])
    assert message.startswith("error: config file <redacted>: no such file") and TOKEN not in message


def test_a_config_listing_tokens_or_several_steps_names_the_file_and_key_and_no_token(
    tmp_path, tiny_model_dir, corpus
):
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"hub_token: [{TOKEN}, {WRONG_TOKEN}]\n")
    steps = tmp_path / "steps.yaml"
    steps.write_text("max_steps: [2, 3]\n")
    base = ["--model_name_or_path", tiny_model_dir, "--train_file", corpus, "--output_dir", tmp_path / "out"]
    assert (
        _ended("pretrain", [tokens, *base]) == f"error: config file {tokens}: --hub_token: expected one value, got 2"
    )
    assert _ended("pretrain", [steps, *base]) == (
        f"error: config file {steps}: --max_steps: expected one value, got 2 ([2, 3])"
    )


def test_a_failed_publish_gives_an_ungarbled_hint(tmp_path, hub):
    from bioptimus_hf.testing.tiny_releases import make_run

    run = make_run(tmp_path / "run", n_versions=1)
    argv = ["--run_dir", str(run), "--hub_model_id", "acme/x", "--endpoint", hub.url]
    message = _ended("publish", [*argv, "--hub_token", WRONG_TOKEN])
    assert message.split("\n")[1:] == [
        "Nothing published is lost and publishing is idempotent: run this command again with the same token to "
        "upload only what is missing:",
        f"  bioptimus publish {' '.join(argv)}",
    ]
    assert "<redacted>" not in message and WRONG_TOKEN not in message
