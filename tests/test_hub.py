"""Publishing releases (bioptimus_hf.releases.hub) against the loopback fake Hub (bioptimus_hf.testing.fake_hub)."""

import json
import logging
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest
from huggingface_hub import ModelCard
from huggingface_hub.errors import HfHubHTTPError
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, AutoTokenizer

from bioptimus_hf.commands import run as bioptimus
from bioptimus_hf.releases.card import validate_card
from bioptimus_hf.releases.card_context import CardOptions
from bioptimus_hf.releases.hub import VersionConflictError, publish_releases, stage_release
from bioptimus_hf.releases.publish_config import PublishArguments
from bioptimus_hf.releases.publisher import ReleasePublisher
from bioptimus_hf.releases.record import find_releases
from bioptimus_hf.testing.fake_hub import FakeHub
from bioptimus_hf.testing.tiny_releases import make_run
from helpers import python_path


# huggingface_hub's own LFS upload passes a file object as `data=`, which httpx2 deprecates: not ours.
pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning")

TOKEN = "hf_FAKEtoken_do_not_leak_8431"
REPO = "acme/bioptimus"
VERSIONS = ["0.1", "0.2", "0.3", "0.4"]
REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return make_run(tmp_path_factory.mktemp("run"), n_versions=4)


@pytest.fixture(autouse=True)
def local_hub_mode(monkeypatch):
    # Tests run with HF_HUB_OFFLINE=1, which huggingface_hub applies to every endpoint, local ones included;
    # Xet storage cannot be faked here, so the LFS protocol is used (huggingface_hub's own fallback).
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_XET", True)


@pytest.fixture
def hub():
    with FakeHub(token=TOKEN, lifetime_s=300) as fake:  # safety net: stops by itself
        yield fake


def _args(run, **kwargs):
    return PublishArguments(run_dir=str(run), hub_model_id=kwargs.pop("repo_id", REPO), **kwargs)


def _publish(run, hub, **kwargs):
    return publish_releases(_args(run, hub_token=TOKEN, endpoint=hub.url, **kwargs))


def _expected_files(staged: Path) -> dict:
    return {
        p.relative_to(staged).as_posix(): p.read_bytes()
        for p in staged.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }  # the staging marker is not published


def test_find_releases_accepts_run_releases_or_one_release(run_dir):
    assert [p.name for p in find_releases(run_dir)] == ["v0.1", "v0.2", "v0.3", "v0.4"]
    assert find_releases(run_dir / "releases") == find_releases(run_dir)
    assert find_releases(run_dir / "releases" / "v0.2") == [run_dir / "releases" / "v0.2"]
    with pytest.raises(FileNotFoundError, match="no such run"):
        find_releases(run_dir / "missing")


def test_staged_versions_load_with_from_pretrained_and_cards_validate(run_dir, tmp_path):
    for version in VERSIONS:
        release = run_dir / "releases" / f"v{version}"
        staged = stage_release(release, tmp_path / version, CardOptions(repo_id=REPO))
        model = AutoModelForMaskedLM.from_pretrained(staged)
        tokenizer = AutoTokenizer.from_pretrained(staged)
        reference = load_file(release / "model.safetensors")
        state = model.state_dict()
        assert all((state[k] == reference[k]).all() for k in reference)
        assert tokenizer.convert_tokens_to_ids("protein") == 6
        card = validate_card((staged / "README.md").read_text())
        assert f'revision="v{version}"' in card.text and f"# BIOptimus v{version} — {REPO}" in card.text
        assert (staged / "model.safetensors").stat().st_ino == (release / "model.safetensors").stat().st_ino


