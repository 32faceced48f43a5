"""Publishing a run's curriculum releases (``<output_dir>/releases/v0.k/``) to the Hub: ``bioptimus publish``.

Layout ``branches`` (default): one repository, version ``0.k`` on its branch and tag ``v0.k``, ``main`` the latest;
layout ``repos``: a repository ``org/name-v0.k`` per version. Every write is ``huggingface_hub``'s. Before anything is
written each version is compared with what its tag holds (the same: skipped; other: refused unless ``--force``); a
commit carries its ``parent_commit`` and a tag's files are checked afterwards (docs/hub.md). ``--dry_run`` prints the
plan without network."""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, get_token
from huggingface_hub.errors import HfHubHTTPError, HFValidationError, RepositoryNotFoundError
from huggingface_hub.hf_api import RepoFile
from huggingface_hub.utils import validate_repo_id
from huggingface_hub.utils.sha import git_hash

from ..utils.errors import bad_input, hub_failure
from .card import build_card, render_release_card
from .card_context import CardOptions
from .naming import normalise_version, version_repo_id, version_sort_key, version_tag
from .publish_config import PublishArguments
from .record import ReleaseInfo, find_releases


logger = logging.getLogger(__name__)

MAIN_COMMIT_MESSAGE = "Point main at BIOptimus v{version} (latest release)"
MAIN_BRANCH = "main"
# Files the Hub writes itself (the initial commit's LFS attributes): never compared nor deleted.
HUB_MANAGED_FILES = frozenset({".gitattributes"})
# The Hub's default LFS rule, only to describe a dry run's plan (a real upload's mode is the Hub's answer).
_LFS_SUFFIXES, _LFS_SIZE = (".safetensors", ".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".ckpt"), 10 << 20
# Written into every directory this module stages into: only such directories are ever replaced.
STAGING_MARKER = ".bioptimus-staging"
_VERSION_TAG = re.compile(r"v\d+(\.\d+)*")


class VersionConflictError(RuntimeError):
    """A version is already published on the Hub with other content (``--force`` replaces it)."""


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
    commit: str | None = None
    staged_dir: Path | None = None


# --------------------------------------------------------------------------------------------- staging
def stage_release(
    release_dir: str | os.PathLike,
    staging_dir: str | os.PathLike,
    card: CardOptions | None = None,
    *,
    keep_release_readme: bool = False,
    keep_edited_card: bool = False,
    say: Callable[[str], None] = logger.warning,
) -> Path:
    """Build in ``staging_dir`` the files one version's Hub revision will hold: the release's, hard-linked (copied
    across filesystems), hidden ones left out, and README.md re-rendered with ``card`` unless ``keep_release_readme``
    (and no NER results). A card edited by hand (it differs from what its record renders) is named in one line
    (``say``) when replaced; ``keep_edited_card`` publishes it as it is."""
    release, staged, card = Path(release_dir), Path(staging_dir), card or CardOptions()
    if staged.exists():
        if not (staged / STAGING_MARKER).is_file():
            raise ValueError(
                f"staging directory {staged} exists and was not created by bioptimus publish; refusing to replace "
                "it (staging never deletes what it did not create): choose another --staging_dir"
            )
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    (staged / STAGING_MARKER).write_text(f"staged from {release.name} by bioptimus publish\n", encoding="utf-8")
    rerender = not keep_release_readme or card.ner_results is not None
    edited = release / "README.md"  # edited by hand when it is not what the release's record renders
    if rerender and edited.is_file() and edited.read_text(encoding="utf-8") != render_release_card(release):
        rerender = not keep_edited_card
        if keep_edited_card:
            missing = "the repository id or NER results" if card.ner_results is not None else "the repository id"
            say(
                f"{edited}: edited by hand; published as it is (--keep_edited_card), without {missing} rendered into it"
            )
        else:
            say(
                f"{edited}: edited by hand (differs from what its record renders); replaced by the re-rendered card "
                "(--keep_edited_card true keeps it)"
            )
    for source in sorted(release.rglob("*")):
        relative = source.relative_to(release)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts) or not source.is_file():
            continue
        if relative.as_posix() != "README.md" or not rerender:
            (staged / relative).parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, staged / relative)
            except OSError:  # another filesystem, or links not allowed
                shutil.copy2(source, staged / relative)
    if not (staged / "README.md").exists():
        (staged / "README.md").write_text(str(build_card(release, card)), encoding="utf-8")
    return staged


