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

CLI: ``bioptimus publish --run_dir runs/bioptimus --hub_model_id acme/bioptimus [--dry_run]``
(:mod:`bioptimus_hf.commands.publish`); publishing in the background while training:
:mod:`bioptimus_hf.releases.publisher`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .card import render_release_card
from .naming import normalise_version, version_repo_id, version_sort_key, version_tag
from .record import ReleaseInfo, find_releases


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
# Written into every directory this module stages into: only such directories are ever replaced.
STAGING_MARKER = ".bioptimus-staging"


class VersionConflictError(RuntimeError):
    """A version is already published on the Hub with different content (publish with ``force`` to replace)."""


# --------------------------------------------------------------------------------------------- local side
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
    keep_edited_card: bool = False,
    say: Callable[[str], None] | None = None,
) -> Path:
    """Build the exact tree of files one version's Hub revision will hold, in ``staging_dir``.

    Release files are hard-linked (copied across filesystems); hidden files are left out. README.md is
    re-rendered with the repository id (so the card's loading snippets are right) and the NER results,
    unless ``rerender_card=False`` and the release has one. A release card that differs from what the release's
    record renders was edited by hand: replacing it is said in one line (``say``, default a logged warning), and
    ``keep_edited_card=True`` publishes it as it is instead.
    """
    release = Path(release_dir)
    staged = Path(staging_dir)
    if staged.exists():
        if not (staged / STAGING_MARKER).is_file():
            raise ValueError(
                f"staging directory {staged} exists and was not created by bioptimus publish; refusing to replace "
                "it (staging never deletes what it did not create): choose another --staging_dir"
            )
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    (staged / STAGING_MARKER).write_text(f"staged from {release.name} by bioptimus publish\n", encoding="utf-8")
    rerender = rerender_card or ner_results is not None
    edited = edited_card(release) if rerender else None
    if edited is not None:
        rerender = not keep_edited_card
        _say_edited_card(edited, keep_edited_card, ner_results is not None, say or logger.warning)
    for source in sorted(release.rglob("*")):
        relative = source.relative_to(release)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts) or not source.is_file():
            continue
        if relative.as_posix() == "README.md" and rerender:
            continue
        target = staged / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        _link_or_copy(source, target)
    if not (staged / "README.md").exists():
        card = render_release_card(
            release,
            ner_results,
            repo_id=repo_id,
            per_version_repos=per_version_repos,
            license=license,
            datasets=datasets,
        )
        (staged / "README.md").write_text(card, encoding="utf-8")
    return staged


def edited_card(release_dir: str | os.PathLike) -> Path | None:
    """The release's README.md when it differs from what its record renders (as the release writer wrote it),
    that is, when someone edited it; None when it has none or it is the rendered one."""
    card = Path(release_dir) / "README.md"
    if not card.is_file():
        return None
    return card if card.read_text(encoding="utf-8") != render_release_card(release_dir) else None


def _say_edited_card(card: Path, kept: bool, with_ner: bool, say: Callable[[str], None]) -> None:
    """One line naming an edited card: kept as it is, or replaced by the re-rendered one."""
    if kept:
        missing = "the repository id or NER results" if with_ner else "the repository id"
        say(f"{card}: edited by hand; published as it is (--keep_edited_card), without {missing} rendered into it")
    else:
        say(
            f"{card}: edited by hand (differs from what its record renders); replaced by the re-rendered card "
            "(--keep_edited_card true keeps it)"
        )


def local_index(staged_dir: Path) -> dict[str, LocalFile]:
    """The staged files to publish (hidden files, such as the staging marker, are not part of a release)."""
    index = {}
    for path in sorted(staged_dir.rglob("*")):
        relative = path.relative_to(staged_dir)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            index[relative.as_posix()] = LocalFile.hash(path, relative.as_posix())
    return index


