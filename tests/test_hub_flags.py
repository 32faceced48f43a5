"""The Trainer's standard Hub flags (--push_to_hub, --hub_model_id, --hub_private_repo, --hub_token, --hub_strategy,
--hub_revision) on run_pretraining.py, run_distillation.py, run_ner.py and bioptimus publish, against the loopback
fake Hub (bioptimus_hf.testing.fake_hub); no network."""

import json
import sys
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
import torch
from huggingface_hub import ModelCard
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, AutoModelForTokenClassification

import run_distillation
import run_ner
import run_pretraining
from bioptimus_hf.commands import parse_args
from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.ner.hub_push import best_seed
from bioptimus_hf.ner.schemes import pipeline_caveat
from bioptimus_hf.pretraining.bioptimus_config import BioptimusConfig
from bioptimus_hf.releases.card import validate_card
from bioptimus_hf.releases.lineage import local_checkpoint_text
from bioptimus_hf.releases.publish_config import PublishArguments
from bioptimus_hf.releases.publisher import ReleasePublisher
from bioptimus_hf.releases.release_config import resolve_release_hub
from bioptimus_hf.testing.fake_hub import FakeHub
from bioptimus_hf.testing.tiny_releases import make_run
from helpers import corpus_lines
from helpers.ner import build_tiny_bert, quick_ner_flags, write_dataset_dir


# huggingface_hub's own LFS upload passes a file object as `data=`, which httpx2 deprecates: not ours.
pytestmark = [
    pytest.mark.usefixtures("one_thread"),
    pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning"),
]

TOKEN = "hf_FAKEtoken_flags_do_not_leak_5521"
VERSIONS = ("v0.1", "v0.2", "v0.3", "v0.4")


@pytest.fixture(autouse=True)
def local_hub_mode(monkeypatch, tmp_path):
    # The suite runs with HF_HUB_OFFLINE=1, which huggingface_hub applies to local endpoints too; Xet cannot be
    # faked, so the LFS protocol is used. No token is found unless a test gives one.
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))


@pytest.fixture
def hub(monkeypatch):
    with FakeHub(token=TOKEN, lifetime_s=300) as fake:
        monkeypatch.setattr(hf_constants, "ENDPOINT", fake.url)  # what HfApi() and the scripts use by default
        yield fake


def _args(*argv):
    """The release settings and the Trainer's, as one ``BioptimusConfig`` holds them (twice: both roles)."""
    (config,) = parse_args((BioptimusConfig,), [str(a) for a in argv])
    return config, config


def _checkout(hub, repo_id: str, revision: str, target: Path) -> Path:
    """The files of ``repo_id@revision`` on the fake Hub, written to ``target`` (downloading by revision through
    transformers is tests/test_hub.py's)."""
    for path, content in hub.files(repo_id, revision).items():
        (target / path).parent.mkdir(parents=True, exist_ok=True)
        (target / path).write_bytes(content)
    return target


def _tree_holds(root, needle: bytes) -> list:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


# ------------------------------------------------------------------------------- resolving the flags
def test_standard_flags_become_release_publishing_and_the_trainer_push_is_turned_off(tmp_path):
    release_args, training_args = _args(
        "--output_dir",
        tmp_path / "run",
        "--push_to_hub",
        "--hub_model_id",
        "acme/x",
        "--hub_private_repo",
        "true",
        "--hub_token",
        TOKEN,
        "--hub_strategy",
        "end",
        "--releases_hub_mode",
        "repos",
    )
    hub = resolve_release_hub(release_args, training_args)
    assert (hub.settings.repo_id, hub.settings.private, hub.settings.token, hub.settings.strategy, hub.mode) == (
        "acme/x",
        True,
        TOKEN,
        "end",
        "repos",
    )
    assert TOKEN not in repr(hub)
    assert training_args.push_to_hub is False and training_args.hub_token is None  # the Trainer never pushes
    # Without --hub_model_id the repository is named after output_dir, as the Trainer names it.
    release_args, training_args = _args("--output_dir", tmp_path / "my-run", "--push_to_hub", "--hub_token", TOKEN)
    assert resolve_release_hub(release_args, training_args).settings.repo_id == "my-run"
    release_args, training_args = _args("--output_dir", tmp_path / "run")
    assert resolve_release_hub(release_args, training_args) is None