def local_files(staged_dir: Path) -> dict[str, CommitOperationAdd]:
    """The staged files as ``huggingface_hub`` operations, which hash each file once; hidden files (the staging
    marker) are no part of a release."""
    files = {}
    for path in sorted(staged_dir.rglob("*")):
        relative = path.relative_to(staged_dir)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            files[relative.as_posix()] = CommitOperationAdd(relative.as_posix(), str(path))
    return files


@contextmanager
def _staging_root(staging_dir: str | None, releases: Sequence[Path]) -> Iterator[Path]:
    """``staging_dir`` (kept; never inside the run it publishes, whose releases it would replace), else a temporary
    directory, removed at the end, a dry run's too (a release's staged copy can weigh hundreds of MB)."""
    if staging_dir is not None:
        target = Path(staging_dir).resolve()
        for protected in {p for release in releases for p in (release.resolve(), release.resolve().parent)}:
            if target == protected or protected in target.parents:
                raise ValueError(
                    f"--staging_dir {staging_dir}: refusing to stage into {protected}, which holds the releases being "
                    "published; choose a directory outside the run"
                )
        yield Path(staging_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="bioptimus-hub-") as temporary:
            yield Path(temporary)


# --------------------------------------------------------------------------------------------- the Hub's state
def _same(local: CommitOperationAdd, remote: RepoFile) -> bool:
    """Whether a staged file holds a remote file's content: sha256 for an LFS file, git blob sha1 for the others."""
    info = local.upload_info
    if remote.lfs is not None:
        return (remote.lfs.sha256, remote.lfs.size) == (info.sha256.hex(), info.size)
    return remote.size == info.size and remote.blob_id == git_hash(Path(local.path_or_fileobj).read_bytes())


def _diff(api: HfApi, repo_id: str, revision: str, local: Mapping[str, CommitOperationAdd]) -> tuple[list, list]:
    """The staged files that ``revision`` lacks or holds otherwise, and its files that are not staged."""
    tree = api.list_repo_tree(repo_id, revision=revision, recursive=True)
    remote = {entry.path: entry for entry in tree if isinstance(entry, RepoFile)}
    uploads = [op for path, op in local.items() if path not in remote or not _same(op, remote[path])]
    return uploads, [path for path in remote if path not in local and path not in HUB_MANAGED_FILES]


def _refs(api: HfApi, repo_id: str) -> tuple[dict[str, str], dict[str, str]] | None:
    """``(branches, tags)`` as ``{name: commit}``, or None when the repository does not exist."""
    try:
        refs = api.list_repo_refs(repo_id)
    except RepositoryNotFoundError:
        return None
    return {b.name: b.target_commit for b in refs.branches}, {t.name: t.target_commit for t in refs.tags}


def _http_status(error: BaseException) -> int | None:
    return getattr(getattr(error, "response", None), "status_code", None)


# --------------------------------------------------------------------------------------------- publishing
def publish_releases(args: PublishArguments, api: HfApi | None = None) -> list[VersionReport]:
    """Publish the releases ``args`` names (``bioptimus publish``'s flags); one report per version, in version order.

    ``api``: a ready ``HfApi`` (default: one for ``args.endpoint`` with ``args.hub_token``, else huggingface_hub's
    token). Raises `VersionConflictError`, before writing anything, when a version's tag holds other files and
    ``args.force`` is false.
    """
    by_version, ner = _select_releases(args)
    if not args.dry_run and api is None:
        api = _hub_api(args.hub_token, args.endpoint)
    repo_id = _resolve_repo_id(args.hub_model_id, args.organization, None if args.dry_run else api)
    per_version_repos = args.mode == "repos"
    for candidate in [version_repo_id(repo_id, v) for v in by_version] if per_version_repos else [repo_id]:
        try:
            validate_repo_id(candidate)  # also in a dry run: what the Hub would refuse
        except HFValidationError as error:
            raise ValueError(f"--hub_model_id {candidate!r} is not a valid Hub repository id: {error}") from None
    with _staging_root(args.staging_dir, list(by_version.values())) as root:
        reports = []
        for version, release in by_version.items():
            tag = version_tag(version)
            target = version_repo_id(repo_id, version) if per_version_repos else repo_id
            reports.append(VersionReport(version, target, MAIN_BRANCH if per_version_repos else tag, tag))
            card = CardOptions(
                repo_id=repo_id,
                per_version_repos=per_version_repos,
                license=args.license,
                datasets=args.datasets,
                ner_results=ner.get(version),
            )
            reports[-1].staged_dir = stage_release(
                release,
                root / tag,
                card,
                keep_release_readme=args.keep_release_readme,
                keep_edited_card=args.keep_edited_card,
                say=print if args.dry_run else logger.warning,
            )
        if args.dry_run:
            _print_dry_run(reports, repo_id, args)
            return reports
        local = {r.version: local_files(r.staged_dir) for r in reports}
        existing = _check_conflicts(api, reports, local, args.force)
        for report in reports:
            if report.repo_id not in existing:
                api.create_repo(report.repo_id, private=args.hub_private_repo, exist_ok=True)
                existing.add(report.repo_id)
            _publish_version(api, report, local[report.version], args.commit_message.format(version=report.version))
        if not per_version_repos:
            _update_main(api, repo_id, local)
    return reports