def _check_staging_dir(staging_dir: Path, releases: Sequence[Path]) -> None:
    """Staging must not happen inside the run it publishes: it would replace releases with their copies."""
    target = staging_dir.resolve()
    for release in releases:
        for protected in (release.resolve(), release.resolve().parent):
            if target == protected or protected in target.parents:
                raise ValueError(
                    f"--staging_dir {staging_dir}: refusing to stage into {protected}, which holds the releases being "
                    "published; choose a directory outside the run"
                )


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
            raise ValueError(
                f"--hub_model_id {repo_id!r} already names namespace {namespace!r}, "
                f"which contradicts --organization {organization!r}"
            )
        return repo_id
    if organization:
        return f"{organization}/{repo_id}"
    if api is None:
        raise ValueError(
            f"--hub_model_id {repo_id!r} has no namespace: give 'org/{repo_id}' or --organization "
            "(a dry run cannot ask the Hub for your user name)"
        )
    return f"{api.whoami()['name']}/{repo_id}"


def _validate_repo_ids(repo_id: str, versions: Sequence[str], per_version_repos: bool) -> None:
    """Refuse, before anything is staged, a repository id the Hub would refuse (also in dry runs)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    for candidate in [version_repo_id(repo_id, v) for v in versions] if per_version_repos else [repo_id]:
        try:
            validate_repo_id(candidate)
        except HFValidationError as error:
            raise ValueError(f"--hub_model_id {candidate!r} is not a valid Hub repository id: {error}") from None


# --------------------------------------------------------------------------------------------- publishing
def publish_releases(
    path: str | os.PathLike,
    repo_id: str,
    *,
    versions: Sequence[str] | None = None,
    mode: str = "branches",
    private: bool | None = False,
    organization: str | None = None,
    commit_message: str = DEFAULT_COMMIT_MESSAGE,
    force: bool = False,
    dry_run: bool = False,
    staging_dir: str | os.PathLike | None = None,
    ner_results: Mapping[str, Any] | None = None,
    license: str = "apache-2.0",
    datasets: Sequence[str] | None = None,
    rerender_card: bool = True,
    keep_edited_card: bool = False,
    token: str | None = None,
    endpoint: str | None = None,
    api: Any = None,
    print_fn: Callable[[str], None] | None = None,
) -> list[VersionReport]:
    """Publish one or all releases found under ``path`` (see `find_releases`). Returns one report per version.

    ``versions`` selects releases (``"0.3"`` or ``"v0.3"``); ``ner_results`` maps a version to NER results in
    any form `bioptimus_hf.releases.ner_results.load_ner_results` accepts; ``commit_message`` may use
    ``{version}``; ``keep_edited_card`` publishes a release card edited by hand as it is (see `stage_release`).
    ``endpoint`` defaults to huggingface_hub's (``HF_ENDPOINT``); ``api`` may be a ready ``HfApi``.
    Raises `VersionConflictError` (before writing anything) when a version's tag already holds different
    content and ``force`` is false.
    """
    if mode not in MODES:
        raise ValueError(f"--mode must be one of {MODES}, got {mode!r}")
    say = print_fn or logger.info
    by_version, ner_by_version = _select_releases(path, versions, ner_results)
    if not dry_run and api is None:
        api = _hub_api(token, endpoint)
    repo_id = _resolve_repo_id(repo_id, organization, None if dry_run else api)
    _validate_repo_ids(repo_id, list(by_version), mode == "repos")
    per_version_repos = mode == "repos"

    with _staging_root(staging_dir, dry_run, list(by_version.values())) as root:
        reports = _stage_versions(
            by_version,
            root,
            repo_id,
            per_version_repos,
            ner_by_version=ner_by_version,
            license=license,
            datasets=datasets,
            rerender_card=rerender_card,
            keep_edited_card=keep_edited_card,
            say=print_fn or logger.warning,
        )
        if dry_run:
            _print_dry_run(reports, repo_id, mode, private, commit_message, say)
            return reports
        # Read-only pass first: refuse conflicting versions before anything is written.
        locals_ = {r.version: local_index(r.staged_dir) for r in reports}
        refs_by_repo = _check_conflicts(api, reports, locals_, force)
        created: set[str] = set()
        for report in reports:
            if report.repo_id not in created and refs_by_repo[report.repo_id] is None:
                api.create_repo(report.repo_id, private=private, exist_ok=True)
                created.add(report.repo_id)
            _publish_version(
                api,
                report,
                locals_[report.version],
                private=private,
                commit_message=commit_message.format(version=report.version),
                per_version_repos=per_version_repos,
                say=say,
            )
        if not per_version_repos:
            _update_main(api, repo_id, reports, locals_, say)
        return reports


@contextmanager
def _staging_root(staging_dir: str | os.PathLike | None, dry_run: bool, releases: Sequence[Path]) -> Iterator[Path]:
    """Where versions are staged: ``staging_dir`` (kept; never inside the run), else a temporary directory,
    kept after a dry run (for inspection) and removed after a real one."""
    if staging_dir is not None:
        _check_staging_dir(Path(staging_dir), releases)
        yield Path(staging_dir)
    elif dry_run:
        yield Path(tempfile.mkdtemp(prefix="bioptimus-hub-dry-run-"))
    else:
        with tempfile.TemporaryDirectory(prefix="bioptimus-hub-") as temporary:
            yield Path(temporary)


def _select_releases(
    path: str | os.PathLike, versions: Sequence[str] | None, ner_results: Mapping[str, Any] | None
) -> tuple[dict[str, Path], dict[str, Any]]:
    """The releases to publish by version (all found, else ``versions`` in order) and their NER results."""
    releases = find_releases(path)
    by_version = {ReleaseInfo.load(r).version: r for r in releases}
    if versions:
        wanted = [normalise_version(v) for v in versions]
        unknown = [v for v in wanted if v not in by_version]
        if unknown:
            raise ValueError(f"--versions {unknown} not found under {path} (available: {sorted(by_version)})")
        by_version = {v: by_version[v] for v in sorted(wanted, key=version_sort_key)}
    ner_by_version = {normalise_version(k): v for k, v in (ner_results or {}).items()}
    unknown_ner = sorted(set(ner_by_version) - set(by_version))
    if unknown_ner:
        raise ValueError(f"--ner_results given for version(s) {unknown_ner} that are not being published")
    return by_version, ner_by_version


def _hub_api(token: str | None, endpoint: str | None) -> Any:
    """An ``HfApi`` with the given token, else huggingface_hub's usual one (refused without any)."""
    from huggingface_hub import HfApi, get_token

    token = token if token is not None else get_token()
    if not token:
        raise RuntimeError(
            "No Hugging Face token found: set HF_TOKEN or run `hf auth login` "
            "(or use --dry_run to only stage and print the plan)"
        )
    return HfApi(endpoint=endpoint, token=token)


