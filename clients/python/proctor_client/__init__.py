"""Sandboxes on a Proctor server: create, exec, files, leases.

Standard library only.  The server's routes are those of docs/api.md,
"Sandboxes"; every error the server answers becomes a ProctorError carrying
its stable code.
"""

from __future__ import annotations

import base64
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = [
    "Sandbox",
    "ExecResult",
    "FileEntry",
    "Listing",
    "ProctorError",
    "NotFound",
    "InvalidInput",
    "Unauthorized",
    "Forbidden",
    "Capacity",
    "BudgetExceeded",
    "Unavailable",
    "ConnectionFailed",
]


class ProctorError(Exception):
    """An answer of the server that is not a success.

    `status` is the HTTP status, `code` the stable error code of docs/api.md
    ("not_found", "capacity", ...), `message` the server's words.
    """

    def __init__(self, status: int, code: str, message: str,
                 retry_after: Optional[float] = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class NotFound(ProctorError):
    """No such sandbox or file in the token's course (or it ended)."""


class InvalidInput(ProctorError):
    """The request was refused as it is: a member, a path, a query."""


class Unauthorized(ProctorError):
    """No token, or not a valid one."""


class Forbidden(ProctorError):
    """The token's scope is too small."""


class Capacity(ProctorError):
    """No room for a sandbox now (every slot of the host taken, or the
    token's max_live_sandboxes live), also after waiting
    `wait_for_capacity_ms`; `retry_after` says when to try again."""


class BudgetExceeded(ProctorError):
    """The course's daily CPU cap, or the token's daily_spend_micros, is spent."""


class Unavailable(ProctorError):
    """The server cannot do it now (its store, or the sandbox's host)."""


class ConnectionFailed(ProctorError):
    """No answer came from the server."""


_BY_CODE = {
    "not_found": NotFound,
    "invalid_input": InvalidInput,
    "invalid_request": InvalidInput,
    "too_large": InvalidInput,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "capacity": Capacity,
    "budget_exceeded": BudgetExceeded,
    "unavailable": Unavailable,
}


@dataclass
class ExecResult:
    """One command's verdict (docs/run-result.md) and its output."""

    exit_code: Optional[int]
    signal: Optional[int]
    timed_out: bool
    status: str
    limit: Optional[str]
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    stdout_bytes: int
    stderr_bytes: int
    usage: Dict[str, Any]
    exec_id: int
    limits_hit: List[str] = field(default_factory=list)
    message: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def _from(cls, d: Dict[str, Any]) -> "ExecResult":
        return cls(
            exit_code=d.get("exit_code"),
            signal=d.get("signal"),
            timed_out=bool(d.get("timed_out")),
            status=d.get("status", ""),
            limit=d.get("limit"),
            stdout=d.get("stdout") or "",
            stderr=d.get("stderr") or "",
            stdout_truncated=bool(d.get("stdout_truncated")),
            stderr_truncated=bool(d.get("stderr_truncated")),
            stdout_bytes=int(d.get("stdout_bytes") or 0),
            stderr_bytes=int(d.get("stderr_bytes") or 0),
            usage=d.get("usage") or {},
            exec_id=int(d.get("exec_id") or 0),
            limits_hit=list(d.get("limits_hit") or []),
            message=d.get("message"),
            raw=d,
        )


@dataclass
class FileEntry:
    """One entry of a directory listing."""

    name: str
    type: str  # "file", "dir", "link" or "other"
    size: int
    mode: int
    mtime_ms: int


class Listing(List[FileEntry]):
    """A directory's entries; `truncated` when the server cut the listing
    (at 10,000 entries): never silently short."""

    truncated: bool = False


class _Client:
    def __init__(self, server: Optional[str], token: Optional[str],
                 timeout: float = 60.0) -> None:
        server = server or os.environ.get("PROCTOR_SERVER")
        token = token or os.environ.get("PROCTOR_TOKEN")
        if not server:
            raise ValueError("no server: pass server= or set PROCTOR_SERVER")
        if not token:
            raise ValueError("no token: pass token= or set PROCTOR_TOKEN")
        self.server = server.rstrip("/")
        self.token = token
        self.timeout = timeout

    def call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None,
             query: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None,
             idempotency_key: Optional[str] = None) -> Any:
        url = self.server + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if idempotency_key:
            req.add_header("Idempotency-Key", idempotency_key)
        try:
            with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                text = r.read()
        except urllib.error.HTTPError as err:
            raise _error_of(err) from None
        except (urllib.error.URLError, OSError) as err:
            raise ConnectionFailed(0, "connection_failed",
                                   f"{method} {url}: {err}") from None
        return json.loads(text) if text else None