def publish_command(args: PublishArguments, argv: Sequence[str]) -> list[VersionReport]:
    """``bioptimus publish ARGV``: publish, one line per version; a failed Hub request is
    :class:`~bioptimus_hf.utils.errors.BadInput` naming the command that resumes."""
    from ..utils.secrets import redact_argv

    resume = (
        "Nothing published is lost and publishing is idempotent: run this command again with the same token "
        "to upload only what is missing:\n  bioptimus publish " + shlex.join(redact_argv(argv, drop=True))
    )
    with hub_failure("the Hub request", resume), bad_input(ValueError, FileNotFoundError, RuntimeError):
        reports = publish_releases(args)
    for report in reports:
        where = f"{report.repo_id} (branch {report.branch}, tag {report.tag})"
        print(
            f"v{report.version}: {report.status} -> {where}"
            + (f"; uploaded {report.uploaded}" if report.uploaded else "")
        )
    return reports


def _select_releases(args: PublishArguments) -> tuple[dict[str, Path], dict[str, list[str]]]:
    """The releases to publish by version (all found, else ``--versions`` in order) and their NER results."""
    by_version = {ReleaseInfo.load(r).version: r for r in find_releases(args.run_dir)}
    if args.versions:
        wanted = [normalise_version(v) for v in args.versions]
        unknown = [v for v in wanted if v not in by_version]
        if unknown:
            raise ValueError(f"--versions {unknown} not found under {args.run_dir} (available: {sorted(by_version)})")
        by_version = {v: by_version[v] for v in sorted(wanted, key=version_sort_key)}
    ner = args.ner_result_paths()
    unknown_ner = sorted(set(ner) - set(by_version))
    if unknown_ner:
        raise ValueError(f"--ner_results given for version(s) {unknown_ner} that are not being published")
    return by_version, ner


def _hub_api(token: str | None, endpoint: str | None) -> HfApi:
    """An ``HfApi`` with the given token, else huggingface_hub's usual one (refused without any)."""
    token = token if token is not None else get_token()
    if not token:
        raise RuntimeError(
            "No Hugging Face token found: set HF_TOKEN or run `hf auth login` "
            "(or use --dry_run to only stage and print the plan)"
        )
    return HfApi(endpoint=endpoint, token=token)


def _resolve_repo_id(repo_id: str, organization: str | None, api: HfApi | None) -> str:
    namespace = repo_id.split("/", 1)[0] if "/" in repo_id else None
    if namespace and organization and organization != namespace:
        raise ValueError(
            f"--hub_model_id {repo_id!r} already names namespace {namespace!r}, which contradicts --organization "
            f"{organization!r}"
        )
    if namespace or organization:
        return repo_id if namespace else f"{organization}/{repo_id}"
    if api is None:
        raise ValueError(
            f"--hub_model_id {repo_id!r} has no namespace: give 'org/{repo_id}' or --organization "
            "(a dry run cannot ask the Hub for your user name)"
        )
    return f"{api.whoami()['name']}/{repo_id}"


