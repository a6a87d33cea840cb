"""The HTTP side of a served reranker: POST JSON to an OpenAI-compatible server with bounded concurrency, timeouts
and retries, every request and answer kept in a journal so an interrupted audit resumes with identical rows.

Stability: internal (used by :mod:`invarirank.audit.served_model`).

**Retries.** A request that gets no answer (connection refused or reset, a timeout) or a 429/5xx status is sent
again after ``backoff * 2**i`` seconds (i = 0, 1, ...), at most ``retries`` more times; then the call fails with
one :class:`~invarirank.errors.InvariRankError` line naming the URL and the last error. Any other 4xx status fails
at once with the server's message: resending a request the server rejected cannot help.

**The journal** (``journal.jsonl`` in the run folder) holds one JSON line per answered request:
``{"key": sha256, "endpoint": ..., "request": body, "answer": response}``; ``key`` is the sha256 of the endpoint
and the canonical JSON of the body, which holds everything that decides the answer (model, prompt, sampling
parameters, seed). A request whose key is in the journal is answered from it and never sent again, so a rerun
after a crash re-sends only what was not answered, and every row is computed from the same stored answers.
Lines are appended and flushed one by one under a lock; a last line cut short by a crash is ignored on reading.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import InvariRankError

_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


def request_key(endpoint: str, body: dict[str, Any]) -> str:
    """The journal key of one request: sha256 of the endpoint and the body's canonical JSON."""
    text = json.dumps([endpoint, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Journal:
    """The requests and answers of a served audit (module docstring); ``path=None`` keeps them in memory only."""

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self.answers: dict[str, Any] = {}
        self.reused = 0
        if self.path is not None and self.path.is_file():
            with self.path.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        entry = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by a crash: that request is sent again
                    if isinstance(entry, dict) and "key" in entry and "answer" in entry:
                        self.answers[entry["key"]] = entry["answer"]

    def get(self, key: str) -> Any | None:
        return self.answers.get(key)

    def add(self, key: str, endpoint: str, body: dict[str, Any], answer: Any) -> None:
        line = json.dumps({"key": key, "endpoint": endpoint, "request": body, "answer": answer}, ensure_ascii=False)
        with self._lock:
            self.answers[key] = answer
            if self.path is None:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
                fh.flush()


class ServerClient:
    """POST JSON to ``base_url`` + endpoint (``base_url`` ends with ``/v1``), ``concurrency`` requests at a time."""

    def __init__(
        self,
        base_url: str,
        *,
        journal: Journal | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        retries: int = 4,
        backoff: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InvariRankError(f"--server {base_url!r}: expected an http:// or https:// URL ending in /v1")
        for name, value, low in (("concurrency", concurrency, 1), ("retries", retries, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvariRankError(f"served reranker: {name} = {value!r}; expected an integer >= {low}")
        if not timeout > 0:
            raise InvariRankError(f"served reranker: timeout = {timeout!r}; expected seconds > 0")
        self.base_url = base_url.rstrip("/")
        self.journal = journal or Journal(None)
        self.concurrency, self.timeout, self.retries, self.backoff = concurrency, float(timeout), retries, backoff
        self._sleep = sleep
        self.sent = 0

    def url(self, endpoint: str) -> str:
        return f"{self.base_url}/{endpoint.lstrip('/')}"

    def _post_once(self, url: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode("utf-8")
        req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 (the user's own server)
            return json.loads(resp.read().decode("utf-8"))

    def post(self, endpoint: str, body: dict[str, Any], *, journal: bool = True) -> Any:
        """One request's answer (from the journal when it holds it); retries as in the module docstring."""
        key = request_key(endpoint, body)
        if journal:
            kept = self.journal.get(key)
            if kept is not None:
                self.journal.reused += 1
                return kept
        url = self.url(endpoint)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            try:
                answer = self._post_once(url, body)
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300].replace("\n", " ")
                if exc.code not in _RETRY_STATUS:
                    raise ServerRejected(url, exc.code, detail) from None
                last = f"HTTP {exc.code}: {detail}"
                continue
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                last = str(getattr(exc, "reason", exc)) or type(exc).__name__
                continue
            except json.JSONDecodeError:
                raise InvariRankError(f"server {url}: the answer is not JSON") from None
            self.sent += 1
            if journal:
                self.journal.add(key, endpoint, body, answer)
            return answer
        raise InvariRankError(f"server {url}: no answer after {self.retries + 1} tries ({last})")

    def post_many(self, endpoint: str, bodies: Sequence[dict[str, Any]]) -> list[Any]:
        """The answers of ``bodies``, in order, sent ``concurrency`` at a time; the first failure is raised once
        every request in flight has ended (what was answered is in the journal)."""
        if self.concurrency == 1 or len(bodies) <= 1:
            return [self.post(endpoint, b) for b in bodies]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(self.post, endpoint, b) for b in bodies]
            return [f.result() for f in futures]

    def get(self, endpoint: str) -> Any:
        """One GET (no journal, one try): for the model list."""
        url = self.url(endpoint)
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as resp:  # noqa: S310
                return json.loads(resp.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, json.JSONDecodeError) as exc:
            raise InvariRankError(f"server {url}: {getattr(exc, 'reason', exc)}") from None


class ServerRejected(InvariRankError):
    """The server answered a request with a 4xx status that a retry cannot change."""

    def __init__(self, url: str, status: int, detail: str):
        super().__init__(f"server {url}: HTTP {status}: {detail}")
        self.status, self.detail = status, detail