def test_publish_branches_tags_main_then_idempotent(run_dir, hub, tmp_path):
    reports = _publish(run_dir, hub, staging_dir=str(tmp_path / "staging"))
    assert [r.status for r in reports] == ["published"] * 4
    repo = hub.repos[REPO]
    assert not repo.private
    assert set(repo.tags) == {f"v{v}" for v in VERSIONS}
    assert set(repo.branches) == {"main"} | {f"v{v}" for v in VERSIONS}
    for version in VERSIONS:
        tag = f"v{version}"
        assert repo.tags[tag] == repo.branches[tag]
        expected = _expected_files(tmp_path / "staging" / tag)
        remote = hub.files(REPO, tag)
        assert remote.pop(".gitattributes")
        assert remote == expected  # byte-identical, LFS files included
        assert json.loads(remote["bioptimus_phase.json"])["version"] == version
        assert ModelCard(remote["README.md"].decode()).data.base_model == "bert-base-uncased"
    main_files = hub.files(REPO, "main")
    assert main_files == hub.files(REPO, "v0.4")  # main holds the latest version
    assert (REPO, "v0.3", "Release BIOptimus v0.3") in hub.commit_messages
    # tokenizer/config files are identical across versions: only v0.1 and main commit them
    assert reports[1].uploaded == ["README.md", "bioptimus_phase.json", "model.safetensors"]
    assert len(hub.lfs_uploads) == 4  # one model per version; main reuses the stored blob

    before = len(hub.requests)
    again = _publish(run_dir, hub)
    assert [r.status for r in again] == ["unchanged"] * 4
    new = hub.requests[before:]
    assert {m for m, _, _ in new} == {"GET"}  # no repo creation, commit, upload, branch or tag: only reads
    assert len(hub.lfs_uploads) == 4


def test_resume_after_injected_failures_uploads_only_what_is_missing(run_dir, hub):
    hub.fail("POST", r"/api/models/acme/bioptimus/commit/v0\.3$", status=500)
    with pytest.raises(HfHubHTTPError):
        _publish(run_dir, hub)
    repo = hub.repos[REPO]
    assert set(repo.tags) == {"v0.1", "v0.2"} and "v0.3" in repo.branches
    v03_model = load_model_sha(run_dir, "0.3")
    assert v03_model in hub.lfs_store  # its blob went up before the commit failed

    hub.fail(
        "POST",
        r"/api/models/acme/bioptimus/tag/[0-9a-f]{40}$",
        status=500,  # tags name the commit
        body_pattern=r'"tag": ?"v0\.4"',
    )
    uploads_before = list(hub.lfs_uploads)
    with pytest.raises(HfHubHTTPError):
        _publish(run_dir, hub)
    assert hub.lfs_uploads[len(uploads_before) :] == [load_model_sha(run_dir, "0.4")]  # v0.3 not re-uploaded
    assert "v0.3" in repo.tags and "v0.4" not in repo.tags
    v04_head = repo.branches["v0.4"]

    reports = _publish(run_dir, hub)
    assert [r.status for r in reports] == ["unchanged", "unchanged", "unchanged", "published"]
    assert reports[3].uploaded == [] and reports[3].commit == v04_head  # only the tag was missing
    assert repo.tags["v0.4"] == repo.branches["v0.4"] == v04_head
    assert hub.files(REPO, "main") == hub.files(REPO, "v0.4")
    assert len(hub.lfs_uploads) == 4


def load_model_sha(run_dir, version):
    import hashlib

    return hashlib.sha256((run_dir / "releases" / f"v{version}" / "model.safetensors").read_bytes()).hexdigest()


def test_changed_version_is_refused_unless_forced(run_dir, hub, tmp_path):
    _publish(run_dir, hub, versions=["0.1", "0.2"])
    other = make_run(tmp_path / "other", n_versions=1, seed=7)  # same version 0.1, different weights
    before = len(hub.requests)
    with pytest.raises(VersionConflictError, match=r"acme/bioptimus@v0.1 .*model\.safetensors.*--force"):
        _publish(other, hub)
    assert all(m == "GET" for m, _, _ in hub.requests[before:])  # refused before writing anything
    old_tag = hub.repos[REPO].tags["v0.1"]

    reports = _publish(other, hub, force=True, staging_dir=str(tmp_path / "staging"))
    assert reports[0].status == "republished" and reports[0].uploaded == ["model.safetensors"]
    repo = hub.repos[REPO]
    assert repo.tags["v0.1"] != old_tag and repo.tags["v0.1"] == repo.branches["v0.1"]
    remote = hub.files(REPO, "v0.1")
    assert remote["model.safetensors"] == (other / "releases" / "v0.1" / "model.safetensors").read_bytes()
    # main keeps the highest version (v0.2), which this call did not publish
    assert hub.files(REPO, "main")["bioptimus_phase.json"] == hub.files(REPO, "v0.2")["bioptimus_phase.json"]


