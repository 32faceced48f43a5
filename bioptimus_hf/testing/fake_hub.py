"""A loopback stand-in for the Hugging Face Hub's HTTP API, for tests and benchmarks (no network): what
``huggingface_hub.HfApi`` sends to publish, and file resolution for ``from_pretrained``. Not faked: Xet, multipart
LFS, pull requests, pagination. ``fail(...)`` injects failures, ``gate`` holds requests; ``requests``, ``bodies``,
``lfs_uploads`` and ``commit_messages`` record what was asked. It binds 127.0.0.1 and stops after ``lifetime_s``."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote, urlsplit


GITATTRIBUTES = b"".join(
    b"*%s filter=lfs diff=lfs merge=lfs -text\n" % s for s in (b".bin", b".pt", b".safetensors", b".h5")
)
LFS_SUFFIXES = (".bin", ".pt", ".safetensors", ".h5")
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
_REPO = r"(?P<repo>[\w.\-]+/[\w.\-]+)"


def git_blob_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class StoredFile:
    content: bytes | None  # a regular file's content; None for an LFS file
    lfs_sha256: str | None = None
    size: int = 0

    @property
    def pointer(self) -> bytes:
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.lfs_sha256}\nsize {self.size}\n".encode()

    @property
    def oid(self) -> str:
        return git_blob_oid(self.content if self.lfs_sha256 is None else self.pointer)


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
        return self.commits.get(oid or revision)


class HubError(Exception):
    def __init__(self, status: int, message: str, error_code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.error_code, self.extra = status, message, error_code, extra or {}


class FakeHub:
    """Start with ``with FakeHub(token=...) as hub:``; ``hub.url`` is the endpoint."""

    def __init__(self, token: str | None = None, user: str = "fake-user", lifetime_s: float = 120.0):
        self.token, self.user, self.lifetime_s = token, user, lifetime_s
        self.repos: dict[str, Repo] = {}
        self.lfs_store: dict[str, bytes] = {}
        self.lfs_uploads: list[str] = []
        self.requests: list[tuple[str, str, int]] = []
        self.bodies: list[bytes] = []
        self.commit_messages: list[tuple[str, str, str]] = []  # (repo, branch, summary)
        self.failures: list[list] = []  # [method, path regex, status, times left, body regex or None]
        self.gate: threading.Event | None = None  # requests wait (at most 30 s) until it is set
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._commits = 0

    def __enter__(self) -> "FakeHub":
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"fake": self}))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)  # stops by itself even if a test hangs
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._timer.cancel()
        if self._server is not None:
            server, self._server = self._server, None
            server.shutdown()
            server.server_close()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def fail(
        self, method: str, path_pattern: str, status: int = 500, times: int = 1, body_pattern: str | None = None
    ) -> None:
        """Answer the next ``times`` requests matching (method, regex on the path[, regex on the body]) with
        ``status``."""
        with self._lock:
            self.failures.append([method, path_pattern, status, times, body_pattern])

    def files(self, repo_id: str, revision: str) -> dict[str, bytes]:
        """The content of every file at a revision (LFS files resolved from the LFS store)."""
        commit = self.repos[repo_id].resolve(revision)
        return {path: self._content(f) for path, f in commit.files.items()}

    def count(self, method: str, pattern: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and re.search(pattern, p))

    def _content(self, stored: StoredFile) -> bytes:
        return stored.content if stored.lfs_sha256 is None else self.lfs_store[stored.lfs_sha256]

    def _new_commit(self, repo: Repo, parent: Commit | None, message: str, files: dict[str, StoredFile]) -> Commit:
        self._commits += 1
        listing = json.dumps(sorted((p, f.oid) for p, f in files.items()))
        key = f"{repo.repo_id}|{parent.oid if parent else ''}|{message}|{listing}|{self._commits}"
        commit = Commit(hashlib.sha1(key.encode()).hexdigest(), parent.oid if parent else None, message, files)
        repo.commits[commit.oid] = commit
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

    def _injected_failure(self, method: str, path: str, body: bytes) -> None:
        for failure in self.failures:
            verb, pattern, status, times, body_pattern = failure
            if times > 0 and verb == method and re.search(pattern, path):
                if body_pattern is None or re.search(body_pattern, body.decode("utf-8", "replace")):
                    failure[3] -= 1
                    raise HubError(status, "injected failure")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():  # streamed uploads
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, method: str, status: int, payload=None, headers: dict | None = None, raw: bytes | None = None):
        body = raw if raw is not None else (json.dumps(payload).encode() if payload is not None else b"")
        self.send_response(status)
        for key, value in (({"Content-Type": "application/json"} if raw is None else {}) | (headers or {})).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)

    def _dispatch(self) -> None:
        fake, method = self.fake, self.command
        path = unquote(urlsplit(self.path).path)
        body = self._body() if method in ("POST", "PUT") else b""
        if body:
            with fake._lock:
                fake.bodies.append(body)
        if fake.gate is not None:
            fake.gate.wait(timeout=30)
        status = 500
        try:
            with fake._lock:
                fake._injected_failure(method, path, body)
                status, payload, headers, raw = self._route(method, path, body)
            self._send(method, status, payload, headers, raw)
        except HubError as error:
            status = error.status
            headers = {"X-Error-Code": error.error_code} if error.error_code else {}
            self._send(
                method, status, {"error": error.message, **error.extra}, headers | {"X-Error-Message": error.message}
            )
        except Exception as error:  # a bug of the fake's: visible as a 500 with the message
            self._send(method, 500, {"error": f"fake hub error: {error!r}"})
        finally:
            with fake._lock:
                fake.requests.append((method, path, status))

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _dispatch

    def _route(self, method, path, body):
        """``(status, JSON payload, headers, raw body)`` of one request."""
        fake = self.fake
        authorized = fake.token is None or self.headers.get("Authorization") == f"Bearer {fake.token}"
        endpoint = f"http://{self.headers.get('Host')}"
        if method not in ("GET", "HEAD") and not authorized and not path.startswith(("/api/validate-yaml", "/_lfs")):
            raise HubError(401, "Invalid credentials in Authorization header")
        if method == "POST" and path == "/api/validate-yaml":
            return self._validate_yaml(json.loads(body))
        if method == "POST" and path == "/api/repos/create":
            return self._create_repo(json.loads(body), endpoint)
        m = re.fullmatch(rf"/api/models/{_REPO}(?:/revision/(?P<rev>.+))?", path)
        if m and method == "GET":
            return self._model_info(fake._repo(m["repo"], authorized), m["rev"] or "main")
        m = re.fullmatch(
            rf"/api/models/{_REPO}/(?P<verb>refs|branch|tag|tree|preupload|commit)(?:/(?P<rest>.*))?", path
        )
        if m:
            answer = self._repo_route(fake._repo(m["repo"], authorized), m["verb"], method, m["rest"] or "", body)
            if answer is not None:
                return answer
        answer = self._lfs_route(method, path, body, endpoint, authorized)
        if answer is not None:
            return answer
        m = re.fullmatch(rf"/{_REPO}/resolve/(?P<rev>[^/]+)/(?P<file>.+)", path)
        if m and method in ("GET", "HEAD"):
            return self._resolve(fake._repo(m["repo"], authorized), m["rev"], m["file"])
        raise HubError(404, f"fake hub: no route for {method} {path}")

    def _model_info(self, repo, rev):
        """What ``HfApi.model_info`` reads."""
        commit = self.fake._revision(repo, rev)
        siblings = [{"rfilename": p} for p in sorted(commit.files)]
        info = {"id": repo.repo_id, "modelId": repo.repo_id, "private": repo.private, "sha": commit.oid}
        return 200, info | {"siblings": siblings, "tags": [], "downloads": 0, "likes": 0}, None, None

    def _repo_route(self, repo, verb, method, rest, body):
        """``/api/models/<repo>/<verb>/...``: refs, branches, tags, trees, preupload and commits (None: no route for
        this method)."""
        if verb == "refs" and method == "GET":

            def refs(kind, items):
                return [
                    {"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid} for n, oid in sorted(items.items())
                ]

            payload = {"branches": refs("heads", repo.branches), "tags": refs("tags", repo.tags)}
            return 200, payload | {"converts": [], "pullRequests": []}, None, None
        if verb == "branch" and method == "POST":
            return self._ref(
                repo.branches, "Branch", repo, method, rest, json.loads(body or b"{}").get("startingPoint")
            )
        if verb in ("branch", "tag") and method == "DELETE":
            return self._ref(repo.branches if verb == "branch" else repo.tags, verb.title(), repo, method, rest, None)
        if verb == "tag" and method == "POST":  # POST /tag/{revision} {"tag": name}
            return self._ref(repo.tags, "Tag", repo, method, json.loads(body)["tag"], rest)
        if verb == "tree" and method == "GET":
            rev, _, prefix = rest.partition("/")
            return 200, self._tree(self.fake._revision(repo, rev), prefix), None, None
        if verb == "preupload" and method == "POST":
            return self._preupload(repo, rest, json.loads(body))
        if verb == "commit" and method == "POST":
            return self._commit(repo, rest, body)
        return None

    def _lfs_route(self, method, path, body, endpoint, authorized):
        """The LFS protocol: the batch call, object uploads and their verification (None: not an LFS route)."""
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
        if re.fullmatch(rf"/_lfs_verify/{_REPO}", path) and method == "POST":
            info = json.loads(body)
            if info["oid"] not in fake.lfs_store or len(fake.lfs_store[info["oid"]]) != info["size"]:
                raise HubError(404, "object not found")
            return 200, {}, None, None
        return None

    def _validate_yaml(self, payload):
        from huggingface_hub import ModelCard

        try:
            ModelCard(payload["content"])
        except Exception as error:  # the Hub answers 400 with a list of errors
            return 400, {"errors": [{"message": str(error)}]}, None, None
        return 200, {"errors": [], "warnings": []}, None, None

    def _create_repo(self, payload, endpoint):
        fake = self.fake
        repo_id = f"{payload.get('organization') or fake.user}/{payload['name']}"
        if repo_id in fake.repos:
            raise HubError(409, "You already created this model repo", extra={"url": f"{endpoint}/{repo_id}"})
        repo = Repo(repo_id, private=payload.get("visibility") == "private" or bool(payload.get("private")))
        attributes = StoredFile(GITATTRIBUTES, size=len(GITATTRIBUTES))
        repo.branches["main"] = fake._new_commit(repo, None, "initial commit", {".gitattributes": attributes}).oid
        fake.repos[repo_id] = repo
        return 200, {"url": f"{endpoint}/{repo_id}", "name": repo_id, "id": repo_id}, None, None

    def _ref(self, refs, kind, repo, method, name, start):
        if method == "POST":
            if name in refs:
                raise HubError(409, f"{kind} {name} already exists")
            refs[name] = self.fake._revision(repo, start or "main").oid
        elif name not in refs:
            raise HubError(404, f"Invalid rev id: {name}", "RevisionNotFound")
        else:
            del refs[name]
        return 200, {}, None, None

    @staticmethod
    def _file_entry(path: str, stored: StoredFile) -> dict:
        entry = {"type": "file", "oid": stored.oid, "size": stored.size, "path": path}
        if stored.lfs_sha256 is not None:
            entry["lfs"] = {"oid": stored.lfs_sha256, "size": stored.size, "pointerSize": len(stored.pointer)}
        return entry

    def _tree(self, commit: Commit, prefix: str) -> list[dict]:
        """The files under ``prefix`` (folders are not listed: no caller of this fake's reads them)."""
        prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        return [self._file_entry(path, f) for path, f in sorted(commit.files.items()) if path.startswith(prefix)]

    def _preupload(self, repo, revision, payload):
        """Each file's upload mode and the oid the revision holds of it (a branch not yet created holds nothing)."""
        commit = repo.resolve(revision)
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

    def _commit(self, repo, branch, body):
        """An NDJSON commit: a header line, then one line per file added, LFS file added or file deleted."""
        fake = self.fake
        branch = unquote(branch)
        if branch not in repo.branches:
            raise HubError(404, f"Invalid rev id: {branch}", "RevisionNotFound")
        lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
        if not lines or lines[0]["key"] != "header":
            raise HubError(400, "commit payload must start with a header line")
        header, parent = lines[0]["value"], repo.commits[repo.branches[branch]]
        if header.get("parentCommit") and header["parentCommit"] != parent.oid:
            raise HubError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(parent.files)
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                content = base64.b64decode(value["content"])
                files[value["path"]] = StoredFile(content, size=len(content))
            elif key == "lfsFile":
                if value["oid"] not in fake.lfs_store:
                    raise HubError(422, f"LFS object {value['oid']} of {value['path']} was not uploaded")
                files[value["path"]] = StoredFile(None, value["oid"], size=len(fake.lfs_store[value["oid"]]))
            elif key == "deletedFile":
                if files.pop(value["path"], None) is None:
                    raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
            else:
                raise HubError(400, f"unknown commit operation {key!r}")
        commit = fake._new_commit(repo, parent, header["summary"], files)
        repo.branches[branch] = commit.oid
        fake.commit_messages.append((repo.repo_id, branch, header["summary"]))
        url = f"http://{self.headers.get('Host')}/{repo.repo_id}/commit/{commit.oid}"
        return 200, {"success": True, "commitOid": commit.oid, "commitUrl": url, "pullRequestUrl": None}, None, None

    def _resolve(self, repo, revision, file_path):
        commit = self.fake._revision(repo, revision)
        stored = commit.files.get(file_path)
        if stored is None:
            raise HubError(404, f"Entry not found: {file_path}", "EntryNotFound")
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{stored.lfs_sha256 or stored.oid}"'}
        if stored.lfs_sha256 is not None:
            headers |= {"X-Linked-Etag": f'"{stored.lfs_sha256}"', "X-Linked-Size": str(stored.size)}
        return 200, None, headers, self.fake._content(stored)
