"""A small OpenAI-compatible server on 127.0.0.1 for the served reranker's fast tests (the real one, vLLM, is in
``tests/audit/test_served_vllm.py``). It answers like vLLM does: ``GET /v1/models``, ``POST /tokenize`` (one token
per character: id = code point), ``POST /v1/completions`` (``logprob_token_ids`` → ``token_id:N`` keys; else a
top-k by token text) and ``POST /v1/chat/completions`` (the content ``chat`` returns).

The hidden preference: a candidate line ``[L] Title ...`` scores ``-len(title) + 0.01 * ord(title[0])``
(:func:`hidden_scores`), so a test knows every right answer.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_LINE = re.compile(r"^\[([^\]]+)\] (.*)$", re.M)


def hidden_scores(prompt: str) -> dict[str, float]:
    """Label → the fake model's log-prob-like score for the candidate lines in ``prompt``."""
    return {lab: -len(title) + 0.01 * ord(title[0]) for lab, title in _LINE.findall(prompt)}


def hidden_order(prompt: str) -> list[str]:
    """The labels by descending hidden score (ties: the earlier line)."""
    scores = hidden_scores(prompt)
    return sorted(scores, key=lambda lab: -scores[lab])


@dataclass
class FakeServer:
    model: str = "fake"
    fixed_ids: bool = True  # answer logprob_token_ids (else 400, as a server without the extension)
    tokenize: bool = True  # serve /tokenize (else 404)
    top_k_drop: tuple[str, ...] = ()  # labels left out of a top-k answer
    fail_first: int = 0  # answer 503 to this many POSTs first
    chat: Callable[[str], str] = lambda prompt: " > ".join(f"[{lab}]" for lab in hidden_order(prompt))
    finish_reason: str = "stop"
    posts: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def __enter__(self) -> FakeServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"data": [{"id": owner.model}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status, obj = owner.answer(self.path, body)
                self._send(status, obj)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path == "/tokenize":
            return (200, {"tokens": [ord(c) for c in body["prompt"]]}) if self.tokenize else (404, {"detail": "no"})
        self.posts.append(body)
        if self.fail_first > 0:
            self.fail_first -= 1
            return 503, {"error": "busy"}
        if path == "/v1/completions":
            scores = hidden_scores(body["prompt"])
            if "logprob_token_ids" in body:
                if not self.fixed_ids:
                    return 400, {"error": "unknown field logprob_token_ids"}
                top = {f"token_id:{i}": scores.get(chr(i), -30.0) for i in body["logprob_token_ids"]}
            else:
                top = {lab: s for lab, s in scores.items() if lab not in self.top_k_drop}
            return 200, {"choices": [{"text": "A", "logprobs": {"top_logprobs": [top]}}]}
        if path == "/v1/chat/completions":
            content = self.chat(body["messages"][-1]["content"])
            return 200, {"choices": [{"message": {"content": content}, "finish_reason": self.finish_reason}]}
        return 404, {"detail": f"no {path}"}