@pytest.mark.parametrize(
    "argv,message",
    [
        (
            ["--hub_strategy", "checkpoint"],
            (
                "--hub_strategy checkpoint: this script publishes the curriculum releases, "
                "never checkpoints; use every_save"
            ),
        ),
        (
            ["--hub_revision", "dev"],
            ("--hub_revision dev: this script publishes the curriculum releases on their own branches and tags v0.k"),
        ),
        (
            ["--output_dir", "runs/bad name!"],
            (
                r"--push_to_hub: the name of --output_dir \('bad name!'\), which the "
                "repository is named after, is not a valid Hub repository id; give "
                "--hub_model_id ORG/NAME"
            ),
        ),
        (["--no_token"], "--push_to_hub: no Hugging Face token found; give --hub_token, set HF_TOKEN"),
    ],
    ids=["checkpoints", "revision", "underivable-name", "no-token"],
)
def test_impossible_requests_are_refused_naming_the_flags(tmp_path, argv, message):
    token = [] if argv == ["--no_token"] else ["--hub_token", TOKEN]
    argv = [] if argv == ["--no_token"] else argv
    output_dir = [] if "--output_dir" in argv else ["--output_dir", tmp_path / "run"]
    release_args, training_args = _args(*output_dir, "--push_to_hub", *token, *argv)
    with pytest.raises(ValueError, match=message):
        resolve_release_hub(release_args, training_args)
    assert training_args.push_to_hub is True  # nothing was changed before the refusal


def test_the_release_publisher_runs_on_the_main_process_only_and_honours_hub_strategy_end(tmp_path):
    from types import SimpleNamespace

    from bioptimus_hf.releases.publisher import start_release_publisher

    release_args, training_args = _args(
        "--output_dir",
        tmp_path / "run",
        "--push_to_hub",
        "--hub_model_id",
        "acme/x",
        "--hub_token",
        TOKEN,
        "--hub_strategy",
        "end",
    )
    hub = resolve_release_hub(release_args, training_args)
    publisher = start_release_publisher(hub, SimpleNamespace(process_index=0, output_dir=str(tmp_path / "run")))
    assert (publisher.args.hub_model_id, publisher.args.mode, publisher.at_end) == ("acme/x", "branches", True)
    assert publisher.args.run_dir == str(tmp_path / "run") and TOKEN not in repr(publisher)
    assert start_release_publisher(hub, SimpleNamespace(process_index=1)) is None
    assert start_release_publisher(None, SimpleNamespace(process_index=0)) is None


def test_hub_strategy_end_keeps_the_releases_for_the_end_of_training(hub, tmp_path):
    run = make_run(tmp_path / "run", n_versions=2)
    publisher = ReleasePublisher(
        PublishArguments(run_dir=str(run), hub_model_id="acme/x", hub_token=TOKEN), at_end=True
    )
    for version in ("v0.1", "v0.2"):
        publisher(run / "releases" / version)
    assert publisher._queue.unfinished_tasks == 0 and hub.requests == []  # nothing queued, nothing sent
    assert publisher.wait(timeout=60)  # what finish_run calls when training ends
    assert [r.version for r in publisher.published] == ["0.1", "0.2"] and set(hub.repos["acme/x"].tags) == {
        "v0.1",
        "v0.2",
    }


# ------------------------------------------------------------------------------- run_pretraining.py
@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(corpus_lines(400)) + "\n")
    return path


def _pretrain(monkeypatch, argv):
    monkeypatch.setattr(sys, "argv", ["run_pretraining.py", *map(str, argv)])
    run_pretraining.main()


def _pretraining_args(model_dir, corpus, out):
    # save_steps 4: the Trainer saves two checkpoints, which it would push to main if its push were on
    return [
        "--model_name_or_path",
        model_dir,
        "--train_file",
        corpus,
        "--output_dir",
        out,
        "--max_steps",
        8,
        "--per_device_train_batch_size",
        4,
        "--max_seq_length",
        32,
        "--report_to",
        "none",
        "--max_eval_samples",
        8,
        "--disable_tqdm",
        "true",
        "--save_steps",
        4,
        "--bulk_dropout",
        "false",
    ]