def _check_conflicts(api: HfApi, reports: Sequence[VersionReport], local: Mapping[str, Any], force: bool) -> set[str]:
    """Compare each version with what its tag holds, reading only: mark it unchanged or forced, or raise
    `VersionConflictError` unless ``force``. Returns the repositories that exist."""
    refs_by_repo = {}
    for report in reports:
        if report.repo_id not in refs_by_repo:
            refs_by_repo[report.repo_id] = _refs(api, report.repo_id)
        refs = refs_by_repo[report.repo_id]
        if refs is None or report.tag not in refs[1]:
            continue
        uploads, deletions = _diff(api, report.repo_id, report.tag, local[report.version])
        if (uploads or deletions) and not force:
            raise VersionConflictError(
                f"{report.repo_id}@{report.tag} is already published with different content "
                f"(differs: {[op.path_in_repo for op in uploads]}, not in the release: {deletions}). "
                "Re-run with --force to replace it."
            )
        report.status = "conflict-forced" if uploads or deletions else "unchanged"
    return {repo for repo, refs in refs_by_repo.items() if refs is not None}


def _publish_version(api: HfApi, report: VersionReport, local: Mapping[str, CommitOperationAdd], message: str) -> None:
    """Branch, commit, tag and check one version (a version already published only gets its missing branch)."""
    repo_id, branch, tag = report.repo_id, report.branch, report.tag
    branches, tags = _refs(api, repo_id) or ({}, {})
    if report.status == "unchanged":
        if branch not in branches:
            api.create_branch(repo_id, branch=branch, revision=tag)
        elif branches[branch] != tags[tag]:
            logger.warning("%s: branch %s has moved away from tag %s; leaving both as they are", repo_id, branch, tag)
        logger.info("%s@%s: already published with identical content, nothing to do", repo_id, tag)
        return
    if branch not in branches:  # history v0.1 -> v0.2 -> ...: a version's branch starts at the version before
        older = [t for t in tags if _VERSION_TAG.fullmatch(t) and version_sort_key(t[1:]) < version_sort_key(tag[1:])]
        previous = max(older, key=lambda t: version_sort_key(t[1:])) if older else None
        api.create_branch(repo_id, branch=branch, revision=previous, exist_ok=True)
    report.commit, report.uploaded, report.deleted = _commit_diff(api, repo_id, branch, local, message)
    if tag in tags:  # forced: the tag moves to the new commit
        api.delete_tag(repo_id, tag=tag)
    if _tag_and_check(api, report, local):
        report.status = "republished" if report.status == "conflict-forced" else "published"
    else:
        report.status = "unchanged"
    logger.info("%s@%s: %s", repo_id, tag, report.status)


def _commit_diff(api: HfApi, repo_id: str, branch: str, local: Mapping[str, Any], message: str) -> tuple:
    """Commit to ``branch`` what differs from ``local``, on top of the head the diff was computed against; returns
    ``(the commit holding our files, uploaded, deleted)``. With ``parent_commit``, a branch another publisher moved
    meanwhile is refused by the Hub (HTTP 412): `VersionConflictError` says so, instead of mixing two runs' files.
    """
    head = (_refs(api, repo_id) or ({}, {}))[0].get(branch)
    if head is None:
        raise VersionConflictError(f"{repo_id}: branch {branch} disappeared while publishing; re-run to publish again")
    uploads, deletions = _diff(api, repo_id, head, local)
    if not uploads and not deletions:
        return head, [], []
    uploaded = [op.path_in_repo for op in uploads]
    logger.info("%s@%s: committing %s%s", repo_id, branch, uploaded, f", deleting {deletions}" if deletions else "")
    # a new operation per commit: huggingface_hub refuses to commit one twice (the same file goes to main too)
    operations = [CommitOperationAdd(op.path_in_repo, op.path_or_fileobj) for op in uploads]
    try:
        info = api.create_commit(
            repo_id,
            operations + [CommitOperationDelete(path) for path in deletions],
            commit_message=message,
            revision=branch,
            parent_commit=head,
        )
    except HfHubHTTPError as error:
        if _http_status(error) in (409, 412):
            raise VersionConflictError(
                f"{repo_id}@{branch} changed while this release was being published (another publisher?); "
                "nothing of ours was committed. Re-run to publish on top of the new state (or find who else "
                "publishes this version)"
            ) from None
        raise
    return info.oid, uploaded, deletions


