"""Optional LLM compression through any OpenAI-compatible endpoint, with the rules as fallback.

Configured by environment variables (off unless GRAPHMEM_LLM_URL is set):

* GRAPHMEM_LLM_URL: base URL of an OpenAI-compatible API (`http://127.0.0.1:11434/v1`,
  `https://api.openai.com/v1`); the request goes to `{base}/chat/completions`.
* GRAPHMEM_LLM_MODEL: model name (default `gpt-4o-mini`).
* GRAPHMEM_LLM_API_KEY: sent as `Authorization: Bearer …` when set.
* GRAPHMEM_LLM_TIMEOUT: seconds, at most 20 (the default).

Only urllib is used (no new dependency). The prompt is built from events that were redacted at
capture; transcript text is redacted here, the whole prompt is redacted once more and capped.
The reply must be JSON `{"items": [{kind, title, body, files, symbols, confidence, evidence}]}`
and is validated with pydantic. Any failure (network, HTTP status, timeout, bad JSON, validation)
makes `compress` return None, and `compress_with_fallback` then uses the rules.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphmem import env
from graphmem.capture.compress import KINDS, TITLE_MAX, Draft, compress_session, session_key
from graphmem.capture.event import HookEvent
from graphmem.kinds import WrittenKind
from graphmem.models import title_text

__all__ = ["LLMCompressor", "LLMReply", "compress_with_fallback"]

log = logging.getLogger(__name__)

MAX_TIMEOUT: float = env.VARIABLES["llm_timeout"].default
DEFAULT_MODEL: str = env.VARIABLES["llm_model"].default
DEFAULT_PROMPT_CHARS = 24_000
MAX_REPLY_BYTES = 2 * 1024 * 1024
LLM_MAX_CONFIDENCE = 0.8
LINE_CHARS = 700

SYSTEM_PROMPT = """You compress one AI coding-agent session into durable memory items for the next session.
You get numbered observations: user prompts, shell commands with their output and exit status,
file edits, and tool calls. Secrets were replaced by [REDACTED:...]; never try to restore them.

Return ONLY a JSON object: {"items": [{"kind": ..., "title": ..., "body": ..., "files": [...],
"symbols": [...], "confidence": 0.0-1.0, "evidence": [observation numbers]}]}