def _stage_versions(
    by_version: Mapping[str, Path],
    staging_dir: Path,
    repo_id: str,
    per_version_repos: bool,
    *,
    ner_by_version: Mapping[str, Any],
    **card_options: Any,
) -> list[VersionReport]:
    """Stage every version in ``staging_dir/<tag>``; one report per version, not published yet."""
    reports = []
    for version, release in by_version.items():
        target_repo = version_repo_id(repo_id, version) if per_version_repos else repo_id
        tag = version_tag(version)
        report = VersionReport(version, target_repo, MAIN_BRANCH if per_version_repos else tag, tag)
        report.staged_dir = stage_release(
            release,
            staging_dir / tag,
            repo_id=repo_id,
            per_version_repos=per_version_repos,
            ner_results=ner_by_version.get(version),
            **card_options,
        )
        reports.append(report)
    return reports


def _check_conflicts(
    api: Any, reports: Sequence[VersionReport], locals_: Mapping[str, Mapping[str, LocalFile]], force: bool
) -> dict[str, Any]:
    """Compare each version with what its tag holds (read only): mark it unchanged or forced, or raise
    `VersionConflictError` unless ``force``. Returns each repository's refs (None: it does not exist)."""
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
    return refs_by_repo


def _refs(api: Any, repo_id: str) -> dict[str, dict[str, str]] | None:
    """``{"branches": {name: commit}, "tags": {name: commit}}``, or None when the repository does not exist."""
    from huggingface_hub.errors import RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(repo_id)
    except RepositoryNotFoundError:
        return None
    return {
        "branches": {b.name: b.target_commit for b in refs.branches},
        "tags": {t.name: t.target_commit for t in refs.tags},
    }