def _tag_and_check(api: HfApi, report: VersionReport, local: Mapping[str, Any]) -> bool:
    """Tag the commit made (not the branch head), then check that the tag holds exactly the staged files; returns
    whether this call made the tag. Raises `VersionConflictError` when it holds other files. A publisher that loses the
    race moves the branch back to the tag (they share a name: ``revision="v0.k"`` must not be ambiguous)."""
    repo_id, branch, tag = report.repo_id, report.branch, report.tag
    try:
        api.create_tag(repo_id, tag=tag, revision=report.commit, tag_message=f"BIOptimus v{report.version}")
        made = True
    except HfHubHTTPError as error:
        if _http_status(error) != 409:
            raise
        made = False
    branches, tags = _refs(api, repo_id) or ({}, {})
    tagged = tags.get(tag)
    if tagged is None:
        raise VersionConflictError(f"{repo_id}@{tag}: the tag is missing right after publishing (deleted by someone?)")
    uploads, deletions = _diff(api, repo_id, tagged, local)
    differs = [op.path_in_repo for op in uploads] + deletions
    if not differs:
        report.commit = tagged
        return made
    if made:
        raise VersionConflictError(
            f"{repo_id}@{tag} does not hold the files this run staged after publishing ({differs} differ); another "
            "publisher may have raced this one"
        )
    if branches.get(branch) == report.commit and branch != MAIN_BRANCH:
        api.delete_branch(repo_id, branch=branch)
        api.create_branch(repo_id, branch=branch, revision=tagged)
    raise VersionConflictError(
        f"{repo_id}@{tag} was created by another publisher while this one ran, with different files ({differs}); "
        f"this run's files were not tagged (branch {branch} points at the tag again). Compare the two runs, then "
        "re-run with --force to replace it if ours is the right one"
    )


def _update_main(api: HfApi, repo_id: str, local: Mapping[str, Mapping[str, Any]]) -> None:
    """Make ``main`` hold the highest version tagged on the Hub, if that version is one of this call's."""
    published = [t[1:] for t in (_refs(api, repo_id) or ({}, {}))[1] if _VERSION_TAG.fullmatch(t)]
    if not published:
        return
    latest = max(published, key=version_sort_key)
    if latest not in local:
        logger.info("%s: v%s, the latest version tagged, is not part of this call; main left as is", repo_id, latest)
        return
    message = MAIN_COMMIT_MESSAGE.format(version=latest)
    _, uploaded, deleted = _commit_diff(api, repo_id, MAIN_BRANCH, local[latest], message)
    logger.info("%s@%s: holds v%s%s", repo_id, MAIN_BRANCH, latest, " (updated)" if uploaded or deleted else "")


def _print_dry_run(reports: Sequence[VersionReport], repo_id: str, args: PublishArguments) -> None:
    visibility = {True: "private", False: "public", None: "the namespace's visibility"}[args.hub_private_repo]
    print(
        f"DRY RUN (no network): mode={args.mode}; the Hub's current state is not queried, so every operation is "
        "listed; a real run skips versions already published with identical content and files already present."
    )
    if args.staging_dir is None:
        print("The staged files are removed at exit; --staging_dir DIR keeps them for inspection.")
    for report in reports:
        report.status = "planned"
        print(f"v{report.version}: staged in {report.staged_dir}")
        print(f"  create_repo {report.repo_id} ({visibility}, exist_ok)")
        if args.mode == "branches":
            print(f"  create_branch {report.branch} (from the previous version's tag, else main)")
        message = args.commit_message.format(version=report.version)
        print(f'  create_commit on {report.repo_id}@{report.branch}: "{message}"')
        for path, op in local_files(report.staged_dir).items():
            size, lfs = op.upload_info.size, path.endswith(_LFS_SUFFIXES) or op.upload_info.size > _LFS_SIZE
            print(
                f"      upload {path}  {size} bytes  sha256={op.upload_info.sha256.hex()}  ({'LFS' if lfs else 'regular'})"
            )
        print(f"  create_tag {report.tag} at {report.repo_id}@{report.branch}")
    if args.mode == "branches" and reports:
        print(
            f"  create_commit on {repo_id}@{MAIN_BRANCH}: same files as v{reports[-1].version} "
            "(only if it is the highest version tagged on the Hub)"
        )