def test_run_pretraining_push_to_hub_publishes_releases_on_branches_and_tags_and_nothing_of_the_trainer(
    monkeypatch, tmp_path, tiny_model_dir, corpus, hub
):
    out = tmp_path / "out"
    _pretrain(
        monkeypatch,
        _pretraining_args(tiny_model_dir, corpus, out)
        + ["--push_to_hub", "--hub_model_id", "acme/x", "--hub_token", TOKEN],
    )
    repo = hub.repos["acme/x"]
    assert set(repo.tags) == set(VERSIONS) and set(repo.branches) == {"main", *VERSIONS}
    for version in VERSIONS:
        assert repo.branches[version] == repo.tags[version]
        files = hub.files("acme/x", version)
        assert files["model.safetensors"] == (out / "releases" / version / "model.safetensors").read_bytes()
        assert json.loads(files["bioptimus_phase.json"])["version"] == version[1:]
    # main holds the latest release and nothing of the Trainer's (no training_args.bin, no checkpoint).
    assert hub.files("acme/x", "main") == hub.files("acme/x", "v0.4")
    assert not any(
        "training_args.bin" in path or path.startswith("checkpoint-")
        for revision in ("main", *VERSIONS)
        for path in hub.files("acme/x", revision)
    )
    assert all(
        message.startswith(("Release BIOptimus v", "Point main at BIOptimus v"))
        for _, _, message in hub.commit_messages
    )
    assert (out / "checkpoint-8" / "training_args.bin").is_file()  # the Trainer did save, it did not push
    assert _tree_holds(out, TOKEN.encode()) == []  # nor was the token pickled into its training_args.bin


def test_run_pretraining_refuses_impossible_hub_flags_before_training(
    monkeypatch, tmp_path, tiny_model_dir, corpus, hub
):
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="^error: --hub_strategy checkpoint: this script publishes the curriculum"):
        _pretrain(
            monkeypatch,
            _pretraining_args(tiny_model_dir, corpus, out)
            + ["--push_to_hub", "--hub_model_id", "acme/x", "--hub_strategy", "checkpoint", "--hub_token", TOKEN],
        )
    with pytest.raises(SystemExit, match="^error: --push_to_hub: no Hugging Face token found"):
        _pretrain(monkeypatch, _pretraining_args(tiny_model_dir, corpus, out) + ["--push_to_hub"])
    assert not out.exists() and hub.requests == []  # nothing trained, nothing asked of the Hub


# ------------------------------------------------------------------------------- run_distillation.py
def test_run_distillation_push_to_hub_publishes_a_loadable_student(monkeypatch, tmp_path, tiny_model_dir, corpus, hub):
    out = tmp_path / "distil"
    monkeypatch.setattr(
        sys,
        "argv",
        [
            "run_distillation.py",
            *map(
                str,
                [
                    "--teacher_model_name_or_path",
                    tiny_model_dir,
                    "--student_layers",
                    0,
                    "--train_file",
                    corpus,
                    "--output_dir",
                    out,
                    "--max_steps",
                    2,
                    "--per_device_train_batch_size",
                    4,
                    "--max_seq_length",
                    32,
                    "--report_to",
                    "none",
                    "--disable_tqdm",
                    "true",
                    "--speed_batches",
                    0,
                    "--save_steps",
                    1,
                    "--push_to_hub",
                    "--hub_model_id",
                    "acme/tiny-student",
                    "--hub_token",
                    TOKEN,
                ],
            ),
        ],
    )
    run_distillation.main()
    repo = hub.repos["acme/tiny-student"]
    assert set(repo.tags) == {"v0.1"} and set(repo.branches) == {"main", "v0.1"}
    assert hub.files("acme/tiny-student", "main") == hub.files("acme/tiny-student", "v0.1")
    assert not any(
        "training_args.bin" in path or "checkpoint-" in path for path in hub.files("acme/tiny-student", "main")
    )
    local = _checkout(hub, "acme/tiny-student", "main", tmp_path / "download")
    student = AutoModelForMaskedLM.from_pretrained(local)
    assert type(student).__name__ == "BertForMaskedLM" and student.config.num_hidden_layers == 1
    saved = load_file(out / "student" / "model.safetensors")
    state = student.state_dict()
    assert all(torch.equal(state[key], saved[key]) for key in saved)
    assert 'from_pretrained("acme/tiny-student"' in (local / "README.md").read_text()  # the card names the repo
    assert _tree_holds(out, TOKEN.encode()) == []


# ------------------------------------------------------------------------------- run_ner.py
NER_QUICK = quick_ner_flags(seeds=[1, 2], max_steps=4, learning_rate=5e-3, model_name="tiny-bert")