kind is one of: decision, pitfall, convention, env, task, fact, summary, note.
- pitfall: an error and how it was fixed ("KeyError 'X' in `cmd`: fixed by ... in file").
- task: something left unresolved or that the user asked to do later.
- convention / decision: what the user stated ("use X, not Y"; "we chose X because Y"); keep their words.
- env: versions, ports, env vars that must be set, paths that matter.
- fact / note: other durable facts about the project.
- summary: EXACTLY ONE item: the goal, what was done, what is still open.
Rules: one fact per item; title first states the conclusion, at most 160 characters; body gives
the supporting detail (error line, fix, command), at most 1500 characters; files relative to the
project root; skip anything trivial or not useful to a future session; do not invent facts."""


Kind = WrittenKind


class LLMItem(BaseModel):
    """One item as the model must return it."""

    model_config = ConfigDict(extra="ignore")

    kind: Kind
    title: str = Field(min_length=3, max_length=400)
    body: str = Field(default="", max_length=8000)
    files: list[str] = Field(default_factory=list, max_length=50)
    symbols: list[str] = Field(default_factory=list, max_length=50)
    confidence: float = Field(default=0.7, ge=0.0, le=1.0)
    evidence: list[int] = Field(default_factory=list, max_length=200)

    @field_validator("kind", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("title")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return title_text(value)


class LLMReply(BaseModel):
    """The whole reply."""

    model_config = ConfigDict(extra="ignore")

    items: list[LLMItem] = Field(max_length=200)


class LLMCompressor:
    """Compress a session with an OpenAI-compatible chat endpoint; None on any failure."""

    def __init__(self, url: str, model: str = DEFAULT_MODEL, api_key: str = "",
                 timeout: float = MAX_TIMEOUT, max_prompt_chars: int = DEFAULT_PROMPT_CHARS) -> None:
        self.url = url.strip()
        self.model = model or DEFAULT_MODEL
        self.api_key = api_key
        self.timeout = max(0.05, min(float(timeout), MAX_TIMEOUT))
        self.max_prompt_chars = max(2_000, int(max_prompt_chars))
        self.last_error = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LLMCompressor | None:
        """The compressor the environment configures, or None when GRAPHMEM_LLM_URL is unset."""
        url = env.text("llm_url", environ)
        if not url:
            return None
        return cls(url, model=env.text("llm_model", environ),
                   api_key=env.text("llm_api_key", environ),
                   timeout=env.number("llm_timeout", environ))

    @property
    def endpoint(self) -> str:
        base = self.url.rstrip("/")
        return base if base.endswith("/chat/completions") else f"{base}/chat/completions"

    def __repr__(self) -> str:  # never shows the key
        return f"LLMCompressor(endpoint={self.endpoint!r}, model={self.model!r})"

    # -- the one public verb ---------------------------------------------------------------

    def compress(self, events: Sequence[HookEvent], transcript: str | None = None) -> list[Draft] | None:
        """Drafts from the model, or None (and `last_error` says why) on any failure."""
        self.last_error = ""
        try:
            numbered = _numbered(events)
            prompt = build_prompt(numbered, transcript, self.max_prompt_chars)
            content = self._post(prompt)
            reply = parse_reply(content)
            return _drafts(reply, numbered)
        except Exception as exc:  # noqa: BLE001 - network, HTTP, timeout, JSON, validation: rules
            self.last_error = f"{type(exc).__name__}: {str(exc)[:300]}"
            log.info("LLM compression failed, using rules: %s", self.last_error)
            return None

    def _post(self, prompt: str) -> str:
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                         {"role": "user", "content": prompt}],
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "graphmem"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.endpoint, data=json.dumps(body).encode("utf-8"),
                                         headers=headers, method="POST")
        deadline = time.monotonic() + self.timeout
        with _opener(self.endpoint).open(request, timeout=self.timeout) as response:
            raw = _read(response, deadline)
        data = json.loads(raw.decode("utf-8", "replace"))
        content = data["choices"][0]["message"]["content"]
        if not isinstance(content, str):
            raise TypeError("reply content is not a string")
        return content


def _opener(url: str) -> urllib.request.OpenerDirector:
    """No proxy for loopback endpoints (a local model server), the environment's otherwise."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host in ("localhost", "127.0.0.1", "::1") or host.startswith("127."):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener()


def _read(response: Any, deadline: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("LLM reply took too long")
        chunk = response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise ValueError("LLM reply too large")
        chunks.append(chunk)


# ---------------------------------------------------------------------------------------------
# Prompt and reply
# ---------------------------------------------------------------------------------------------


def _numbered(events: Sequence[HookEvent]) -> list[HookEvent]:
    """Events worth showing, in time order, de-duplicated by id (pre-tool events add nothing)."""
    seen: set[str] = set()
    kept: list[tuple[float, int, HookEvent]] = []
    for i, ev in enumerate(events or ()):
        if not isinstance(ev, HookEvent) or ev.event == "pre-tool" or ev.id in seen:
            continue
        seen.add(ev.id)
        ts = ev.ts if isinstance(ev.ts, (int, float)) else 0.0
        kept.append((ts, i, ev))
    kept.sort(key=lambda t: (t[0], t[1]))
    return [ev for _, _, ev in kept]


def _clip(text: str, limit: int) -> str:
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} […] {text[-half:]}"


def _line(n: int, ev: HookEvent) -> tuple[int, str]:
    """(priority, text) for one observation; lower priority is dropped first."""
    text = ev.text if isinstance(ev.text, str) else ""
    files = ", ".join(f for f in (ev.files or []) if isinstance(f, str))
    if ev.event == "user-prompt":
        return 3, f"[{n}] USER: {_clip(text, LINE_CHARS * 2)}"
    if ev.command:
        status = ("FAILED" if ev.is_error or (ev.exit_code not in (None, 0)) else "ok")
        code = f" exit {ev.exit_code}" if ev.exit_code is not None else ""
        return (2 if status == "FAILED" else 1), f"[{n}] $ {_clip(ev.command, 300)} → {status}{code}\n{_clip(text, LINE_CHARS)}"
    if ev.tool in ("Edit", "MultiEdit", "Write", "NotebookEdit", "apply_patch"):
        return 2, f"[{n}] {ev.tool} {files}:\n{_clip(text, LINE_CHARS)}"
    if ev.tool:
        return 0, f"[{n}] {ev.tool} {files or _clip(json.dumps(ev.tool_input, default=str), 120)}"
    if ev.event in ("stop", "session-end", "pre-compact", "session-start"):
        detail = _clip(text, 400) if text else json.dumps(ev.extra, default=str)[:120]
        return 1, f"[{n}] {ev.event}: {detail}"
    return 0, f"[{n}] {ev.event}: {_clip(text, 200)}"