def test_one_private_repository_per_version(run_dir, hub):
    reports = _publish(
        run_dir,
        hub,
        mode="repos",
        hub_private_repo=True,
        versions=["v0.2", "0.3"],
        commit_message="BIOptimus {version} release",
    )
    assert [(r.repo_id, r.status) for r in reports] == [
        ("acme/bioptimus-v0.2", "published"),
        ("acme/bioptimus-v0.3", "published"),
    ]
    assert set(hub.repos) == {"acme/bioptimus-v0.2", "acme/bioptimus-v0.3"}
    for version in ("0.2", "0.3"):
        repo = hub.repos[f"acme/bioptimus-v{version}"]
        assert repo.private and set(repo.branches) == {"main"} and repo.tags == {f"v{version}": repo.branches["main"]}
        card = hub.files(repo.repo_id, "main")["README.md"].decode()
        assert f'from_pretrained("acme/bioptimus-v{version}", revision="v{version}")' in card
    assert ("acme/bioptimus-v0.3", "main", "BIOptimus 0.3 release") in hub.commit_messages
    # private repositories are invisible without the token
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=hub.url, token=False).list_repo_refs("acme/bioptimus-v0.2")
    assert HfApi(endpoint=hub.url, token=TOKEN).list_repo_refs("acme/bioptimus-v0.2").tags[0].name == "v0.2"


