"""The optional LLM compressor against a real local HTTP server; every failure falls back to rules."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from graphmem.capture.compress import compress_session
from graphmem.capture.event import HookEvent
from graphmem.capture.llm import LLMCompressor, build_prompt, compress_with_fallback, parse_reply

GOOD_ITEMS = {"items": [
    {"kind": "summary", "title": "Session: fixed the orders tests", "body": "Goal: fix pytest -k orders.",
     "evidence": [1]},
    {"kind": "pitfall", "title": "KeyError 'DATABASE_URL' in `pytest -k orders`: fixed by a conftest fixture",
     "body": "tests/conftest.py sets DATABASE_URL", "files": ["tests/conftest.py"], "symbols": ["database_url"],
     "confidence": 0.95, "evidence": [2, 3, 99]},
    {"kind": "Convention", "title": "Use pnpm, not npm, for the admin frontend", "confidence": 0.9},
]}
NO_SUMMARY = {"items": [GOOD_ITEMS["items"][1]]}
BAD_KIND = {"items": [{"kind": "rumour", "title": "something"}]}


class Handler(BaseHTTPRequestHandler):
    """Behaves by path: good, fenced, nosummary, badjson, invalid, notjsonbody, 500, slow."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        Handler.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
        mode = self.path.strip("/").split("/")[0]
        if mode == "500":
            return self._send(500, b'{"error": "boom"}')
        if mode == "slow":
            time.sleep(1.5)
        content = {
            "good": json.dumps(GOOD_ITEMS), "slow": json.dumps(GOOD_ITEMS),
            "fenced": "Here you go:\n```json\n" + json.dumps(GOOD_ITEMS) + "\n```",
            "nosummary": json.dumps(NO_SUMMARY), "empty": '{"items": []}',
            "badjson": "{'items': [oops", "invalid": json.dumps(BAD_KIND),
        }.get(mode)
        if mode == "notjsonbody":
            return self._send(200, b"<html>gateway</html>")
        reply = {"id": "chatcmpl-1", "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                              "finish_reason": "stop"}]}
        self._send(200, json.dumps(reply).encode())

    def _send(self, status: int, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (timeout test)
            pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


SECRET = "ghp_Zt4Qm8Wc2Lr6Yp0Kx3Nv7Bd1Hs5Fg9Ja2EoU"


def session() -> list[HookEvent]:
    base = {"session_id": "s-llm", "project": "/proj", "cwd": "/proj", "agent": "claude-code"}
    return [
        HookEvent(event="user-prompt", text="pytest -k orders fails. We use pnpm, not npm, for the admin frontend.",
                  ts=1.0, id="p1", **base),
        HookEvent(event="post-tool", tool="Bash", command="pytest -k orders", is_error=True, exit_code=1,
                  text="E   KeyError: 'DATABASE_URL'\n1 failed", ts=2.0, id="b1", **base),
        HookEvent(event="post-tool", tool="Edit", files=["/proj/tests/conftest.py"],
                  text='+    monkeypatch.setenv("DATABASE_URL", "sqlite://")', ts=3.0, id="e1", **base),
        HookEvent(event="pre-tool", tool="Bash", command="pytest -k orders", ts=3.5, id="pre", **base),
        HookEvent(event="post-tool", tool="Bash", command="pytest -k orders", text="7 passed", ts=4.0, id="b2",
                  **base),
    ]


def rule_titles() -> list[str]:
    return [d.title for d in compress_session(session())]


def test_good_reply_becomes_llm_drafts(server: str) -> None:
    llm = LLMCompressor(f"{server}/good/v1", model="tiny", api_key="k-123", timeout=5)
    drafts, path = compress_with_fallback(session(), llm=llm)
    assert path == "llm" and llm.last_error == ""
    assert [d.kind for d in drafts] == ["summary", "pitfall", "convention"]
    pitfall = drafts[1]
    assert pitfall.source == "llm" and pitfall.confidence == 0.8  # capped: nothing verified it
    assert pitfall.files == ["tests/conftest.py"] and pitfall.observation_ids == ["b1", "e1"]
    rules_summary = next(d for d in compress_session(session()) if d.kind == "summary")
    assert drafts[0].key == rules_summary.key  # one summary per session whichever path wrote it
    request = Handler.requests[-1]
    assert request["path"] == "/good/v1/chat/completions"
    assert request["body"]["model"] == "tiny"
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    assert request["headers"]["Authorization"] == "Bearer k-123"
    user = request["body"]["messages"][1]["content"]
    assert "[2] $ pytest -k orders → FAILED exit 1" in user and "pre-tool" not in user


def test_fenced_reply_is_accepted(server: str) -> None:
    drafts, path = compress_with_fallback(session(), llm=LLMCompressor(f"{server}/fenced/v1", timeout=5))
    assert path == "llm" and len(drafts) == 3


def test_reply_without_summary_gets_the_rules_summary(server: str) -> None:
    drafts, path = compress_with_fallback(session(), llm=LLMCompressor(f"{server}/nosummary/v1", timeout=5))
    assert path == "llm"
    assert [d.kind for d in drafts] == ["summary", "pitfall"] and drafts[0].source == "rule"


@pytest.mark.parametrize("mode", ["badjson", "invalid", "500", "notjsonbody", "slow", "empty"])
def test_every_failure_falls_back_to_rules(server: str, mode: str) -> None:
    llm = LLMCompressor(f"{server}/{mode}/v1", timeout=0.5)
    start = time.monotonic()
    drafts, path = compress_with_fallback(session(), llm=llm)
    assert time.monotonic() - start < 1.4
    assert path == "rules"
    assert [d.title for d in drafts] == rule_titles()
    assert (llm.last_error != "") is (mode != "empty")


def test_unreachable_endpoint_falls_back() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    llm = LLMCompressor(f"http://127.0.0.1:{port}/v1", timeout=1)
    drafts, path = compress_with_fallback(session(), llm=llm)
    assert path == "rules" and "URLError" in llm.last_error and drafts


def test_no_llm_means_rules() -> None:
    drafts, path = compress_with_fallback(session())
    assert path == "rules" and [d.title for d in drafts] == rule_titles()


def test_configuration_from_env() -> None:
    assert LLMCompressor.from_env({}) is None
    assert LLMCompressor.from_env({"GRAPHMEM_LLM_URL": "  "}) is None
    llm = LLMCompressor.from_env({"GRAPHMEM_LLM_URL": "http://127.0.0.1:11434/v1/",
                                  "GRAPHMEM_LLM_MODEL": "qwen2.5-coder", "GRAPHMEM_LLM_API_KEY": "sk-x",
                                  "GRAPHMEM_LLM_TIMEOUT": "300"})
    assert llm is not None
    assert llm.endpoint == "http://127.0.0.1:11434/v1/chat/completions"
    assert (llm.model, llm.api_key, llm.timeout) == ("qwen2.5-coder", "sk-x", 20.0)
    assert "sk-x" not in repr(llm)
    default = LLMCompressor.from_env({"GRAPHMEM_LLM_URL": "https://api.example.invalid/v1/chat/completions",
                                      "GRAPHMEM_LLM_TIMEOUT": "soon"})
    assert default is not None and default.endpoint.endswith("/v1/chat/completions") and default.timeout == 20.0


def test_prompt_is_capped_and_redacted() -> None:
    events = session() + [
        HookEvent(event="post-tool", tool="Bash", command=f"echo {i}", text="y" * 5000, ts=10.0 + i,
                  session_id="s-llm", id=f"n{i}") for i in range(100)]
    transcript = json.dumps({"type": "user", "message": {"role": "user",
                                                         "content": f"FYI the token is {SECRET}"}}) + "\n"
    prompt = build_prompt(events, transcript, 8000)
    assert len(prompt) <= 8000
    assert "pytest -k orders fails" in prompt  # prompts survive the cut
    assert SECRET not in prompt and "[REDACTED:github_token]" in prompt


@pytest.mark.parametrize(
    "content",
    ['{"items": [{"kind": "pitfall"}]}', '{"items": "nope"}', "[]", "no json here",
     '{"items": [{"kind": "note", "title": "ok", "confidence": 7}]}'],
)
def test_reply_validation_rejects_bad_shapes(content: str) -> None:
    if content == "[]":
        assert parse_reply(content).items == []
        return
    with pytest.raises(ValueError):  # JSON and pydantic validation errors are ValueErrors
        parse_reply(content)