def build_prompt(events: Sequence[HookEvent], transcript: str | None, max_chars: int) -> str:
    """The user message: numbered observations (and the user's words from the transcript), capped."""
    from graphmem.capture.redact import redact

    lines = [_line(n, ev) for n, ev in enumerate(events, 1)]
    project = next((e.project or e.cwd for e in events if e.project or e.cwd), "")
    header = f"Project: {project}\nSession: {next((e.session_id for e in events if e.session_id), '')}\n"
    extra = ""
    if transcript:
        from graphmem.capture.transcript import parse_transcript

        said = [m.text for m in parse_transcript(transcript).user_prompts][:30]
        if said:
            extra = "\nUser messages from the transcript:\n" + "\n".join(f"- {_clip(t, 400)}" for t in said)
    budget = max_chars - len(header) - min(len(extra), max_chars // 4) - 200
    for floor in (0, 1, 2):  # drop reads, then successful commands, then everything but prompts
        if sum(len(t) + 1 for _, t in lines) <= budget:
            break
        lines = [(p, t) for p, t in lines if p > floor]
    body = "\n".join(t for _, t in lines)
    if len(body) > budget:
        head = budget // 3
        body = body[:head] + "\n[… observations omitted …]\n" + body[-(budget - head):]
    prompt = f"{header}Observations:\n{body}{extra[: max_chars // 4]}\n\nReturn the JSON object now."
    return redact(prompt)[:max_chars]


def parse_reply(content: str) -> LLMReply:
    """The validated reply; tolerates a ```json fence or prose around the object."""
    text = content.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    if not text.startswith(("{", "[")):
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ValueError("no JSON object in the reply")
        text = text[start : end + 1]
    data = json.loads(text)
    if isinstance(data, list):
        data = {"items": data}
    return LLMReply.model_validate(data)


_IMPORTANCE = {"summary": 0.7, "task": 0.8, "pitfall": 0.7, "decision": 0.8, "convention": 0.8,
               "env": 0.5, "fact": 0.6, "note": 0.5}


def _drafts(reply: LLMReply, events: list[HookEvent]) -> list[Draft]:
    session = next((e.session_id for e in events if e.session_id), "")
    drafts: list[Draft] = []
    seen: set[str] = set()
    summary_done = False
    for item in reply.items:
        if item.kind == "summary":
            if summary_done:
                continue
            summary_done = True
        ident = " ".join(re.findall(r"[a-z0-9_]+", item.title.lower()))
        # the summary shares the rules' key: one summary per session whichever path wrote it
        key = session_key(session, "summary") if item.kind == "summary" else session_key(
            session, "llm", f"{item.kind}\x1f{ident}")
        if key in seen:
            continue
        seen.add(key)
        ids = [events[n - 1].id for n in item.evidence if 0 < n <= len(events)]
        if not ids and item.kind == "summary":
            ids = [e.id for e in events if e.event == "user-prompt"][:5]
        title = item.title if len(item.title) <= TITLE_MAX else item.title[: TITLE_MAX - 1] + "…"
        drafts.append(Draft(
            kind=item.kind if item.kind in KINDS else "note", title=title, body=item.body[:1500],
            files=[f for f in item.files if isinstance(f, str) and f][:20],
            symbols=[s for s in item.symbols if isinstance(s, str) and s][:20],
            confidence=min(item.confidence, LLM_MAX_CONFIDENCE),
            importance=_IMPORTANCE.get(item.kind, 0.5), source="llm", key=key,
            observation_ids=list(dict.fromkeys(ids)), tags=["llm"]))
    return drafts


def compress_with_fallback(events: Sequence[HookEvent], transcript: str | None = None,
                           llm: LLMCompressor | None = None) -> tuple[list[Draft], str]:
    """Drafts and the path used: "llm" when the model answered usefully, else "rules"."""
    if llm is not None:
        drafts = llm.compress(events, transcript)
        if drafts:
            if not any(d.kind == "summary" for d in drafts):
                rules = compress_session(events, transcript=transcript)
                drafts = [d for d in rules if d.kind == "summary"] + drafts
            return drafts, "llm"
    return compress_session(events, transcript=transcript), "rules"