def test_run_ner_push_to_hub_pushes_the_best_seed_with_every_seeds_results_in_its_card(tmp_path, hub):
    model = build_tiny_bert(str(tmp_path / "model"))
    data = write_dataset_dir(str(tmp_path / "data"))
    out = tmp_path / "ner"
    results = run_ner.main(
        [
            "--model_name_or_path",
            model,
            "--data_dir",
            data,
            "--output_dir",
            str(out),
            *NER_QUICK,
            "--push_to_hub",
            "--hub_model_id",
            "acme/tiny-ner",
            "--hub_token",
            TOKEN,
        ]
    )
    seed = best_seed(results)
    f1 = {run["seed"]: run["eval_f1"] for run in results["per_seed"]}
    assert f1[seed] == max(f1.values()) and (f1[1] == f1[2]) <= (seed == 1)  # ties go to the lowest seed
    other = 3 - seed
    local = _checkout(hub, "acme/tiny-ner", "main", tmp_path / "download")
    pushed = AutoModelForTokenClassification.from_pretrained(local)
    assert set(pushed.config.id2label.values()) == {"O", "B-Chemical", "I-Chemical", "B-Disease", "I-Disease"}
    state = pushed.state_dict()
    ours, theirs = (
        load_file(out / f"seed_{seed}" / "model.safetensors"),
        load_file(out / f"seed_{other}" / "model.safetensors"),
    )
    assert all(torch.equal(state[key], ours[key]) for key in ours)
    assert any(not torch.equal(state[key], theirs[key]) for key in theirs)
    # The card: every seed's row, the mean, and the model-index of the mean test scores.
    card = ModelCard.load(local / "README.md")
    for run in results["per_seed"]:
        assert f"| {run['seed']} | {100 * run['eval_f1']:.2f} |" in card.text
    assert "| mean ± std |" in card.text and f"the model of seed {seed}, the best devel F1" in card.text
    scores = {r.metric_type: r.metric_value for r in card.data.eval_results}
    assert scores["f1"] == round(results["test_f1"], 4) and card.data.eval_results[0].dataset_name == "data"
    assert card.data.pipeline_tag == "token-classification"
    files = hub.files("acme/tiny-ner", "main")
    assert not any(path.endswith(".conll") for path in files)  # the test sentences are not published
    assert all(TOKEN.encode() not in content for content in files.values())
    assert _tree_holds(out, TOKEN.encode()) == []


def test_run_ner_push_to_hub_of_a_bioul_model_keeps_the_local_card_and_its_tagging_warning(tmp_path, hub):
    """One card writer: the pushed README is the seed's own card (scheme, labels, the pipeline's warning) plus the
    run's results; base_model only when --base_model_hub_id gives it, the local folder said in prose otherwise."""
    model = build_tiny_bert(str(tmp_path / "tiny-bert"))
    data = write_dataset_dir(str(tmp_path / "data"))
    for given in (None, "acme/tiny-base"):
        out = tmp_path / ("given" if given else "local")
        results = run_ner.main(
            [
                *["--model_name_or_path", model, "--data_dir", data, "--output_dir", str(out)],
                *quick_ner_flags(seeds=[1, 2], max_steps=4, learning_rate=5e-3, tagging_scheme="BIOUL"),
                *(["--base_model_hub_id", given] if given else []),
                *[
                    "--push_to_hub",
                    "--hub_model_id",
                    f"acme/bioul-{'given' if given else 'local'}",
                    "--hub_token",
                    TOKEN,
                ],
            ]
        )
        seed = best_seed(results)
        pushed_text = hub.files(f"acme/bioul-{'given' if given else 'local'}", "main")["README.md"].decode()
        pushed = validate_card(pushed_text, required=("library_name", "pipeline_tag", "tags"))
        assert "**Do not use transformers' pipeline for this model:** " + pipeline_caveat("BIOUL") in pushed.text
        assert "**BIOUL** tagging scheme" in pushed.text and "`U-Chemical`" in pushed.text
        assert f"the model of seed {seed}, the best devel F1" in pushed.text and "| mean ± std |" in pushed.text
        assert f"bioptimus tag --model_name_or_path acme/bioul-{'given' if given else 'local'}" in pushed.text
        # everything the other seed's local card says, the pushed card says too: metadata and every line
        local = ModelCard((out / f"seed_{3 - seed}" / "README.md").read_text())
        assert local.data.to_dict().items() <= pushed.data.to_dict().items()
        assert [line for line in local.text.splitlines() if line not in pushed.text.splitlines()] == []
        if given:
            assert pushed.data.base_model == local.data.base_model == given
            assert f"Base model: `{given}`." in pushed.text
        else:
            assert "base_model" not in pushed.data.to_dict()
            assert f"Base model: started from {local_checkpoint_text('tiny-bert')}." in pushed.text