def _http_status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _commit_diff(api, repo_id, branch, local, message, say) -> tuple[str, str | None, list[str], list[str]]:
    """Commit to ``branch`` what differs from ``local``, on top of the head the diff was computed against.

    Returns ``(commit the branch holds our files at, new commit or None, uploaded, deleted)``. The commit
    is made with ``parent_commit``: if another publisher moved the branch meanwhile the Hub refuses it
    (HTTP 412) and :class:`VersionConflictError` says so, instead of silently mixing two runs' files.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    head = (_refs(api, repo_id) or {"branches": {}})["branches"].get(branch)
    if head is None:
        raise VersionConflictError(f"{repo_id}: branch {branch} disappeared while publishing; re-run to publish again")
    remote = remote_index(api, repo_id, head)
    uploads, deletions = diff_files(local, remote)
    if not uploads and not deletions:
        return head, None, [], []
    operations = [CommitOperationAdd(path_in_repo=f.path_in_repo, path_or_fileobj=str(f.local_path)) for f in uploads]
    operations += [CommitOperationDelete(path_in_repo=p) for p in deletions]
    say(
        f"{repo_id}@{branch}: committing {len(uploads)} file(s) {[f.path_in_repo for f in uploads]}"
        + (f", deleting {deletions}" if deletions else "")
    )
    try:
        info = api.create_commit(repo_id, operations, commit_message=message, revision=branch, parent_commit=head)
    except HfHubHTTPError as error:
        if _http_status(error) in (409, 412):
            raise VersionConflictError(
                f"{repo_id}@{branch} changed while this release was being published (another publisher?); "
                "nothing of ours was committed. Re-run to publish on top of the new state (or find who else "
                "publishes this version)"
            ) from None
        raise
    return info.oid, info.oid, [f.path_in_repo for f in uploads], deletions


def _tag_commit(api, repo_id: str, tag: str, commit: str, branch: str, version: str, local) -> bool:
    """Tag ``commit`` (not the branch head, which another publisher may have moved). Returns False when the
    tag was created meanwhile by someone else with the same files; raises when it holds other files.

    Branch and tag share a name (``v0.k``), so a branch left pointing at a commit other than the tag's would
    make ``revision="v0.k"`` ambiguous: a publisher that loses the race moves the branch back to the tag.
    """
    from huggingface_hub.errors import HfHubHTTPError

    try:
        api.create_tag(repo_id, tag=tag, revision=commit, tag_message=f"BIOptimus v{version}")
        return True
    except HfHubHTTPError as error:
        if _http_status(error) != 409:
            raise
    refs = _refs(api, repo_id) or {"branches": {}, "tags": {}}
    tagged = refs["tags"].get(tag)
    uploads, deletions = diff_files(local, remote_index(api, repo_id, tagged)) if tagged else (list(local), [])
    if uploads or deletions:
        if tagged and refs["branches"].get(branch) == commit and branch != MAIN_BRANCH:
            api.delete_branch(repo_id, branch=branch)
            api.create_branch(repo_id, branch=branch, revision=tagged)
        raise VersionConflictError(
            f"{repo_id}@{tag} was created by another publisher while this one ran, with different files "
            f"({[f.path_in_repo for f in uploads] + deletions}); this run's files were not tagged (branch {branch} "
            "points at the tag again). Compare the two runs, then re-run with --force to replace it if ours is the "
            "right one"
        )
    return False


def verify_published(api, repo_id: str, tag: str, local) -> str:
    """Raise unless the tag's commit holds exactly the staged files (checked after every publication);
    return that commit."""
    tagged = (_refs(api, repo_id) or {"tags": {}})["tags"].get(tag)
    if tagged is None:
        raise VersionConflictError(f"{repo_id}@{tag}: the tag is missing right after publishing (deleted by someone?)")
    uploads, deletions = diff_files(local, remote_index(api, repo_id, tagged))
    if uploads or deletions:
        raise VersionConflictError(
            f"{repo_id}@{tag} does not hold the files this run staged after publishing (differs: "
            f"{[f.path_in_repo for f in uploads]}, extra: {deletions}); another publisher may have raced this one"
        )
    return tagged


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
    target, commit, uploaded, deleted = _commit_diff(api, repo_id, branch, local, commit_message, say)
    report.commit, report.uploaded, report.deleted = target, uploaded, deleted
    if commit:
        report.operations.append(f"commit {len(uploaded)} upload(s), {len(deleted)} deletion(s) to {branch}")
    if tag in refs["tags"]:  # forced republication: move the tag to the new commit
        api.delete_tag(repo_id, tag=tag)
        report.operations.append(f"delete_tag {tag}")
    if _tag_commit(api, repo_id, tag, target, branch, report.version, local):
        report.operations.append(f"create_tag {tag} at {target[:12]}")
        report.status = "republished" if report.status == "conflict-forced" else "published"
    else:
        report.status = "unchanged"
    report.commit = verify_published(api, repo_id, tag, local)
    say(f"{repo_id}@{tag}: {report.status}")


def _previous_tag(tags: Mapping[str, str], version: str) -> str | None:
    older = [
        t for t in tags if re.fullmatch(r"v\d+(\.\d+)*", t) and version_sort_key(t[1:]) < version_sort_key(version)
    ]
    return max(older, key=lambda t: version_sort_key(t[1:])) if older else None


def _update_main(api, repo_id, reports, locals_, say) -> None:
    """Make ``main`` hold the highest published version, if that version is one of this call's releases."""
    refs = _refs(api, repo_id) or {"tags": {}}
    published = [t[1:] for t in refs["tags"] if re.fullmatch(r"v\d+(\.\d+)*", t)]
    if not published:
        return
    latest = max(published, key=version_sort_key)
    report = next((r for r in reports if r.version == latest), None)
    if report is None:
        say(f"{repo_id}@{MAIN_BRANCH}: latest published version v{latest} is not part of this call; main left as is")
        return
    _, commit, uploaded, deleted = _commit_diff(
        api, repo_id, MAIN_BRANCH, locals_[latest], MAIN_COMMIT_MESSAGE.format(version=latest), say
    )
    if commit:
        report.operations.append(f"commit {len(uploaded)} upload(s), {len(deleted)} deletion(s) to {MAIN_BRANCH}")
    say(f"{repo_id}@{MAIN_BRANCH}: holds v{latest}" + (" (updated)" if commit else " (already)"))