def _error_of(err: urllib.error.HTTPError) -> ProctorError:
    code, message = "unknown", err.reason or ""
    try:
        doc = json.loads(err.read() or b"{}")
        code = doc["error"]["code"]
        message = doc["error"]["message"]
    except (ValueError, KeyError, TypeError):
        pass
    retry = err.headers.get("Retry-After") if err.headers else None
    cls = _BY_CODE.get(code, ProctorError)
    return cls(err.code, code, message, float(retry) if retry else None)


class _Files:
    """A sandbox's files: under /work and /tmp."""

    def __init__(self, sbx: "Sandbox") -> None:
        self._sbx = sbx

    def write(self, path: str, content: Union[bytes, str], executable: bool = False) -> int:
        """Write a file (its parents are made); returns its size."""
        if isinstance(content, str):
            content = content.encode()
        body: Dict[str, Any] = {"path": path, "executable": executable}
        if content:
            body["content_base64"] = base64.b64encode(content).decode()
        else:
            body["content"] = ""
        r = self._sbx._c.call("PUT", self._sbx._path("/files"), body)
        return int(r["size"])

    def read(self, path: str) -> bytes:
        r = self._sbx._c.call("GET", self._sbx._path("/files"), query={"path": path})
        return base64.b64decode(r.get("content_base64") or "")

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        return self.read(path).decode(encoding)

    def list(self, path: str = "/work") -> Listing:
        r = self._sbx._c.call("GET", self._sbx._path("/list"), query={"path": path})
        out = Listing(FileEntry(e["name"], e["type"], int(e["size"]), int(e["mode"]),
                                int(e["mtime_ms"])) for e in r.get("entries", []))
        out.truncated = bool(r.get("truncated"))
        return out

    def exists(self, path: str) -> bool:
        try:
            self.read(path)
            return True
        except NotFound:
            return False

    def upload(self, local_dir: str, remote_dir: str) -> int:
        """Write every regular file under local_dir below remote_dir; returns
        how many were written (modes' execute bits kept)."""
        n = 0
        for root, dirs, files in os.walk(local_dir):
            dirs.sort()
            for name in sorted(files):
                src = os.path.join(root, name)
                if not os.path.isfile(src) or os.path.islink(src):
                    continue
                rel = os.path.relpath(src, local_dir)
                with open(src, "rb") as f:
                    data = f.read()
                self.write(remote_dir.rstrip("/") + "/" + rel.replace(os.sep, "/"), data,
                           executable=os.access(src, os.X_OK))
                n += 1
        return n


