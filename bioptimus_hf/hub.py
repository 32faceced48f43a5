"""Publish the curriculum releases of a run (``<output_dir>/releases/v0.k/``) to the Hugging Face Hub.

Two layouts:

* ``mode="branches"`` (default): one repository; version ``0.k`` is committed to its own branch ``v0.k`` and
  tagged ``v0.k``; ``main`` holds the latest published version. Load with
  ``AutoModelForMaskedLM.from_pretrained("org/name", revision="v0.3")``.
* ``mode="repos"``: one repository per version, ``org/name-v0.k``, with the release on ``main`` and the
  tag ``v0.k``.

Publishing is idempotent and resumable. Before anything is written, each version is compared file by file
(git blob sha1 for regular files, sha256 for LFS files) with what its tag holds on the Hub: a version whose
tag already holds the same files is skipped; a version whose tag holds different files is refused unless
``force=True`` (then its branch gets a new commit and the tag is moved). Only files that differ from the
target branch are committed, and LFS blobs the Hub already stores are not uploaded again, so re-running after
a failure uploads only what is missing. ``dry_run=True`` stages the files and prints the exact operations
without any network access.

All Hub access goes through ``huggingface_hub.HfApi``. The token comes from ``huggingface_hub``'s usual
places (``token=`` argument, ``HF_TOKEN``, the token file written by ``hf auth login``; see
``huggingface_hub.get_token``); it is only handed to ``HfApi`` and never logged, rendered or written.

CLI: ``python -m bioptimus_hf.hub --run_dir runs/bioptimus --repo_id acme/bioptimus [--dry_run]`` (see
``PublishArguments``, or pass a single .json/.yaml file of those arguments).
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import re
import shlex
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .model_card import PHASE_FILE, read_phase_info, render_release_card, version_repo_id, version_tag

logger = logging.getLogger(__name__)

MODES = ("branches", "repos")
DEFAULT_COMMIT_MESSAGE = "Release BIOptimus v{version}"
MAIN_COMMIT_MESSAGE = "Point main at BIOptimus v{version} (latest release)"
MAIN_BRANCH = "main"
# Files the Hub creates itself (LFS attributes of the initial commit): never compared nor deleted.
HUB_MANAGED_FILES = frozenset({".gitattributes"})
# Mirrors the Hub's default .gitattributes and size rule; only used to describe the plan in dry runs (the
# real upload mode is decided by the Hub in the preupload call).
_LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".ckpt")
_LFS_SIZE = 10 * 1024 * 1024


class VersionConflictError(RuntimeError):
    """A version is already published on the Hub with different content (publish with ``force`` to replace)."""


# --------------------------------------------------------------------------------------------- local side
def _version_key(version: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\-]", version))


def _normalise_version(version: str) -> str:
    return version[1:] if version.lower().startswith("v") else version


def find_releases(path: str | os.PathLike) -> list[Path]:
    """Release directories under ``path`` in version order.

    ``path`` may be a run's output_dir (holding ``releases/``), the ``releases/`` folder itself, or a single
    release directory (holding ``bioptimus_phase.json``).
    """
    path = Path(path)
    if (path / PHASE_FILE).is_file():
        return [path]
    releases_dir = path / "releases" if (path / "releases").is_dir() else path
    if not releases_dir.is_dir():
        raise FileNotFoundError(f"{path}: no such run, releases or release directory")
    found = [d for d in releases_dir.iterdir() if (d / PHASE_FILE).is_file()]
    if not found:
        raise FileNotFoundError(f"{releases_dir}: no release directories (v0.k/ with {PHASE_FILE}) found")
    return sorted(found, key=lambda d: _version_key(read_phase_info(d)["version"]))


@dataclass(frozen=True)
class LocalFile:
    """A staged file with the two hashes the Hub reports (git blob sha1; sha256 of the content for LFS)."""

    path_in_repo: str
    local_path: Path
    size: int
    git_oid: str
    sha256: str

    @classmethod
    def hash(cls, local_path: Path, path_in_repo: str) -> "LocalFile":
        size = local_path.stat().st_size
        git_sha1 = hashlib.sha1(b"blob %d\0" % size)
        sha256 = hashlib.sha256()
        with open(local_path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                git_sha1.update(block)
                sha256.update(block)
        return cls(path_in_repo, local_path, size, git_sha1.hexdigest(), sha256.hexdigest())

    def matches(self, remote: Any) -> bool:
        """Same content as a ``huggingface_hub.hf_api.RepoFile``?"""
        if getattr(remote, "lfs", None):
            return remote.lfs["sha256"] == self.sha256 and remote.lfs["size"] == self.size
        return remote.blob_id == self.git_oid

    @property
    def likely_lfs(self) -> bool:
        return self.path_in_repo.endswith(_LFS_SUFFIXES) or self.size > _LFS_SIZE


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # other filesystem, or links not allowed
        shutil.copy2(source, target)


def stage_release(
    release_dir: str | os.PathLike,
    staging_dir: str | os.PathLike,
    *,
    repo_id: str | None = None,
    per_version_repos: bool = False,
    ner_results: Any = None,
    license: str = "apache-2.0",
    datasets: Sequence[str] | None = None,
    rerender_card: bool = True,
) -> Path:
    """Build the exact tree of files one version's Hub revision will hold, in ``staging_dir``.

    Release files are hard-linked (copied across filesystems); hidden files are left out. README.md is
    re-rendered with the repository id (so the card's loading snippets are right) and the NER results,
    unless ``rerender_card=False`` and the release has one.
    """
    release = Path(release_dir)
    staged = Path(staging_dir)
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    for source in sorted(release.rglob("*")):
        relative = source.relative_to(release)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts) or not source.is_file():
            continue
        if relative.as_posix() == "README.md" and (rerender_card or ner_results is not None):
            continue
        target = staged / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, target)
    if not (staged / "README.md").exists():
        card = render_release_card(release, ner_results, repo_id=repo_id, per_version_repos=per_version_repos,
                                   license=license, datasets=datasets)
        (staged / "README.md").write_text(card, encoding="utf-8")
    return staged


def local_index(staged_dir: Path) -> dict[str, LocalFile]:
    return {
        p.relative_to(staged_dir).as_posix(): LocalFile.hash(p, p.relative_to(staged_dir).as_posix())
        for p in sorted(staged_dir.rglob("*"))
        if p.is_file()
    }


# --------------------------------------------------------------------------------------------- remote side
def remote_index(api: Any, repo_id: str, revision: str) -> dict[str, Any]:
    """``{path: RepoFile}`` of every file at ``revision`` (one recursive tree listing)."""
    from huggingface_hub.hf_api import RepoFile

    return {
        entry.path: entry
        for entry in api.list_repo_tree(repo_id, revision=revision, recursive=True)
        if isinstance(entry, RepoFile)
    }


def diff_files(local: Mapping[str, LocalFile], remote: Mapping[str, Any]) -> tuple[list[LocalFile], list[str]]:
    """Files to upload (missing or different remotely) and remote paths to delete (not in the release)."""
    uploads = [f for path, f in local.items() if path not in remote or not f.matches(remote[path])]
    deletions = [path for path in remote if path not in local and path not in HUB_MANAGED_FILES]
    return uploads, deletions


@dataclass
class VersionReport:
    """What publishing did (or, in a dry run, would do) for one version."""

    version: str
    repo_id: str
    branch: str
    tag: str
    status: str = "pending"  # planned (dry run) | published | unchanged | republished (forced)
    uploaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    commit: str | None = None
    staged_dir: Path | None = None


def _resolve_repo_id(repo_id: str, organization: str | None, api: Any | None) -> str:
    if "/" in repo_id:
        namespace = repo_id.split("/", 1)[0]
        if organization and organization != namespace:
            raise ValueError(f"--repo_id {repo_id!r} already names namespace {namespace!r}, "
                             f"which contradicts --organization {organization!r}")
        return repo_id
    if organization:
        return f"{organization}/{repo_id}"
    if api is None:
        raise ValueError(f"--repo_id {repo_id!r} has no namespace: give 'org/{repo_id}' or --organization "
                         "(a dry run cannot ask the Hub for your user name)")
    return f"{api.whoami()['name']}/{repo_id}"


# --------------------------------------------------------------------------------------------- publishing
def publish_releases(
    path: str | os.PathLike,
    repo_id: str,
    *,
    versions: Sequence[str] | None = None,
    mode: str = "branches",
    private: bool = False,
    organization: str | None = None,
    commit_message: str = DEFAULT_COMMIT_MESSAGE,
    force: bool = False,
    dry_run: bool = False,
    staging_dir: str | os.PathLike | None = None,
    ner_results: Mapping[str, Any] | None = None,
    license: str = "apache-2.0",
    datasets: Sequence[str] | None = None,
    rerender_card: bool = True,
    token: str | None = None,
    endpoint: str | None = None,
    api: Any = None,
    print_fn: Callable[[str], None] | None = None,
) -> list[VersionReport]:
    """Publish one or all releases found under ``path`` (see `find_releases`). Returns one report per version.

    ``versions`` selects releases (``"0.3"`` or ``"v0.3"``); ``ner_results`` maps a version to NER results in
    any form `bioptimus_hf.model_card.load_ner_results` accepts; ``commit_message`` may use ``{version}``.
    ``endpoint`` defaults to huggingface_hub's (``HF_ENDPOINT``); ``api`` may be a ready ``HfApi``.
    Raises `VersionConflictError` (before writing anything) when a version's tag already holds different
    content and ``force`` is false.
    """
    if mode not in MODES:
        raise ValueError(f"--mode must be one of {MODES}, got {mode!r}")
    say = print_fn or logger.info
    releases = find_releases(path)
    by_version = {read_phase_info(r)["version"]: r for r in releases}
    if versions:
        wanted = [_normalise_version(v) for v in versions]
        unknown = [v for v in wanted if v not in by_version]
        if unknown:
            raise ValueError(f"--versions {unknown} not found under {path} (available: {sorted(by_version)})")
        by_version = {v: by_version[v] for v in sorted(wanted, key=_version_key)}
    ner_by_version = {_normalise_version(k): v for k, v in (ner_results or {}).items()}
    unknown_ner = sorted(set(ner_by_version) - set(by_version))
    if unknown_ner:
        raise ValueError(f"--ner_results given for version(s) {unknown_ner} that are not being published")

    if not dry_run and api is None:
        from huggingface_hub import HfApi, get_token

        token = token if token is not None else get_token()
        if not token:
            raise RuntimeError("No Hugging Face token found: set HF_TOKEN or run `hf auth login` "
                               "(or use --dry_run to only stage and print the plan)")
        api = HfApi(endpoint=endpoint, token=token)
    repo_id = _resolve_repo_id(repo_id, organization, None if dry_run else api)
    per_version_repos = mode == "repos"

    cleanup = None
    if staging_dir is None and dry_run:  # a dry run keeps what it staged, for inspection
        staging_dir = tempfile.mkdtemp(prefix="bioptimus-hub-dry-run-")
    elif staging_dir is None:
        cleanup = tempfile.TemporaryDirectory(prefix="bioptimus-hub-")
        staging_dir = cleanup.name
    try:
        reports = []
        for version, release in by_version.items():
            target_repo = version_repo_id(repo_id, version) if per_version_repos else repo_id
            tag = version_tag(version)
            report = VersionReport(version, target_repo, MAIN_BRANCH if per_version_repos else tag, tag)
            report.staged_dir = stage_release(
                release, Path(staging_dir) / tag, repo_id=repo_id, per_version_repos=per_version_repos,
                ner_results=ner_by_version.get(version), license=license, datasets=datasets,
                rerender_card=rerender_card,
            )
            reports.append(report)

        if dry_run:
            _print_dry_run(reports, repo_id, mode, private, commit_message, say)
            return reports

        # Read-only pass first: refuse conflicting versions before anything is written.
        locals_ = {r.version: local_index(r.staged_dir) for r in reports}
        refs_by_repo: dict[str, Any] = {}
        for report in reports:
            if report.repo_id not in refs_by_repo:
                refs_by_repo[report.repo_id] = _refs(api, report.repo_id)
            refs = refs_by_repo[report.repo_id]
            if refs is not None and report.tag in refs["tags"]:
                remote = remote_index(api, report.repo_id, report.tag)
                uploads, deletions = diff_files(locals_[report.version], remote)
                if uploads or deletions:
                    if not force:
                        raise VersionConflictError(
                            f"{report.repo_id}@{report.tag} is already published with different content "
                            f"(differs: {[f.path_in_repo for f in uploads]}, not in the release: {deletions}). "
                            "Re-run with --force to replace it."
                        )
                    report.status = "conflict-forced"
                else:
                    report.status = "unchanged"

        created: set[str] = set()
        for report in reports:
            if report.repo_id not in created and refs_by_repo[report.repo_id] is None:
                api.create_repo(report.repo_id, private=private, exist_ok=True)
                created.add(report.repo_id)
            _publish_version(api, report, locals_[report.version], private=private,
                             commit_message=commit_message.format(version=report.version),
                             per_version_repos=per_version_repos, say=say)
        if not per_version_repos:
            _update_main(api, repo_id, reports, locals_, say)
        return reports
    finally:
        if cleanup is not None:
            cleanup.cleanup()


def _refs(api: Any, repo_id: str) -> dict[str, dict[str, str]] | None:
    """``{"branches": {name: commit}, "tags": {name: commit}}``, or None when the repository does not exist."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(repo_id)
    except RepositoryNotFoundError:
        return None
    return {"branches": {b.name: b.target_commit for b in refs.branches},
            "tags": {t.name: t.target_commit for t in refs.tags}}


def _commit_diff(api, repo_id, branch, local, message, say) -> tuple[str | None, list[str], list[str]]:
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    remote = remote_index(api, repo_id, branch)
    uploads, deletions = diff_files(local, remote)
    if not uploads and not deletions:
        return None, [], []
    operations = [CommitOperationAdd(path_in_repo=f.path_in_repo, path_or_fileobj=str(f.local_path)) for f in uploads]
    operations += [CommitOperationDelete(path_in_repo=p) for p in deletions]
    say(f"{repo_id}@{branch}: committing {len(uploads)} file(s) {[f.path_in_repo for f in uploads]}"
        + (f", deleting {deletions}" if deletions else ""))
    info = api.create_commit(repo_id, operations, commit_message=message, revision=branch)
    return info.oid, [f.path_in_repo for f in uploads], deletions


def _publish_version(api, report: VersionReport, local, *, private, commit_message, per_version_repos, say) -> None:
    repo_id, branch, tag = report.repo_id, report.branch, report.tag
    refs = _refs(api, repo_id) or {"branches": {}, "tags": {}}
    if report.status == "unchanged":
        if branch not in refs["branches"]:
            api.create_branch(repo_id, branch=branch, revision=tag)
            report.operations.append(f"create_branch {branch} at {tag}")
        elif refs["branches"][branch] != refs["tags"][tag]:
            logger.warning("%s: branch %s has moved away from tag %s; leaving both as they are", repo_id, branch, tag)
        say(f"{repo_id}@{tag}: already published with identical content, nothing to do")
        return

    if branch not in refs["branches"]:
        previous = _previous_tag(refs["tags"], report.version)
        api.create_branch(repo_id, branch=branch, revision=previous, exist_ok=True)
        report.operations.append(f"create_branch {branch} from {previous or MAIN_BRANCH}")
    commit, uploaded, deleted = _commit_diff(api, repo_id, branch, local, commit_message, say)
    report.commit, report.uploaded, report.deleted = commit, uploaded, deleted
    if commit:
        report.operations.append(f"commit {len(uploaded)} upload(s), {len(deleted)} deletion(s) to {branch}")
    if tag in refs["tags"]:  # forced republication: move the tag to the new head
        api.delete_tag(repo_id, tag=tag)
        report.operations.append(f"delete_tag {tag}")
    api.create_tag(repo_id, tag=tag, revision=branch, tag_message=f"BIOptimus v{report.version}")
    report.operations.append(f"create_tag {tag} at {branch}")
    report.status = "republished" if report.status == "conflict-forced" else "published"
    say(f"{repo_id}@{tag}: {report.status}")


def _previous_tag(tags: Mapping[str, str], version: str) -> str | None:
    older = [t for t in tags if re.fullmatch(r"v\d+(\.\d+)*", t) and _version_key(t[1:]) < _version_key(version)]
    return max(older, key=lambda t: _version_key(t[1:])) if older else None


def _update_main(api, repo_id, reports, locals_, say) -> None:
    """Make ``main`` hold the highest published version, if that version is one of this call's releases."""
    refs = _refs(api, repo_id) or {"tags": {}}
    published = [t[1:] for t in refs["tags"] if re.fullmatch(r"v\d+(\.\d+)*", t)]
    if not published:
        return
    latest = max(published, key=_version_key)
    report = next((r for r in reports if r.version == latest), None)
    if report is None:
        say(f"{repo_id}@{MAIN_BRANCH}: latest published version v{latest} is not part of this call; main left as is")
        return
    commit, uploaded, deleted = _commit_diff(api, repo_id, MAIN_BRANCH, locals_[latest],
                                             MAIN_COMMIT_MESSAGE.format(version=latest), say)
    if commit:
        report.operations.append(f"commit {len(uploaded)} upload(s), {len(deleted)} deletion(s) to {MAIN_BRANCH}")
    say(f"{repo_id}@{MAIN_BRANCH}: holds v{latest}" + (" (updated)" if commit else " (already)"))


def _print_dry_run(reports, repo_id, mode, private, commit_message, say) -> None:
    visibility = "private" if private else "public"
    say(f"DRY RUN (no network): mode={mode}; the Hub's current state is not queried, so every operation is listed; "
        "a real run skips versions already published with identical content and files already present.")
    for report in reports:
        ops = [f"create_repo {report.repo_id} ({visibility}, exist_ok)"]
        if mode == "branches":
            ops.append(f"create_branch {report.branch} (from the previous version's tag, else main)")
        files = local_index(report.staged_dir)
        ops.append(f"create_commit on {report.repo_id}@{report.branch}: "
                   f"\"{commit_message.format(version=report.version)}\"")
        for f in files.values():
            ops.append(f"    upload {f.path_in_repo}  {f.size} bytes  sha256={f.sha256}"
                       f"  ({'LFS' if f.likely_lfs else 'regular'})")
        ops.append(f"create_tag {report.tag} at {report.repo_id}@{report.branch}")
        report.operations = ops
        report.status = "planned"
        say(f"v{report.version}: staged in {report.staged_dir}")
        for op in ops:
            say("  " + op)
    if mode == "branches" and reports:
        say(f"  create_commit on {repo_id}@{MAIN_BRANCH}: same files as v{reports[-1].version} "
            "(only if it is the highest version tagged on the Hub)")


# --------------------------------------------------------------------------------------------- from training
def publish_command(release_dir: str | os.PathLike, repo_id: str, mode: str = "branches", private: bool = False,
                    extra: Mapping[str, Any] | None = None) -> str:
    """The CLI command that publishes ``release_dir`` later (shown when publishing from training failed)."""
    parts = ["python", "-m", "bioptimus_hf.hub", "--run_dir", str(release_dir), "--repo_id", repo_id, "--mode", mode]
    if private:
        parts.append("--private")
    for key, value in (extra or {}).items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f"--{key}")
        elif isinstance(value, (list, tuple)):
            parts += [f"--{key}", *map(str, value)]
        else:
            parts += [f"--{key}", str(value)]
    return shlex.join(parts)