def test_the_pushed_seed_is_the_best_devel_f1_ties_going_to_the_lowest_seed():
    runs = [
        {"seed": 5, "eval_f1": 0.7, "test_f1": 0.9},
        {"seed": 2, "eval_f1": 0.7, "test_f1": 0.1},
        {"seed": 1, "eval_f1": 0.6, "test_f1": 0.99},
    ]
    assert best_seed({"per_seed": runs}) == 2  # the test F1 plays no part
    assert best_seed({"per_seed": runs[2:] + [{"seed": 9, "eval_f1": 0.65}]}) == 9


def test_run_ner_refuses_push_to_hub_without_saved_models_before_training(tmp_path, hub):
    model = build_tiny_bert(str(tmp_path / "model"))
    data = write_dataset_dir(str(tmp_path / "data"))
    with pytest.raises(
        SystemExit, match="^error: --push_to_hub needs the fine-tuned models on disk: drop --save_model false$"
    ):
        run_ner.main(
            [
                "--model_name_or_path",
                model,
                "--data_dir",
                data,
                "--output_dir",
                str(tmp_path / "ner"),
                *NER_QUICK,
                "--push_to_hub",
                "--hub_token",
                TOKEN,
                "--save_model",
                "false",
            ]
        )
    assert not (tmp_path / "ner").exists() and hub.requests == []


# ------------------------------------------------------------------------------- bioptimus publish
def test_bioptimus_publish_takes_the_trainer_flags_and_keeps_repo_id_as_an_alias(hub, tmp_path):
    run = make_run(tmp_path / "run", n_versions=2)
    bioptimus(
        "publish",
        [
            "--run_dir",
            str(run),
            "--hub_model_id",
            "acme/new",
            "--hub_private_repo",
            "--hub_token",
            TOKEN,
            "--endpoint",
            hub.url,
        ],
    )
    assert hub.repos["acme/new"].private and set(hub.repos["acme/new"].tags) == {"v0.1", "v0.2"}
    again = bioptimus(
        "publish", ["--run_dir", str(run), "--hub_model_id", "acme/new", "--hub_token", TOKEN, "--endpoint", hub.url]
    )
    assert [r.status for r in again] == ["unchanged", "unchanged"]  # the alias names the same repository
    # A failure's resume command repeats the flags, never the token.
    hub.fail("POST", r"/api/models/acme/other/commit/v0\.1$", status=500)
    with pytest.raises(SystemExit) as exit_info:
        bioptimus(
            "publish",
            ["--run_dir", str(run), "--hub_model_id", "acme/other", "--hub_token", TOKEN, "--endpoint", hub.url],
        )
    message = str(exit_info.value)
    assert f"bioptimus publish --run_dir {run} --hub_model_id acme/other --endpoint {hub.url}" in message
    assert TOKEN not in message


def test_ner_push_goes_to_hub_revision_and_creates_the_repository_private(hub, tmp_path):
    from bioptimus_hf.ner.hub_push import push_best_seed
    from bioptimus_hf.utils.hub_settings import HubSettings

    build_tiny_bert(str(tmp_path / "ner" / "seed_3"))
    results = {
        "model_name": "tiny-bert",
        "dataset": "data",
        "entity_types": ["Disease"],
        "tagging_scheme": "BIO",
        "per_seed": [{"seed": 3, "eval_f1": 0.5}],
        "eval_f1": 0.5,
    }
    pushed = push_best_seed(
        HubSettings("acme/rev", private=True, token=TOKEN, revision="dev"), tmp_path / "ner", results
    )
    assert (pushed.repo_id, pushed.seed) == ("acme/rev", 3) and hub.repos["acme/rev"].private
    assert "model.safetensors" in hub.files("acme/rev", "dev") and "model.safetensors" not in hub.files(
        "acme/rev", "main"
    )
    card = ModelCard(hub.files("acme/rev", "dev")["README.md"].decode())
    assert card.data.eval_results is None  # no test set: no model-index, nothing invented
    assert "| 3 | 50.00 | – | – | – |" in card.text