def test_dry_run_stages_and_prints_without_network(run_dir, tmp_path, monkeypatch, capsys):
    def no_network(*args, **kwargs):
        raise AssertionError("dry run opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    ner = tmp_path / "ner.json"
    ner.write_text(json.dumps({"dataset": "BC5CDR-chem", "test_f1": 0.93, "per_seed": [1, 2]}))
    reports = bioptimus(
        "publish",
        [
            "--run_dir",
            str(run_dir),
            "--hub_model_id",
            "bioptimus",
            "--organization",
            "acme",
            "--dry_run",
            "--versions",
            "0.3",
            "--staging_dir",
            str(tmp_path / "staged"),
            "--ner_results",
            f"0.3={ner}",
            "--endpoint",
            "http://127.0.0.1:9",
            "--datasets",
            "acme/pubmed-2023",
        ],
    )
    out = capsys.readouterr().out
    assert [r.status for r in reports] == ["planned"]
    assert "DRY RUN (no network)" in out and "create_tag v0.3 at acme/bioptimus@v0.3" in out
    for name in ("model.safetensors", "config.json", "tokenizer.json", "README.md", "bioptimus_phase.json"):
        assert f"upload {name} " in out
    assert "(LFS)" in out and "v0.1" not in out and "v0.2" not in out  # only the selected version
    staged_card = (tmp_path / "staged" / "v0.3" / "README.md").read_text()
    assert "| BC5CDR-chem | 93.00 |" in staged_card
    assert ModelCard(staged_card).data.datasets == ["acme/pubmed-2023"]


def test_cli_errors_name_the_flag(run_dir):
    with pytest.raises(SystemExit, match="--ner_results '0.3'"):
        bioptimus(
            "publish", ["--run_dir", str(run_dir), "--hub_model_id", "acme/x", "--dry_run", "--ner_results", "0.3"]
        )
    with pytest.raises(SystemExit, match="--versions \\['0.9'\\]"):
        bioptimus("publish", ["--run_dir", str(run_dir), "--hub_model_id", "acme/x", "--dry_run", "--versions", "0.9"])
    with pytest.raises(SystemExit, match="no namespace"):
        bioptimus("publish", ["--run_dir", str(run_dir), "--hub_model_id", "x", "--dry_run"])
    with pytest.raises(SystemExit, match="contradicts --organization"):
        bioptimus(
            "publish", ["--run_dir", str(run_dir), "--hub_model_id", "acme/x", "--organization", "other", "--dry_run"]
        )


def test_missing_token_is_a_clear_error(run_dir, monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    with pytest.raises(RuntimeError, match="No Hugging Face token found: set HF_TOKEN"):
        publish_releases(_args(run_dir, endpoint="http://127.0.0.1:9"))


def test_background_publisher_publishes_in_order_and_never_raises(run_dir, hub, caplog):
    caplog.set_level(logging.DEBUG)
    publisher = ReleasePublisher(_args(run_dir, hub_token=TOKEN, endpoint=hub.url))
    assert TOKEN not in repr(publisher)
    hub.gate = threading.Event()  # the Hub answers nothing until the gate opens
    for version in ("0.1", "0.2"):
        assert publisher(run_dir / "releases" / f"v{version}") is None
    # both calls returned while the Hub was still holding the first request
    assert publisher.published == [] and publisher.failed == [] and REPO not in hub.repos
    assert not publisher.wait(timeout=0.2)
    hub.gate.set()
    assert publisher.wait(timeout=60)
    assert [r.version for r in publisher.published] == ["0.1", "0.2"] and publisher.failed == []
    assert set(hub.repos[REPO].tags) == {"v0.1", "v0.2"}
    assert hub.files(REPO, "main") == hub.files(REPO, "v0.2")

    # Unreachable Hub (closed port) and rejected token: warnings with the command, nothing raised.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    unreachable = ReleasePublisher(_args(run_dir, hub_token=TOKEN, endpoint=f"http://127.0.0.1:{closed_port}"))
    rejected = ReleasePublisher(_args(run_dir, hub_token="hf_wrong", endpoint=hub.url))
    unreachable(run_dir / "releases" / "v0.3")
    rejected(run_dir / "releases" / "v0.3")
    assert unreachable.wait(timeout=60) and rejected.wait(timeout=60)
    expected = f"bioptimus publish --run_dir {run_dir / 'releases' / 'v0.3'} --hub_model_id {REPO} --endpoint "
    assert [cmd for _, cmd in unreachable.failed] == [expected + f"http://127.0.0.1:{closed_port}"]
    assert [cmd for _, cmd in rejected.failed] == [expected + hub.url]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "bioptimus_hf" in r.name]
    assert len([w for w in warnings if expected in w and "kept on disk" in w]) == 2
    assert "v0.3" not in hub.repos[REPO].tags
    assert all(TOKEN not in r.getMessage() for r in caplog.records)


def _grep_tree(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_cli_with_hf_endpoint_and_env_token_then_load_by_revision(run_dir, hub, tmp_path):
    """End to end in fresh processes: HF_ENDPOINT/HF_TOKEN read by huggingface_hub at import, as for users."""
    home = tmp_path / "hf_home"
    env = dict(
        os.environ,
        HF_ENDPOINT=hub.url,
        HF_TOKEN=TOKEN,
        HF_HOME=str(home),
        HF_HUB_OFFLINE="0",
        HF_HUB_DISABLE_XET="1",
        PYTHONPATH=python_path(REPO_ROOT),
    )
    env.pop("TRANSFORMERS_OFFLINE", None)  # the suite runs offline; these processes talk to the local fake Hub
    staging = tmp_path / "staging"
    publish = subprocess.run(
        [
            sys.executable,
            "-m",
            "bioptimus_hf.commands",
            "publish",
            "--run_dir",
            str(run_dir),
            "--hub_model_id",
            "bioptimus",
            "--organization",
            "acme",
            "--staging_dir",
            str(staging),
        ],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert publish.returncode == 0, publish.stderr[-2000:]
    assert "v0.4: published -> acme/bioptimus" in publish.stdout
    assert set(hub.repos[REPO].tags) == {f"v{v}" for v in VERSIONS}

    loader = (
        "import sys, torch\n"
        "from transformers import AutoModelForMaskedLM, AutoTokenizer\n"
        "from safetensors.torch import load_file\n"
        "for v in sys.argv[2:]:\n"
        "    model = AutoModelForMaskedLM.from_pretrained('acme/bioptimus', revision='v' + v)\n"
        "    tok = AutoTokenizer.from_pretrained('acme/bioptimus', revision='v' + v)\n"
        "    ref = load_file(f'{sys.argv[1]}/releases/v{v}/model.safetensors')\n"
        "    state = model.state_dict()\n"
        "    same = all(torch.equal(state[k], ref[k]) for k in ref)\n"
        "    print(v, type(model).__name__, tok.convert_tokens_to_ids('protein'), same)\n"
    )
    load = subprocess.run(
        [sys.executable, "-c", loader, str(run_dir), *VERSIONS],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert load.returncode == 0, load.stderr[-2000:]
    assert load.stdout.split("\n")[:4] == [f"{v} BertForMaskedLM 6 True" for v in VERSIONS]
    # transformers resolves the tag to its commit, then downloads at that commit
    v03_commit = hub.repos[REPO].tags["v0.3"]
    assert hub.count("GET", rf"^/acme/bioptimus/resolve/{v03_commit}/model\.safetensors$") == 1

    # The token never appears in what was written or printed, nor on the Hub.
    needle = TOKEN.encode()
    assert needle not in (publish.stdout + publish.stderr + load.stdout + load.stderr).encode()
    assert _grep_tree(run_dir, needle) == [] and _grep_tree(staging, needle) == []
    leaked_files = list(_grep_tree(home, needle))
    assert leaked_files == []  # nothing cached or logged under HF_HOME either
    for version in VERSIONS:
        assert all(needle not in content for content in hub.files(REPO, f"v{version}").values())
    assert all(TOKEN not in message for _, _, message in hub.commit_messages)
    # and every write call carried it as a bearer token only (the fake answers 401 otherwise)
    assert all(status != 401 for _, _, status in hub.requests)


def test_cards_pass_modelcard_validate_through_the_hub_endpoint(run_dir, hub, tmp_path, monkeypatch):
    """`ModelCard.validate` posts to {ENDPOINT}/api/validate-yaml; here the fake Hub answers (see docs/hub.md)."""
    monkeypatch.setattr(hf_constants, "ENDPOINT", hub.url)
    staged = stage_release(
        run_dir / "releases" / "v0.4",
        tmp_path / "v0.4",
        CardOptions(repo_id=REPO, ner_results=[{"dataset_name": "BC5CDR-chem", "test_f1": 0.93}]),
    )
    ModelCard.load(staged / "README.md").validate()
    broken = (staged / "README.md").read_text().replace("  - task:\n", "  - tusk:\n", 1)
    from huggingface_hub import HfApi

    with pytest.raises(ValueError, match="Invalid metadata in README.md"):  # what create_commit runs first
        HfApi(endpoint=hub.url, token=TOKEN)._validate_yaml(broken)
    assert hub.count("POST", "^/api/validate-yaml$") == 2


def test_cli_reads_a_yaml_config_and_exits_cleanly_on_errors(run_dir, tmp_path, capsys):
    config = tmp_path / "publish.yaml"
    config.write_text(
        f"run_dir: {run_dir}\nhub_model_id: acme/bioptimus\nmode: repos\nversions: ['0.4']\n"
        f"dry_run: true\nstaging_dir: {tmp_path / 'staged'}\n"
    )
    (report,) = bioptimus("publish", [str(config)])
    assert (report.repo_id, report.branch, report.status) == ("acme/bioptimus-v0.4", "main", "planned")
    with pytest.raises(SystemExit, match="error: --versions \\['0.7'\\] not found"):
        bioptimus("publish", ["--run_dir", str(run_dir), "--hub_model_id", "acme/x", "--dry_run", "--versions", "0.7"])
    with pytest.raises(SystemExit, match=r"error: --hub_model_id 'acme/bad name!!' is not a valid Hub repository id"):
        bioptimus(
            "publish", ["--run_dir", str(run_dir), "--hub_model_id", "acme/bad name!!", "--dry_run"]
        )  # a dry run checks it too


def test_cli_turns_a_hub_failure_into_a_message_with_the_resume_command(run_dir, hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.fail("POST", r"/api/models/acme/bioptimus/commit/v0\.2$", status=500)
    argv = ["--run_dir", str(run_dir), "--hub_model_id", REPO, "--endpoint", hub.url]
    with pytest.raises(SystemExit) as exit_info:
        bioptimus("publish", argv)
    message = str(exit_info.value)
    assert "the Hub request failed: Server error '500" in message and "Traceback" not in message
    assert f"bioptimus publish --run_dir {run_dir} --hub_model_id {REPO} --endpoint {hub.url}" in message
    bioptimus("publish", argv)  # the command it gives finishes the job
    assert set(hub.repos[REPO].tags) == {"v0.1", "v0.2", "v0.3", "v0.4"}


class _PausingApi:
    """An HfApi whose create_tag (or create_commit) first runs `before(...)`: a chosen interleaving of two
    publishers, reproducible without timing luck."""

    def __init__(self, hub, before_tag=None, before_commit=None):
        from huggingface_hub import HfApi

        self._api = HfApi(endpoint=hub.url, token=TOKEN)
        self._before_tag, self._before_commit = before_tag, before_commit

    def __getattr__(self, name):
        return getattr(self._api, name)

    def create_tag(self, *args, **kwargs):
        if self._before_tag is not None:
            self._before_tag()
        return self._api.create_tag(*args, **kwargs)

    def create_commit(self, *args, **kwargs):
        if self._before_commit is not None:
            before, self._before_commit = self._before_commit, None
            before()
        return self._api.create_commit(*args, **kwargs)


def test_racing_publishers_never_tag_the_other_runs_weights(run_dir, hub, tmp_path):
    """P1 commits, P2 commits on top, P1 tags, P2 tags: the tag must hold P1's files, P2 must fail loudly."""
    import threading

    other = make_run(tmp_path / "other", n_versions=1, seed=7)  # the same version 0.1, other weights
    p2_at_tag, p1_tagged = threading.Event(), threading.Event()
    outcome = {}

    def p2_waits_for_p1():
        p2_at_tag.set()
        p1_tagged.wait(60)

    def run_p2():
        try:
            outcome["p2"] = publish_releases(
                _args(other, staging_dir=str(tmp_path / "stage2")), api=_PausingApi(hub, before_tag=p2_waits_for_p1)
            )
        except Exception as error:  # noqa: BLE001 - what P2 reports is the point of the test
            outcome["p2"] = error

    def p1_lets_p2_commit_first():
        if "thread" not in outcome:
            outcome["thread"] = threading.Thread(target=run_p2)
            outcome["thread"].start()
            assert p2_at_tag.wait(60)

    p1 = publish_releases(
        _args(run_dir, versions=["0.1"], staging_dir=str(tmp_path / "stage1")),
        api=_PausingApi(hub, before_tag=p1_lets_p2_commit_first),
    )
    p1_tagged.set()
    outcome["thread"].join(60)
    assert p1[0].status == "published"
    assert isinstance(outcome["p2"], VersionConflictError), outcome["p2"]
    assert "was created by another publisher" in str(outcome["p2"])
    repo = hub.repos[REPO]
    assert repo.tags["v0.1"] == p1[0].commit  # the commit P1 made, not the branch head P2 had moved
    tagged = hub.files(REPO, repo.tags["v0.1"])
    assert tagged["model.safetensors"] == (run_dir / "releases" / "v0.1" / "model.safetensors").read_bytes()
    assert repo.branches["v0.1"] == repo.tags["v0.1"]  # the loser put the branch back: "v0.1" is unambiguous


def test_a_branch_moved_between_diff_and_commit_is_refused(run_dir, hub, tmp_path):
    """parent_commit: a commit that lands between our diff and our commit makes ours fail, nothing mixed."""
    from huggingface_hub import CommitOperationAdd, HfApi

    _publish(run_dir, hub, versions=["0.1"])
    intruder = HfApi(endpoint=hub.url, token=TOKEN)

    def someone_else_commits():
        intruder.create_branch(REPO, branch="v0.2", revision="v0.1", exist_ok=True)
        intruder.create_commit(
            REPO, [CommitOperationAdd("notes.txt", b"not ours")], commit_message="other", revision="v0.2"
        )

    api = _PausingApi(hub, before_commit=someone_else_commits)
    with pytest.raises(
        VersionConflictError, match=r"acme/bioptimus@v0.2 changed while this release was being published"
    ):
        publish_releases(_args(run_dir, versions=["0.2"], staging_dir=str(tmp_path / "stage")), api=api)
    assert "v0.2" not in hub.repos[REPO].tags
    assert set(hub.files(REPO, "v0.2")) == set(hub.files(REPO, "v0.1")) | {"notes.txt"}  # ours not committed
    reports = _publish(run_dir, hub, versions=["0.2"], force=True)  # a re-run publishes on the new state
    assert reports[0].status == "published" and "notes.txt" not in hub.files(REPO, "v0.2")


def test_a_dry_run_leaves_no_staging_folder_behind(run_dir, tmp_path, monkeypatch, capsys):
    """Without --staging_dir the staged copy (hundreds of MB for a real release) is removed at exit, also when
    the dry run fails half-way."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    reports = publish_releases(_args(run_dir, versions=["0.2", "0.3"], dry_run=True))
    assert [r.status for r in reports] == ["planned", "planned"]
    assert "upload model.safetensors " in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr("bioptimus_hf.releases.hub._print_dry_run", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        publish_releases(_args(run_dir, versions=["0.3"], dry_run=True))
    assert list(tmp_path.iterdir()) == []


def test_staging_never_deletes_what_it_did_not_create(run_dir, tmp_path):
    """--staging_dir pointing at the releases themselves (or any directory of the user's) is refused."""
    releases = run_dir / "releases"
    before = {p: p.read_bytes() for p in releases.rglob("*") if p.is_file()}
    with pytest.raises(ValueError, match="refusing to stage into"):
        publish_releases(_args(run_dir, versions=["0.3"], dry_run=True, staging_dir=str(releases)))
    precious = tmp_path / "mine" / "v0.3"
    precious.mkdir(parents=True)
    (precious / "thesis.tex").write_text("keep")
    with pytest.raises(ValueError, match=r"mine/v0.3 exists and was not created by bioptimus publish"):
        publish_releases(_args(run_dir, versions=["0.3"], dry_run=True, staging_dir=str(tmp_path / "mine")))
    assert (precious / "thesis.tex").read_text() == "keep"
    assert {p: p.read_bytes() for p in releases.rglob("*") if p.is_file()} == before
    # Its own earlier staging is replaced without complaint.
    publish_releases(_args(run_dir, versions=["0.3"], dry_run=True, staging_dir=str(tmp_path / "ours")))
    publish_releases(_args(run_dir, versions=["0.3"], dry_run=True, staging_dir=str(tmp_path / "ours")))


def test_an_edited_card_is_replaced_with_one_line_or_kept_on_request(hub, tmp_path, caplog):
    """A release card edited by hand differs from what its record renders: publishing names it when it replaces
    it, and --keep_edited_card true publishes it as it is; an unedited card is re-rendered silently."""
    run = make_run(tmp_path / "run", n_versions=2)
    edited = run / "releases" / "v0.2" / "README.md"
    edited.write_text(edited.read_text() + "\n## Notes by hand\n\nTrained on the lab's corpus.\n")
    caplog.set_level(logging.WARNING)
    _publish(run, hub)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert lines == [
        f"{edited}: edited by hand (differs from what its record renders); replaced by the re-rendered card "
        "(--keep_edited_card true keeps it)"
    ]
    published = hub.files(REPO, "v0.2")["README.md"].decode()
    assert "Notes by hand" not in published and f"# BIOptimus v0.2 — {REPO}" in published

    caplog.clear()
    reports = _publish(run, hub, keep_edited_card=True, force=True)
    assert [r.status for r in reports] == ["unchanged", "republished"] and reports[1].uploaded == ["README.md"]
    assert hub.files(REPO, "v0.2")["README.md"] == edited.read_bytes() == hub.files(REPO, "main")["README.md"]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"{edited}: edited by hand; published as it is (--keep_edited_card), without the repository id rendered "
        "into it"
    ]


def test_keep_edited_card_flag_reaches_the_staged_card(tmp_path, capsys):
    run = make_run(tmp_path / "run", n_versions=1)
    card = run / "releases" / "v0.1" / "README.md"
    card.write_text("---\nlicense: apache-2.0\n---\n# Our own card\n")
    argv = ["--run_dir", str(run), "--hub_model_id", REPO, "--dry_run", "--staging_dir", str(tmp_path / "s")]
    bioptimus("publish", argv + ["--keep_edited_card", "true"])
    assert (tmp_path / "s" / "v0.1" / "README.md").read_bytes() == card.read_bytes()
    assert f"{card}: edited by hand; published as it is" in capsys.readouterr().out
    bioptimus("publish", argv)
    assert "# Our own card" not in (tmp_path / "s" / "v0.1" / "README.md").read_text()
    assert f"{card}: edited by hand (differs from what its record renders); replaced" in capsys.readouterr().out