class ReleasePublisher:
    """Callable handed to the training loop: ``publisher(release_dir)`` returns at once.

    Releases are published one after another by a daemon thread. Any failure (Hub unreachable, no token,
    conflict...) is caught: the release stays on disk and a warning gives the exact command to publish it
    later. ``wait(timeout)`` lets the caller give pending uploads a bounded time at the end of training.
    """

    def __init__(self, repo_id: str, private: bool = False, mode: str = "branches", token: str | None = None,
                 **publish_kwargs: Any):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.repo_id, self.private, self.mode = repo_id, private, mode
        self._token = token  # kept private: never part of repr, logs or commands
        self._publish_kwargs = publish_kwargs
        self._queue: queue.Queue = queue.Queue()
        self.published: list[VersionReport] = []
        self.failed: list[tuple[str, str]] = []  # (release_dir, command to publish it later)
        self._thread = threading.Thread(target=self._work, name="bioptimus-hub-publisher", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"ReleasePublisher(repo_id={self.repo_id!r}, mode={self.mode!r}, private={self.private})"

    def command(self, release_dir: str | os.PathLike) -> str:
        extra = {k: self._publish_kwargs.get(k) for k in ("organization", "commit_message", "license", "datasets")
                 if self._publish_kwargs.get(k) not in (None, DEFAULT_COMMIT_MESSAGE)}
        return publish_command(release_dir, self.repo_id, self.mode, self.private, extra)

    def __call__(self, release_dir: str | os.PathLike) -> None:
        try:
            self._queue.put(str(release_dir))
        except Exception:  # pragma: no cover - a Queue.put without a bound cannot fail, but never raise here
            logger.warning("could not schedule publication of %s; publish it later with: %s",
                           release_dir, self.command(release_dir))

    def _work(self) -> None:
        while True:
            release_dir = self._queue.get()
            try:
                self.published += publish_releases(release_dir, self.repo_id, mode=self.mode, private=self.private,
                                                   token=self._token, **self._publish_kwargs)
            except BaseException as error:  # noqa: BLE001 - publishing must never take training down
                command = self.command(release_dir)
                self.failed.append((release_dir, command))
                logger.warning("Publishing %s to the Hub failed (%s: %s). The release is kept on disk; publish it "
                               "later with:\n  %s", release_dir, type(error).__name__, error, command)
            finally:
                self._queue.task_done()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for queued publications; True when none is left."""
        done = threading.Event()

        def join() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=join, daemon=True).start()
        finished = done.wait(timeout)
        if not finished:
            logger.warning("Hub publication still running after %ss; unfinished releases can be published "
                           "later with `python -m bioptimus_hf.hub --run_dir <release_dir> --repo_id %s`",
                           timeout, self.repo_id)
        return finished


def make_release_publisher(repo_id: str, private: bool = False, mode: str = "branches", token: str | None = None,
                           **publish_kwargs: Any) -> ReleasePublisher:
    """A ``Callable[[str | Path], None]`` that publishes each release in the background (see `ReleasePublisher`).

    ``publish_kwargs`` go to `publish_releases` (``organization``, ``commit_message``, ``license``,
    ``endpoint``, ``force``...).
    """
    return ReleasePublisher(repo_id, private=private, mode=mode, token=token, **publish_kwargs)


# --------------------------------------------------------------------------------------------- CLI
@dataclass
class PublishArguments:
    """Arguments of ``python -m bioptimus_hf.hub``."""

    run_dir: str = field(metadata={"help": "A training output_dir (holding releases/v0.k/), its releases/ folder, "
                                           "or a single release directory."})
    repo_id: str = field(metadata={"help": "Hub repository: 'name' (with --organization or your user) or 'org/name'. "
                                           "With --mode repos, version 0.k goes to '<repo_id>-v0.k'."})
    organization: str | None = field(default=None, metadata={"help": "Namespace when --repo_id has none."})
    versions: list[str] | None = field(default=None, metadata={"help": "Versions to publish (e.g. 0.3 or v0.3); "
                                                                        "default: all releases found."})
    mode: str = field(default="branches", metadata={"help": "'branches': one repository, a branch and tag per "
                                                            "version, main = latest; 'repos': one repository per "
                                                            "version.", "choices": list(MODES)})
    private: bool = field(default=False, metadata={"help": "Create new repositories as private."})
    commit_message: str = field(default=DEFAULT_COMMIT_MESSAGE,
                                metadata={"help": "Commit message; '{version}' is replaced by the version."})
    force: bool = field(default=False, metadata={"help": "Replace versions already published with different "
                                                         "content (moves their tags)."})
    dry_run: bool = field(default=False, metadata={"help": "Stage the files and print every operation, "
                                                           "without network."})
    staging_dir: str | None = field(default=None, metadata={"help": "Where to stage each version's files "
                                                                    "(default: a temporary directory; kept "
                                                                    "when given)."})
    ner_results: list[str] | None = field(default=None, metadata={"help": "VERSION=PATH pairs: NER results "
                                                                           "(all_results.json file or directory) "
                                                                           "to put in that version's card."})
    license: str = field(default="apache-2.0", metadata={"help": "License identifier in the card metadata."})
    datasets: list[str] | None = field(default=None, metadata={"help": "Hub dataset ids of the pre-training data, "
                                                                        "for the card's `datasets` metadata "
                                                                        "(default: the run's `datasets`, if any)."})
    keep_release_readme: bool = field(default=False, metadata={"help": "Upload the release's own README.md "
                                                                       "instead of re-rendering the card."})
    endpoint: str | None = field(default=None, metadata={"help": "Hub endpoint (default: HF_ENDPOINT or "
                                                                 "https://huggingface.co)."})


def _parse_ner_results(pairs: Iterable[str] | None) -> dict[str, list[str]]:
    results: dict[str, list[str]] = {}
    for pair in pairs or []:
        version, sep, path = pair.partition("=")
        if not sep or not version or not path:
            raise ValueError(f"--ner_results {pair!r}: expected VERSION=PATH, e.g. 0.4=runs/ner/bc5cdr")
        results.setdefault(_normalise_version(version), []).append(path)
    return results


def publish_from_cli(argv: Sequence[str] | None = None) -> list[VersionReport]:
    """Parse CLI arguments (or one .json/.yaml file of them), publish, print one line per version."""
    from .cli import parse_args

    (args,) = parse_args((PublishArguments,), None if argv is None else list(argv))
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    reports = publish_releases(
        args.run_dir, args.repo_id, versions=args.versions, mode=args.mode, private=args.private,
        organization=args.organization, commit_message=args.commit_message, force=args.force,
        dry_run=args.dry_run, staging_dir=args.staging_dir, ner_results=_parse_ner_results(args.ner_results),
        license=args.license, datasets=args.datasets, rerender_card=not args.keep_release_readme,
        endpoint=args.endpoint,
        print_fn=print if args.dry_run else None,
    )
    for report in reports:
        print(f"v{report.version}: {report.status} -> {report.repo_id} (branch {report.branch}, tag {report.tag})"
              + (f"; uploaded {report.uploaded}" if report.uploaded else ""))
    return reports


def main(argv: Sequence[str] | None = None) -> None:
    try:
        publish_from_cli(argv)
    except (ValueError, FileNotFoundError, RuntimeError) as error:  # VersionConflictError is a RuntimeError
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
