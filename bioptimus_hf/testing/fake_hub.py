"""A minimal in-memory stand-in for the Hugging Face Hub HTTP API, for tests (no network).

It implements the endpoints that `huggingface_hub.HfApi` (2.4) calls for publishing, read from the installed
source, plus file resolution so that `from_pretrained(repo, revision=...)` works against it:

=====================================================  =================================================
endpoint                                               called by
=====================================================  =================================================
POST /api/repos/create                                 HfApi.create_repo (409 when it exists)
GET  /api/whoami-v2                                    HfApi.whoami
GET  /api/models/{repo}[/revision/{rev}]               HfApi.repo_info / model_info
GET  /api/models/{repo}/refs                           HfApi.list_repo_refs
POST|DELETE /api/models/{repo}/branch/{branch}         HfApi.create_branch / delete_branch
POST /api/models/{repo}/tag/{revision}                 HfApi.create_tag (409 when it exists)
DELETE /api/models/{repo}/tag/{tag}                    HfApi.delete_tag
GET  /api/models/{repo}/tree/{rev}[/{path}]            HfApi.list_repo_tree / list_repo_files
POST /api/models/{repo}/paths-info/{rev}               HfApi.get_paths_info
POST /api/models/{repo}/preupload/{rev}                create_commit: upload mode + remote oid per file
POST /{repo}.git/info/lfs/objects/batch                create_commit: LFS batch API (basic transfer)
PUT  /_lfs/{repo}/{oid}, POST /_lfs_verify/{repo}      create_commit: LFS upload + verify
POST /api/models/{repo}/commit/{branch}                create_commit: NDJSON commit
POST /api/validate-yaml                                create_commit on README.md, ModelCard.validate
HEAD|GET /{repo}/resolve/{rev}/{path}                  hf_hub_download (from_pretrained)
=====================================================  =================================================

What the real Hub does and this server does not: Xet storage (tests disable it with HF_HUB_DISABLE_XET so
`huggingface_hub` uses the LFS protocol), multipart LFS, pull requests, pagination (trees are small),
rate limits, and the Hub's full metadata validation (here: the YAML parses into a `ModelCardData`).

Behaviour knobs for tests: ``token`` (required as ``Authorization: Bearer`` on every call), ``fail(...)``
to inject failures, ``gate`` (an Event that holds every request until set), ``requests`` (method, path, status of
every call), ``bodies`` (the body of every POST and PUT: every byte uploaded) and ``lfs_uploads`` (oids PUT).
The server binds 127.0.0.1 on a free port and shuts itself down after ``lifetime_s`` seconds.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit


GITATTRIBUTES = (
    "*.bin filter=lfs diff=lfs merge=lfs -text\n"
    "*.pt filter=lfs diff=lfs merge=lfs -text\n"
    "*.safetensors filter=lfs diff=lfs merge=lfs -text\n"
    "*.h5 filter=lfs diff=lfs merge=lfs -text\n"
).encode()
LFS_SUFFIXES = (".bin", ".pt", ".safetensors", ".h5")
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024


def git_blob_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass
class StoredFile:
    content: bytes | None  # regular file content; None for LFS files
    lfs_sha256: str | None = None
    size: int = 0

    @property
    def oid(self) -> str:
        if self.lfs_sha256 is None:
            return git_blob_oid(self.content)
        return git_blob_oid(lfs_pointer(self.lfs_sha256, self.size))


@dataclass
class Commit:
    oid: str
    parent: str | None
    message: str
    files: dict[str, StoredFile]


@dataclass
class Repo:
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit | None:
        revision = unquote(revision)
        oid = self.branches.get(revision) or self.tags.get(revision)
        if oid is None and re.fullmatch(r"[0-9a-f]{40}", revision):
            oid = revision if revision in self.commits else None
        return self.commits.get(oid) if oid else None


class HubError(Exception):
    def __init__(self, status: int, message: str, error_code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.error_code, self.extra = status, message, error_code, extra or {}


@dataclass
class InjectedFailure:
    method: str
    path_pattern: str
    status: int
    times: int
    body_pattern: str | None = None


class FakeHub:
    """Start with ``with FakeHub(token=...) as hub:``; ``hub.url`` is the endpoint."""

    def __init__(
        self,
        token: str | None = None,
        user: str = "fake-user",
        orgs: tuple[str, ...] = ("acme",),
        lifetime_s: float = 120.0,
    ):
        self.token, self.user, self.orgs, self.lifetime_s = token, user, orgs, lifetime_s
        self.repos: dict[str, Repo] = {}
        self.lfs_store: dict[str, bytes] = {}
        self.lfs_uploads: list[str] = []
        self.requests: list[tuple[str, str, int]] = []
        self.bodies: list[bytes] = []  # every POST/PUT body, as received
        self.commit_messages: list[tuple[str, str, str]] = []  # (repo, branch, summary)
        self.failures: list[InjectedFailure] = []
        self.gate: threading.Event | None = None  # when set to an Event, requests wait (<= 30 s) until it is set
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._timer: threading.Timer | None = None
        self._commit_counter = 0

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> "FakeHub":
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)  # stops by itself even if a test hangs
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._server is not None:
            server, self._server = self._server, None
            server.shutdown()
            server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # ---------------------------------------------------------------- test helpers
    def fail(
        self, method: str, path_pattern: str, status: int = 500, times: int = 1, body_pattern: str | None = None
    ) -> None:
        """Answer the next `times` requests matching (method, regex on the path[, regex on the body]) with `status`."""
        with self._lock:
            self.failures.append(InjectedFailure(method, path_pattern, status, times, body_pattern))

    def files(self, repo_id: str, revision: str) -> dict[str, bytes]:
        """Full content of every file at a revision (LFS files resolved from the LFS store)."""
        commit = self.repos[repo_id].resolve(revision)
        return {
            path: f.content if f.lfs_sha256 is None else self.lfs_store[f.lfs_sha256]
            for path, f in commit.files.items()
        }

    def count(self, method: str, pattern: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and re.search(pattern, p))

    # ---------------------------------------------------------------- state changes
    def _new_commit(self, repo: Repo, parent: Commit | None, message: str, files: dict[str, StoredFile]) -> Commit:
        self._commit_counter += 1
        listing = json.dumps(sorted((p, f.oid) for p, f in files.items()))
        oid = hashlib.sha1(
            f"{repo.repo_id}|{parent.oid if parent else ''}|{message}|{listing}|{self._commit_counter}".encode()
        ).hexdigest()
        commit = Commit(oid=oid, parent=parent.oid if parent else None, message=message, files=files)
        repo.commits[oid] = commit
        return commit

    def _repo(self, repo_id: str, authorized: bool) -> Repo:
        repo = self.repos.get(repo_id)
        if repo is None or (repo.private and not authorized):
            raise HubError(404, f"Repository {repo_id} not found", "RepoNotFound")
        return repo

    def _revision(self, repo: Repo, revision: str) -> Commit:
        commit = repo.resolve(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {unquote(revision)}", "RevisionNotFound")
        return commit


_REPO = r"(?P<repo>[\w.\-]+/[\w.\-]+)"


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    # ---------------------------------------------------------------- plumbing
    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():  # streamed uploads
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self, status: int, payload=None, headers: dict | None = None, raw: bytes | None = None, method: str = "GET"
    ) -> None:
        body = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else b"")
        self.send_response(status)
        if raw is None:
            self.send_header("Content-Type", "application/json")
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)

    def _authorized(self) -> bool:
        fake = self.fake
        return fake.token is None or self.headers.get("Authorization") == f"Bearer {fake.token}"

    def _dispatch(self, method: str) -> None:
        fake = self.fake
        split = urlsplit(self.path)
        path, query = unquote(split.path), parse_qs(split.query)
        body = self._body() if method in ("POST", "PUT") else b""
        if body:
            with fake._lock:
                fake.bodies.append(body)
        if fake.gate is not None:
            fake.gate.wait(timeout=30)
        status = 500
        try:
            with fake._lock:
                for failure in fake.failures:
                    if (
                        failure.times > 0
                        and failure.method == method
                        and re.search(failure.path_pattern, path)
                        and (
                            failure.body_pattern is None
                            or re.search(failure.body_pattern, (body or b"").decode("utf-8", "replace"))
                        )
                    ):
                        failure.times -= 1
                        raise HubError(failure.status, "injected failure")
                status, payload, headers, raw = self._route(method, path, query, body, split.path)
            self._send(status, payload, headers, raw, method)
        except HubError as error:
            status = error.status
            headers = {"X-Error-Code": error.error_code} if error.error_code else {}
            headers["X-Error-Message"] = error.message
            self._send(status, {"error": error.message, **error.extra}, headers, method=method)
        except Exception as error:  # a bug in the fake: make it visible as a 500 with the message
            status = 500
            self._send(500, {"error": f"fake hub error: {error!r}"}, method=method)
        finally:
            with fake._lock:
                fake.requests.append((method, path, status))

    # ---------------------------------------------------------------- routes
    def _route(self, method, path, query, body, raw_path):
        fake = self.fake
        authorized = self._authorized()
        endpoint = f"http://{self.headers.get('Host')}"
        is_write = method in ("POST", "PUT", "DELETE") and path != "/api/validate-yaml"
        if is_write and not authorized and not path.startswith("/_lfs"):
            raise HubError(401, "Invalid credentials in Authorization header")

        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml(json.loads(body))
        if method == "GET" and path == "/api/whoami-v2":
            if not authorized or fake.token is None:
                raise HubError(401, "Invalid user token.")
            return 200, {"type": "user", "name": fake.user, "orgs": [{"name": o} for o in fake.orgs]}, None, None
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body), endpoint)

        m = re.fullmatch(rf"/api/models/{_REPO}(?:/revision/(?P<rev>.+))?", path)
        if m and method == "GET":
            return self._model_info(fake._repo(m["repo"], authorized), m["rev"] or "main")
        m = re.fullmatch(
            rf"/api/models/{_REPO}/(?P<verb>refs|branch|tag|tree|paths-info|preupload|commit)(?:/(?P<rest>.*))?", path
        )
        if m:
            answer = self._repo_route(
                fake._repo(m["repo"], authorized), m["verb"], method, m["rest"] or "", body, endpoint
            )
            if answer is not None:
                return answer
        answer = self._lfs_route(method, path, body, endpoint, authorized)
        if answer is not None:
            return answer
        m = re.fullmatch(rf"/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", path)
        if m and method in ("GET", "HEAD"):
            return self._resolve(m["repo"], m["rev"], m["file"], authorized)
        raise HubError(404, f"fake hub: no route for {method} {path}")

    def _model_info(self, repo, rev):
        """GET /api/models/<repo>[/revision/<rev>]: what ``HfApi.model_info`` reads."""
        commit = self.fake._revision(repo, rev)
        return (
            200,
            {
                "id": repo.repo_id,
                "modelId": repo.repo_id,
                "private": repo.private,
                "sha": commit.oid,
                "siblings": [{"rfilename": p} for p in sorted(commit.files)],
                "tags": [],
                "downloads": 0,
                "likes": 0,
            },
            None,
            None,
        )

    def _repo_route(self, repo, verb, method, rest, body, endpoint):
        """/api/models/<repo>/<verb>/...: refs, branches, tags, trees, paths-info, preupload and commits (None: no
        route for this method)."""
        fake = self.fake
        if verb == "refs" and method == "GET":

            def refs(kind, items):
                return [
                    {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid} for n, oid in sorted(items.items())
                ]

            payload = {
                "branches": refs("heads", repo.branches),
                "tags": refs("tags", repo.tags),
                "converts": [],
                "pullRequests": [],
            }
            return 200, payload, None, None
        if verb == "branch":
            return self._branch(repo, method, rest, body)
        if verb == "tag":
            return self._tag(repo, method, rest, body)
        if verb == "tree" and method == "GET":
            rev, _, prefix = rest.partition("/")
            return 200, self._tree(fake._revision(repo, rev), prefix), None, None
        if verb == "paths-info" and method == "POST":
            paths = self._form_or_json(body, "paths")
            commit = fake._revision(repo, rest)
            return 200, [self._file_entry(p, commit.files[p]) for p in paths if p in commit.files], None, None
        if verb == "preupload" and method == "POST":
            return self._preupload(repo, rest, json.loads(body))
        if verb == "commit" and method == "POST":
            return self._commit(repo, rest, body, endpoint)
        return None

    def _lfs_route(self, method, path, body, endpoint, authorized):
        """The LFS protocol: the batch call, uploads of objects and their verification (None: not an LFS route)."""
        fake = self.fake
        m = re.fullmatch(rf"/{_REPO}\.git/info/lfs/objects/batch", path)
        if m and method == "POST":
            fake._repo(m["repo"], authorized)
            return self._lfs_batch(m["repo"], json.loads(body), endpoint)
        m = re.fullmatch(rf"/_lfs/{_REPO}/(?P<oid>[0-9a-f]{{64}})", path)
        if m and method == "PUT":
            if hashlib.sha256(body).hexdigest() != m["oid"]:
                raise HubError(400, "uploaded content does not match its sha256")
            fake.lfs_store[m["oid"]] = body
            fake.lfs_uploads.append(m["oid"])
            return 200, None, None, b""
        m = re.fullmatch(rf"/_lfs_verify/{_REPO}", path)
        if m and method == "POST":
            info = json.loads(body)
            stored = fake.lfs_store.get(info["oid"])
            if stored is None or len(stored) != info["size"]:
                raise HubError(404, "object not found")
            return 200, {}, None, None
        return None

    @staticmethod
    def _form_or_json(body: bytes, key: str) -> list[str]:
        try:
            return json.loads(body)[key]
        except (ValueError, KeyError):
            return parse_qs(body.decode()).get(key, [])

    def _validate_yaml(self, payload):
        from huggingface_hub import ModelCard

        try:
            ModelCard(payload["content"])
        except Exception as error:  # the Hub answers 400 with a list of errors
            return 400, {"errors": [{"message": str(error)}]}, None, None
        return 200, {"errors": [], "warnings": []}, None, None

    def _create_repo(self, payload, endpoint):
        fake = self.fake
        namespace = payload.get("organization") or fake.user
        if namespace != fake.user and namespace not in fake.orgs:
            raise HubError(403, f"You don't have the rights to create a model under the namespace {namespace!r}")
        repo_id = f"{namespace}/{payload['name']}"
        if repo_id in fake.repos:
            raise HubError(409, "You already created this model repo", extra={"url": f"{endpoint}/{repo_id}"})
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        repo = Repo(repo_id=repo_id, private=private)
        first = fake._new_commit(
            repo, None, "initial commit", {".gitattributes": StoredFile(GITATTRIBUTES, size=len(GITATTRIBUTES))}
        )
        repo.branches["main"] = first.oid
        fake.repos[repo_id] = repo
        return 200, {"url": f"{endpoint}/{repo_id}", "name": repo_id, "id": repo_id}, None, None

    def _branch(self, repo, method, branch, body):
        start = (json.loads(body or b"{}").get("startingPoint") or "main") if method == "POST" else None
        return self._ref(repo.branches, "Branch", repo, method, branch, start)

    def _tag(self, repo, method, rest, body):
        if method == "POST":  # POST /tag/{revision} {"tag": name}; DELETE /tag/{name}
            return self._ref(repo.tags, "Tag", repo, method, json.loads(body)["tag"], rest)
        return self._ref(repo.tags, "Tag", repo, method, rest, None)

    def _ref(self, refs, kind, repo, method, name, start):
        if method == "POST":
            if name in refs:
                raise HubError(409, f"{kind} {name} already exists")
            refs[name] = self.fake._revision(repo, start).oid
            return 200, {}, None, None
        if method == "DELETE":
            if name not in refs:
                raise HubError(404, f"Invalid rev id: {name}", "RevisionNotFound")
            del refs[name]
            return 200, {}, None, None
        raise HubError(405, "method not allowed")

    @staticmethod
    def _file_entry(path: str, stored: StoredFile) -> dict:
        entry = {"type": "file", "oid": stored.oid, "size": stored.size, "path": path}
        if stored.lfs_sha256 is not None:
            entry["lfs"] = {
                "oid": stored.lfs_sha256,
                "size": stored.size,
                "pointerSize": len(lfs_pointer(stored.lfs_sha256, stored.size)),
            }
        return entry

    def _tree(self, commit: Commit, prefix: str) -> list[dict]:
        prefix = prefix.strip("/")
        entries, folders = [], set()
        for path in sorted(commit.files):
            if prefix and not path.startswith(prefix + "/"):
                continue
            relative_parts = path.split("/")
            for depth in range(len(prefix.split("/")) if prefix else 0, len(relative_parts) - 1):
                folders.add("/".join(relative_parts[: depth + 1]))
            entries.append(self._file_entry(path, commit.files[path]))
        entries += [
            {"type": "directory", "oid": hashlib.sha1(f.encode()).hexdigest(), "size": 0, "path": f}
            for f in sorted(folders)
        ]
        return entries

    def _preupload(self, repo, revision, payload):
        commit = repo.resolve(revision)  # a branch that does not exist yet has no remote files
        answers = []
        for item in payload["files"]:
            sample = base64.b64decode(item["sample"])
            lfs = item["path"].endswith(LFS_SUFFIXES) or item["size"] > LFS_SIZE_THRESHOLD or b"\0" in sample
            answer = {"path": item["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False}
            existing = commit.files.get(item["path"]) if commit else None
            if existing is not None:
                answer["oid"] = existing.lfs_sha256 or existing.oid
            answers.append(answer)
        return 200, {"files": answers, "commitOid": commit.oid if commit else None}, None, None

    def _lfs_batch(self, repo_id, payload, endpoint):
        objects = []
        for obj in payload["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.fake.lfs_store:
                entry["actions"] = {
                    "upload": {"href": f"{endpoint}/_lfs/{quote(repo_id)}/{obj['oid']}"},
                    "verify": {"href": f"{endpoint}/_lfs_verify/{quote(repo_id)}"},
                }
            objects.append(entry)
        return 200, {"transfer": "basic", "objects": objects}, None, None

    def _commit(self, repo, branch, body, endpoint):
        fake = self.fake
        branch = unquote(branch)
        if branch not in repo.branches:
            raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0]["key"] != "header":
            raise HubError(400, "commit payload must start with a header line")
        header = lines[0]["value"]
        parent = repo.commits[repo.branches[branch]]
        if header.get("parentCommit") and header["parentCommit"] != parent.oid:
            raise HubError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(parent.files)
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                content = base64.b64decode(value["content"])
                files[value["path"]] = StoredFile(content, size=len(content))
            elif key == "lfsFile":
                data = fake.lfs_store.get(value["oid"])
                if data is None:
                    raise HubError(422, f"LFS object {value['oid']} of {value['path']} was not uploaded")
                files[value["path"]] = StoredFile(None, lfs_sha256=value["oid"], size=len(data))
            elif key == "deletedFile":
                if value["path"] not in files:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                del files[value["path"]]
            elif key == "deletedFolder":
                files = {p: f for p, f in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
            else:
                raise HubError(400, f"unknown commit operation {key!r}")
        commit = fake._new_commit(repo, parent, header["summary"], files)
        repo.branches[branch] = commit.oid
        fake.commit_messages.append((repo.repo_id, branch, header["summary"]))
        return (
            200,
            {
                "success": True,
                "commitOid": commit.oid,
                "commitUrl": f"{endpoint}/{repo.repo_id}/commit/{commit.oid}",
                "pullRequestUrl": None,
            },
            None,
            None,
        )

    def _resolve(self, repo_id, revision, file_path, authorized):
        fake = self.fake
        repo = fake._repo(repo_id, authorized)
        commit = fake._revision(repo, revision)
        stored = commit.files.get(file_path)
        if stored is None:
            raise HubError(404, f"Entry not found: {file_path}", "EntryNotFound")
        content = stored.content if stored.lfs_sha256 is None else fake.lfs_store[stored.lfs_sha256]
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{stored.lfs_sha256 or stored.oid}"'}
        if stored.lfs_sha256 is not None:
            headers["X-Linked-Etag"] = f'"{stored.lfs_sha256}"'
            headers["X-Linked-Size"] = str(stored.size)
        return 200, None, headers, content
