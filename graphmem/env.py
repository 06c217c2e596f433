"""Every GRAPHMEM_* environment variable, declared once: name, type, default and meaning.

Stdlib only: the agent hook and the git hook read their variables here without pydantic, and
`Config` takes its fields' defaults and descriptions from the same table (`config=True` rows).
No other module reads a GRAPHMEM_* variable from the environment (tests/test_architecture.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

PREFIX = "GRAPHMEM_"
_OFF = frozenset({"", "0", "false", "no", "off"})


class Variable(NamedTuple):  # not a dataclass: importing dataclasses costs the hooks ~13 ms
    key: str            # GRAPHMEM_<KEY upper>; the Config field's name when `config`
    type: type
    default: Any        # a zero-argument callable: made on each use
    meaning: str
    config: bool = True

    @property
    def name(self) -> str:
        return PREFIX + self.key.upper()

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default


def default_embed_threads() -> int:
    """Half the machine's cores, between 1 and 2: a query embeds in ~60% of the time on two
    threads, but a second thread that has to wait for a busy core costs more than it gains."""
    return max(1, min(2, (os.cpu_count() or 1) // 2))


def _default_ttl_days() -> dict[str, float | None]:
    from graphmem.lifecycle import DEFAULT_TTL_DAYS
    return dict(DEFAULT_TTL_DAYS)


_V = Variable
VARIABLES: dict[str, Variable] = {v.key: v for v in (
    # Config's fields, in its order
    _V("home", Path, None, "root of all stores (default: the user data dir)"),
    _V("data_dir", Path, None, "this store's directory (default: per project)"),
    _V("cwd", Path, None, "where the project is looked up (default: cwd)"),
    _V("project", str, None, "explicit project label instead of the git root"),
    _V("engine", str, None, "graph database engine: 'kuzu' (default) or 'ladybug', Kuzu's "
       "maintained fork (pip install 'graphmem[ladybug]'); neither opens the other's graph file: "
       "after a switch, `graphmem rebuild` replays the journal"),
    _V("database_url", str, None, "a PostgreSQL server (with pgvector) that holds this project's "
       "memory instead of the embedded graph: postgresql://user@host:port/dbname (pip install "
       "'graphmem[postgres]'); the server's op log is the journal"),
    _V("visibility", str, "team", "on a PostgreSQL server, who sees the items you add: 'team' "
       "(everyone granted read on the project) or 'private' (only you)"),
    _V("brief_budget", int, 400, "token budget of the session-start brief"),
    _V("search_budget", int, 1500, "token budget of a search answer"),
    _V("inject_budget", int, 300, "token budget of what the prompt hook adds"),
    _V("inject_floor", float, 0.50, "relevance below which the prompt hook adds an item not: "
       "cosine between prompt and item + 0.6 x the share of the prompt's IDF weight in the "
       "item's words (calibrated on the session benchmark against other projects' prompts)"),
    _V("brief_line_tokens", int, 40, "max tokens of one brief line"),
    _V("max_item_chars", int, 32_000, "longest accepted item text"),
    _V("dedupe_similarity", float, 0.9, "cosine above which a new item merges into an old one"),
    _V("embed", bool, True, "compute embeddings (vector channel)"),
    _V("embed_model", str, "", "a sentence-transformers model (local path or cached name, loaded "
       "offline; needs graphmem[st]) to embed with instead of the built-in numpy MiniLM; a change "
       "re-embeds the store"),
    _V("embed_threads", int, default_embed_threads, "BLAS threads for embedding (default: half "
       "the cores, at most 2; two threads on a busy 2-core machine are slower than one)"),
    _V("weights", dict, dict, "JSON object of retrieval weights to override (fields of "
       "RetrievalWeights, e.g. {\"vector\": 0.8})"),
    _V("ttl_days", dict, _default_ttl_days, "JSON object: days an item of each kind lives unless "
       "pinned (0 or null: forever)"),
    _V("redact_extra", list, list, "JSON list of extra regexes to mask (group 1 when present); "
       "the agent hook applies them too"),
    _V("redact_allow", list, list, "JSON list of regexes never masked (matched against the whole "
       "flagged text); the agent hook applies them too"),
    _V("max_title_chars", int, 1_000, "longest imported title"),
    _V("max_tags", int, 50, "most tags an imported item may carry"),
    _V("max_name_chars", int, 1_000, "longest imported tag, file path or symbol name"),
    _V("max_links_per_item", int, 1_000, "most files, symbols, anchors, mentions or supersedes "
       "edges one imported item may carry"),
    _V("max_import_bytes", int, 200_000_000, "largest export file `import` reads"),
    _V("min_free_mb", int, 64, "free disk space (MB) a store keeps: below it writes are refused "
       "with exit 7 and reads still work"),
    _V("http_token", str, None, "bearer token `serve --http` requires (default: generated into "
       "the store's http.token, mode 0600)"),
    _V("http_allowed_hosts", list, list, "JSON list of names besides loopback a request's "
       "Host/Origin may carry (a TLS proxy's name with --allow-remote)"),
    # read where they act: the hooks, the owner process, the CLI's error path
    _V("owner", str, "auto", "'auto': use the store's owner process when one runs (and start one "
       "for the MCP server); 'always': start one if none runs; 'never': open the store directly",
       config=False),
    _V("owner_idle", float, 900.0, "seconds an owner process waits without a call before it "
       "exits", config=False),
    _V("open_wait", float, 10.0, "seconds a command waits for a store another process holds "
       "before it says the store is in use", config=False),
    _V("owner_warm_after", float, 3.0, "seconds after start at which an owner loads the "
       "embedding model in the background", config=False),
    _V("debug", bool, False, "an unexpected error prints its traceback", config=False),
    _V("probe_seconds", float, 30.0, "how long the child process that first opens a graph not "
       "closed cleanly may take before the store is reported corrupt", config=False),
    _V("git_seconds", float, 300.0, "how long one git command graphmem runs (a diff, a log, "
       "ls-files) may take before it is given up", config=False),
    _V("hook_max_bytes", int, 8 * 1024 * 1024, "largest hook payload read from stdin",
       config=False),
    _V("trim_bytes", int, 8192, "bytes of one tool output an item keeps (at least 512)",
       config=False),
    _V("evidence_bytes", int, 128 * 1024, "bytes of one tool output the hook keeps at all, head "
       "and tail (at least 4096)", config=False),
    _V("inject_wait", float, 0.3, "seconds the prompt hook waits for the owner's answer",
       config=False),
    _V("inject_cold_wait", float, 2.0, "seconds the prompt hook waits for an owner that is still "
       "starting (one prompt right after a session starts, as in `claude -p`); 0: never",
       config=False),
    _V("no_inject", bool, False, "the prompt hook adds nothing (and starts no owner)",
       config=False),
    _V("no_worker", bool, False, "hooks start no background `graphmem ingest` (and no owner)",
       config=False),
    _V("disable_git_hooks", bool, False, "the installed git hooks do nothing (read by their shell "
       "script)", config=False),
    _V("llm_url", str, "", "base URL of an OpenAI-compatible API that compresses sessions (off "
       "when empty)", config=False),
    _V("llm_model", str, "gpt-4o-mini", "model name for that API", config=False),
    _V("llm_api_key", str, "", "sent as `Authorization: Bearer …` when set", config=False),
    _V("llm_timeout", float, 20.0, "seconds per LLM request (at most 20)", config=False),
)}


def name(key: str) -> str:
    """The variable's name, GRAPHMEM_<KEY>; KeyError for an undeclared key."""
    return VARIABLES[key].name