class Sandbox:
    """A throwaway sandbox on the server, alive until killed or its lease ends.

    Use it as a context manager (`with Sandbox.create(...) as sbx:`), or call
    kill() / close() when done: nothing outlives its lease either way.
    """

    def __init__(self, client: _Client, info: Dict[str, Any]) -> None:
        self._c = client
        self._info = info
        self.id: int = int(info["id"])
        self.files = _Files(self)

    # ---- life ----

    @classmethod
    def create(cls, image: Optional[str] = None, *, vcpu: int = 1, memory_mib: int = 512,
               disk_mib: int = 256, network: str = "none", timeout_seconds: int = 300,
               labels: Optional[Mapping[str, str]] = None,
               env: Optional[Mapping[str, str]] = None, isolation: str = "jail",
               server: Optional[str] = None, token: Optional[str] = None,
               retries: int = 3, wait_for_capacity_ms: Optional[int] = None,
               max_cost_micros: Optional[int] = None) -> "Sandbox":
        """Create a sandbox.  Retried only when no answer came, with the same
        Idempotency-Key, so a retry never makes a second sandbox.

        `wait_for_capacity_ms` (0 to 600,000): when the host or the token
        has no room, wait in line that long for it (fairly: first come
        first served in a course, courses in turn) instead of failing at
        once with Capacity.  `max_cost_micros`: the sandbox is destroyed
        when its metered cost reaches this many millionths of a dollar
        (its info's "usage"."cost_micros"; "end_reason" then says so)."""
        c = _Client(server, token)
        body: Dict[str, Any] = {"vcpu": vcpu, "memory_mib": memory_mib, "disk_mib": disk_mib,
                                "network": network, "timeout_seconds": timeout_seconds,
                                "isolation": isolation}
        if wait_for_capacity_ms is not None:
            body["wait_for_capacity_ms"] = wait_for_capacity_ms
        if max_cost_micros is not None:
            body["max_cost_micros"] = max_cost_micros
        # The answer may take the whole wait: the HTTP timeout outlasts it.
        timeout = c.timeout + (wait_for_capacity_ms or 0) / 1000
        if image:
            body["image"] = image
        if labels:
            body["labels"] = dict(labels)
        if env:
            body["env"] = dict(env)
        key = str(uuid.uuid4())
        for attempt in range(retries + 1):
            try:
                return cls(c, c.call("POST", "/v1/sandboxes", body, idempotency_key=key,
                                     timeout=timeout))
            except ConnectionFailed:
                if attempt == retries:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")

    @classmethod
    def connect(cls, sandbox_id: int, *, server: Optional[str] = None,
                token: Optional[str] = None) -> "Sandbox":
        """A sandbox made elsewhere (another process), by its id."""
        c = _Client(server, token)
        return cls(c, c.call("GET", f"/v1/sandboxes/{int(sandbox_id)}"))

    @classmethod
    def list(cls, labels: Optional[Mapping[str, str]] = None, live: bool = True, *,
             server: Optional[str] = None, token: Optional[str] = None) -> List[Dict[str, Any]]:
        """The course's sandboxes (newest first), by one label if given."""
        c = _Client(server, token)
        query = {"live": "1" if live else "0"}
        if labels:
            if len(labels) != 1:
                raise ValueError("list by one label at most")
            (k, v), = labels.items()
            query["label"] = f"{k}:{v}"
        return c.call("GET", "/v1/sandboxes", query=query)["sandboxes"]

    def get_info(self) -> Dict[str, Any]:
        """State, labels, lease end, usage so far: "usage" has "cpu_seconds"
        (its commands'), "reserved_gib_seconds" (its memory over its life so
        far) and "cost_micros" (both priced, millionths of a dollar)."""
        self._info = self._c.call("GET", self._path(""))
        return self._info

    @property
    def cost_micros(self) -> int:
        """The metered cost so far, in millionths of a dollar (asks the server)."""
        return int(self.get_info()["usage"]["cost_micros"])

    def execs(self) -> List[Dict[str, Any]]:
        """Every command run in the sandbox, oldest first: argv, verdict,
        usage (not the output)."""
        out: List[Dict[str, Any]] = []
        after = 0
        while True:
            r = self._c.call("GET", self._path("/execs"), query={"after": str(after)})
            out.extend(r["execs"])
            if r.get("next_after") is None:
                return out
            after = int(r["next_after"])

    def kill(self) -> None:
        """Destroy the sandbox now (a sandbox already ended is left as it is)."""
        self._info = self._c.call("DELETE", self._path(""))

    close = kill

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.kill()
        except ProctorError:
            pass

    # ---- commands ----

    def exec(self, cmd: Union[Sequence[str], str], *, cwd: Optional[str] = None,
             env: Optional[Mapping[str, str]] = None, stdin: Union[bytes, str, None] = None,
             timeout_ms: int = 60_000, pids: Optional[int] = None,
             max_output_bytes: Optional[int] = None) -> ExecResult:
        """Run one command and wait for its verdict.

        `cmd` is an argv list (what grading loops should use: a file name a
        student chose cannot inject shell syntax) or one string run as
        `sh -c`.  A command past `timeout_ms` is killed with everything it
        started, and the result says `timed_out`."""
        body: Dict[str, Any] = {"timeout_ms": timeout_ms}
        if isinstance(cmd, str):
            body["command"] = cmd
        else:
            body["argv"] = list(cmd)
        if cwd is not None:
            body["cwd"] = cwd
        if env:
            body["env"] = dict(env)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        if data:  # empty input is no input
            body["stdin_base64"] = base64.b64encode(data).decode()
        if pids is not None:
            body["pids"] = pids
        if max_output_bytes is not None:
            body["max_output_bytes"] = max_output_bytes
        r = self._c.call("POST", self._path("/exec"), body,
                         timeout=timeout_ms / 1000 + 60)
        return ExecResult._from(r)

    # ---- helpers ----

    def _path(self, rest: str) -> str:
        return f"/v1/sandboxes/{self.id}{rest}"

    def __repr__(self) -> str:
        return f"Sandbox(id={self.id}, state={self._info.get('state')!r})"