def _print_dry_run(reports, repo_id, mode, private, commit_message, say) -> None:
    visibility = "private" if private else "public"
    say(
        f"DRY RUN (no network): mode={mode}; the Hub's current state is not queried, so every operation is listed; "
        "a real run skips versions already published with identical content and files already present."
    )
    for report in reports:
        ops = [f"create_repo {report.repo_id} ({visibility}, exist_ok)"]
        if mode == "branches":
            ops.append(f"create_branch {report.branch} (from the previous version's tag, else main)")
        files = local_index(report.staged_dir)
        ops.append(
            f'create_commit on {report.repo_id}@{report.branch}: "{commit_message.format(version=report.version)}"'
        )
        for f in files.values():
            ops.append(
                f"    upload {f.path_in_repo}  {f.size} bytes  sha256={f.sha256}"
                f"  ({'LFS' if f.likely_lfs else 'regular'})"
            )
        ops.append(f"create_tag {report.tag} at {report.repo_id}@{report.branch}")
        report.operations = ops
        report.status = "planned"
        say(f"v{report.version}: staged in {report.staged_dir}")
        for op in ops:
            say("  " + op)
    if mode == "branches" and reports:
        say(
            f"  create_commit on {repo_id}@{MAIN_BRANCH}: same files as v{reports[-1].version} "
            "(only if it is the highest version tagged on the Hub)"
        )