def raw(key: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The variable's text as set, None when unset."""
    return (os.environ if environ is None else environ).get(name(key))


def text(key: str, environ: Mapping[str, str] | None = None) -> str:
    """The variable stripped, else its default ('' when that is None)."""
    value = (raw(key, environ) or "").strip()
    return value or (VARIABLES[key].default_value() or "")


def _parsed(key: str, parse: Callable[[str], Any], environ: Mapping[str, str] | None) -> Any:
    value = raw(key, environ)
    try:
        return parse(value) if value not in (None, "") else VARIABLES[key].default_value()
    except ValueError:
        return VARIABLES[key].default_value()


def integer(key: str, environ: Mapping[str, str] | None = None) -> int:
    """The variable as an int, its default when unset or not a number."""
    return int(_parsed(key, int, environ))


def number(key: str, environ: Mapping[str, str] | None = None) -> float:
    """The variable as a float, its default when unset or not a number."""
    return float(_parsed(key, float, environ))


def flag(key: str, environ: Mapping[str, str] | None = None) -> bool:
    """True when set to anything but '', 0, false, no or off."""
    value = raw(key, environ)
    return VARIABLES[key].default_value() if value is None else value.strip().lower() not in _OFF


def strings(key: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The variable as a JSON list of strings, [] when unset or not a JSON list."""
    value = _parsed(key, json.loads, environ)
    return [str(v) for v in value] if isinstance(value, list) else []


def path(key: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The variable as a path, None when unset or empty."""
    value = raw(key, environ)
    return Path(value).expanduser() if value else None
