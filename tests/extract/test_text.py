"""Tests for the prose entity extractor, and the labelled-set scorer the lead reports from.

Run ``python -m tests.extract.test_text`` (from the repo root) to print the precision/recall
table for every split of ``tests/data/entities.jsonl``.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from graphmem.extract.text import KINDS, Mention, code_terms, extract, extract_many

DATASET = Path(__file__).resolve().parents[1] / "data" / "entities.jsonl"
CODE_KINDS = ("file", "symbol", "error", "commit", "package", "envvar", "command", "url")
GATED_KINDS = ("file", "symbol", "error", "commit", "package", "envvar")
SOURCES = {"commit", "error", "terminal", "note", "chat"}


def load(dataset_path: str | Path, split: str | None = None) -> list[dict]:
    """Rows of a JSON Lines dataset, optionally restricted to one split."""
    with open(dataset_path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if split is None or r.get("split", "dev") == split]


def score(
    dataset_path: str | Path = DATASET, split: str | None = None
) -> dict[str, tuple[float, float, int]]:
    """Precision, recall and gold support per kind (match on kind + exact surface text, multiset)."""
    rows = load(dataset_path, split)
    predicted = extract_many([r["text"] for r in rows], concepts=False)
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for row, mentions in zip(rows, predicted):
        gold = Counter((e["kind"], e["text"]) for e in row["entities"])
        pred = Counter((m.kind, m.text) for m in mentions if m.kind in CODE_KINDS)
        for (kind, _), n in (gold & pred).items():
            tp[kind] += n
        for (kind, _), n in (pred - gold).items():
            fp[kind] += n
        for (kind, _), n in (gold - pred).items():
            fn[kind] += n
    table = {}
    for kind in CODE_KINDS:
        precision = tp[kind] / (tp[kind] + fp[kind]) if tp[kind] + fp[kind] else 1.0
        recall = tp[kind] / (tp[kind] + fn[kind]) if tp[kind] + fn[kind] else 1.0
        table[kind] = (precision, recall, tp[kind] + fn[kind])
    return table


def render(table: dict[str, tuple[float, float, int]], title: str = "") -> str:
    """The score table as aligned text."""
    lines = [title] if title else []
    lines.append(f"{'kind':<9}{'precision':>10}{'recall':>8}{'support':>9}")
    for kind, (p, r, n) in table.items():
        lines.append(f"{kind:<9}{p:>10.3f}{r:>8.3f}{n:>9}")
    return "\n".join(lines)


def kinds_texts(mentions: Iterable[Mention], kind: str | None = None) -> list[tuple[str, str]]:
    """(kind, text) pairs of code mentions, optionally of one kind."""
    return [(m.kind, m.text) for m in mentions if m.kind != "concept" and kind in (None, m.kind)]


# ---------------------------------------------------------------------------------------------
# The labelled set
# ---------------------------------------------------------------------------------------------


def test_dataset_is_well_formed() -> None:
    rows = load(DATASET)
    assert len(rows) >= 320
    assert {r["source"] for r in rows} <= SOURCES
    assert sum(1 for r in rows if not r["entities"]) >= 40
    for row in rows:
        for ent in row["entities"]:
            assert ent["kind"] in CODE_KINDS
            assert ent["text"] and ent["text"] in row["text"], ent


def test_precision_recall_on_labelled_set() -> None:
    table = score(DATASET)
    print("\n" + render(table, f"all splits ({DATASET.name})"))
    for split in sorted({r.get("split", "dev") for r in load(DATASET)}):
        print("\n" + render(score(DATASET, split), f"split={split}"))
    for kind in GATED_KINDS:
        precision, recall, support = table[kind]
        assert support >= 20, kind
        assert precision >= 0.95, (kind, precision)
        assert recall >= 0.90, (kind, recall)
    for kind in ("command", "url"):
        precision, recall, _ = table[kind]
        assert precision >= 0.90 and recall >= 0.90, (kind, precision, recall)


def test_offsets_order_and_overlaps_on_labelled_set() -> None:
    rows = load(DATASET)
    for row, mentions in zip(rows, extract_many([r["text"] for r in rows])):
        text = row["text"]
        assert [m.start for m in mentions] == sorted(m.start for m in mentions)
        for m in mentions:
            assert m.kind in KINDS
            assert text[m.start : m.end] == m.text and m.text
            assert m.norm
        for kind in KINDS:
            spans = sorted((m.start, m.end) for m in mentions if m.kind == kind)
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), (kind, text)


# ---------------------------------------------------------------------------------------------
# Per-kind positives: (text, kind, surface, norm)
# ---------------------------------------------------------------------------------------------

POSITIVES = [
    ("edit src/a/b.py next", "file", "src/a/b.py", "src/a/b.py"),
    ("see ./x.ts for the types", "file", "./x.ts", "x.ts"),
    ("run it from the Makefile", "file", "Makefile", "Makefile"),
    ("the Dockerfile copies dist/", "file", "Dockerfile", "Dockerfile"),
    ("merged into config/*.yaml at boot", "file", "config/*.yaml", "config/*.yaml"),
    ("bug in requests/sessions.py.", "file", "requests/sessions.py", "requests/sessions.py"),
    ("flake8 settings live in setup.cfg", "file", "setup.cfg", "setup.cfg"),
    ("never commit .env", "file", ".env", ".env"),
    ("bump it in package.json", "file", "package.json", "package.json"),
    ("update README.md please", "file", "README.md", "README.md"),
    ("fails at tests/test_x.py:42 now", "file", "tests/test_x.py", "tests/test_x.py"),
    ("open /etc/hosts", "file", "/etc/hosts", "/etc/hosts"),
    ("logs in ~/.cache/app/", "file", "~/.cache/app/", "~/.cache/app"),
    (r"see C:\Users\dev\app.py", "file", r"C:\Users\dev\app.py", "C:/Users/dev/app.py"),
    ("call parse_config() first", "symbol", "parse_config()", "parse_config"),
    ("use Foo.bar instead", "symbol", "Foo.bar", "Foo.bar"),
    ("entry point pkg.mod:func is wrong", "symbol", "pkg.mod:func", "pkg.mod:func"),
    ("raise `retry_count` to 5", "symbol", "retry_count", "retry_count"),
    ("subclass SessionRedirectMixin", "symbol", "SessionRedirectMixin", "SessionRedirectMixin"),
    ("set max_retries higher", "symbol", "max_retries", "max_retries"),
    ("get_netrc_auth: cleanup", "symbol", "get_netrc_auth", "get_netrc_auth"),
    ("Session.request copies headers", "symbol", "Session.request", "Session.request"),
    ("store it on self.foo", "symbol", "self.foo", "foo"),
    ("undefined: parseConfig", "symbol", "parseConfig", "parseConfig"),
    ("Made `.status_code` consistent", "symbol", "status_code", "status_code"),
    ("pass allow_redirects=False", "symbol", "allow_redirects", "allow_redirects"),
    ("called `Result::unwrap()` on Err", "symbol", "Result::unwrap()", "Result::unwrap"),
    ("connect ECONNREFUSED 127.0.0.1:5432", "error", "ECONNREFUSED", "ECONNREFUSED"),
    ("Error: ENOENT: no such file", "error", "ENOENT", "ENOENT"),
    ("listen EADDRINUSE", "error", "EADDRINUSE", "EADDRINUSE"),
    ("error[E0502]: cannot borrow", "error", "E0502", "E0502"),
    ("error TS2345: Argument of type", "error", "TS2345", "TS2345"),
    ("ORA-00942: table or view does not exist", "error", "ORA-00942", "ORA-00942"),
    ("got HTTP 503 from the proxy", "error", "HTTP 503", "HTTP 503"),
    ("503 Service Unavailable", "error", "503 Service Unavailable", "HTTP 503"),
    ("KeyError: 'user'", "error", "KeyError", "KeyError"),
    ("the job exited with code 1", "error", "exited with code 1", "exit 1"),
    ("exit code 137 again", "error", "exit code 137", "exit 137"),
    ("returned non-zero exit status 2.", "error", "exit status 2", "exit 2"),
    ("worker got SIGKILL", "error", "SIGKILL", "SIGKILL"),
    ("Segmentation fault (core dumped)", "error", "Segmentation fault", "segmentation fault"),
    ("x.py:1:1: F401 'os' imported but unused", "error", "F401", "F401"),
    ("fixes CVE-2023-32681", "error", "CVE-2023-32681", "CVE-2023-32681"),
    ("pod is in CrashLoopBackOff", "error", "CrashLoopBackOff", "CrashLoopBackOff"),
    ("now raises SessionExpired", "error", "SessionExpired", "SessionExpired"),
    ("reverted a1b2c3d yesterday", "commit", "a1b2c3d", "a1b2c3d"),
    ("This reverts commit 805C4DB55413C96C5D6E0F95560119C000F660C9x.", "commit", None, None),
    ("see commit deadbeef", "commit", "deadbeef", "deadbeef"),
    ("pin numpy==1.26 for now", "package", "numpy==1.26", "numpy"),
    ("needs requests>=2.31", "package", "requests>=2.31", "requests"),
    ("upgrade to react@18", "package", "react@18", "react"),
    ("add @types/node@20", "package", "@types/node@20", "@types/node"),
    ("$ pip install foo bar", "package", "bar", "bar"),
    ("npm install express", "package", "express", "express"),
    ("import numpy as np", "package", "numpy", "numpy"),
    ("from urllib3 import PoolManager", "package", "urllib3", "urllib3"),
    ("No module named 'yaml'", "package", "yaml", "yaml"),
    ("Successfully installed idna-3.4", "package", "idna-3.4", "idna"),
    ("falls back to chardet here", "package", "chardet", "chardet"),
    ("Allow urllib3 1.23", "package", "urllib3", "urllib3"),
    ("DATABASE_URL must be set", "envvar", "DATABASE_URL", "DATABASE_URL"),
    ("expands $HOME first", "envvar", "$HOME", "HOME"),
    ("reads ${PGPASSWORD} too", "envvar", "${PGPASSWORD}", "PGPASSWORD"),
    ("export FOO=bar", "envvar", "FOO", "FOO"),
    ('os.environ["X_FLAG"] is read', "envvar", "X_FLAG", "X_FLAG"),
    ("set REQUESTS_CA_BUNDLE", "envvar", "REQUESTS_CA_BUNDLE", "REQUESTS_CA_BUNDLE"),
    ("respects HTTPS_PROXY", "envvar", "HTTPS_PROXY", "HTTPS_PROXY"),
    ("and NO_PROXY", "envvar", "NO_PROXY", "NO_PROXY"),
    ("the no_proxy environment variable", "envvar", "no_proxy", "no_proxy"),
    ("$ pytest -k x", "command", "pytest -k x", "pytest"),
    ("then npm run build again", "command", "npm run build", "npm run build"),
    ("run make test before pushing", "command", "make test", "make test"),
    ("why does `mise run test:integration` take so long", "command", "mise run test:integration",
     "mise run test:integration"),
    ("`mix format --check-formatted` fails", "command", "mix format --check-formatted", "mix format"),
    ("$ uv run pytest -x", "command", "uv run pytest -x", "uv run pytest"),
    ("$ pip install -e .", "command", "pip install -e .", "pip install"),
    ("use `git rebase -i HEAD~3` here", "command", "git rebase -i HEAD~3", "git rebase"),
    ("cargo build --release fails", "command", "cargo build --release", "cargo build"),
    ("$ docker compose up", "command", "docker compose up", "docker compose"),
    ("$ python -m pytest tests/", "command", "python -m pytest tests/", "python -m pytest"),
    ("$ go test ./...", "command", "go test ./...", "go test"),
    ("$ DEBUG=1 npm test", "command", "npm test", "npm test"),
    ("hit http://localhost:8080/x now", "url", "http://localhost:8080/x", "localhost:8080"),
    ("db at 127.0.0.1:5432", "url", "127.0.0.1:5432", "localhost:5432"),
    ("vite on localhost:3000", "url", "localhost:3000", "localhost:3000"),
    ("postgres on port 5432", "url", "port 5432", ":5432"),
    (
        "see https://github.com/psf/requests/pull/1.",
        "url",
        "https://github.com/psf/requests/pull/1",
        "github.com/psf/requests/pull/1",
    ),
]


@pytest.mark.parametrize(("text", "name"), [("UserService handles it", "UserService"),
                                             ("wrap it in an HTTPAdapter", "HTTPAdapter")])
def test_a_camelcase_name_without_a_cue_waits_for_the_code_index(text: str, name: str) -> None:
    """No cue: the text alone does not make it a symbol; linking asks for it (bare) and the
    code index decides."""
    assert [m for m in extract(text) if m.kind == "symbol"] == []
    assert [(m.text, m.bare) for m in extract(text, bare=True) if m.kind == "symbol"] == [(name, True)]


@pytest.mark.parametrize(("text", "kind", "surface", "norm"), POSITIVES)
def test_positive(text: str, kind: str, surface: str | None, norm: str | None) -> None:
    mentions = [m for m in extract(text) if m.kind == kind]
    if surface is None:
        assert mentions == []
        return
    match = [m for m in mentions if m.text == surface]
    assert match, (text, kind, [(m.kind, m.text) for m in extract(text)])
    assert match[0].norm == norm
    assert text[match[0].start : match[0].end] == surface


def test_details() -> None:
    [err] = [m for m in extract("ModuleNotFoundError: No module named 'x'") if m.kind == "error"]
    assert (err.text, err.detail) == ("ModuleNotFoundError", "No module named 'x'")
    [pkg] = [m for m in extract("pin numpy==1.26") if m.kind == "package"]
    assert pkg.detail == "==1.26"
    [f] = [m for m in extract("at tests/test_x.py:42:7") if m.kind == "file"]
    assert (f.norm, f.detail) == ("tests/test_x.py", "42:7")


# ---------------------------------------------------------------------------------------------
# Negatives: (text, kind that must not appear)
# ---------------------------------------------------------------------------------------------

NEGATIVES = [
    ("released version 2.31.0 today", "file"),
    ("e.g. this, i.e. that", "file"),
    ("e.g. this, i.e. that", "symbol"),
    ("visit example.com for docs", "file"),
    ("https://github.com/psf/requests/blob/main/setup.py", "file"),
    ("served as text/html to clients", "file"),
    ("merge origin/main into feature/x", "file"),
    ("Node.js 20 is required", "file"),
    ("KeyError was raised", "symbol"),
    ("the ValueError is expected", "symbol"),
    ("deploy the setup.py change", "symbol"),
    ("GitHub and JavaScript and PostgreSQL", "symbol"),
    ("MacOS and iOS builds", "symbol"),
    ("unsupported operand type(s) for +", "symbol"),
    ("a Python object", "symbol"),
    ("the payload was SGVsbG8gd29ybGQ=", "symbol"),
    ("assert 401 == 200", "error"),
    ("We returned 200 for every probe", "error"),
    ("an IO exception happened", "error"),
    ("the Error was printed", "error"),
    ("The exception for http upgrades is gone", "error"),
    ("An exception was raised", "error"),
    ('<li><a href="x">Requests-HTML</a></li>', "file"),
    ("when POSTing or PUTing a body", "symbol"),
    ("thread 'tokio-runtime-worker' panicked", "package"),
    ("the decade-old facade", "commit"),
    ("we saw 1234567 requests", "commit"),
    ("request id 550e8400-e29b-41d4-a716-446655440000", "commit"),
    ("Change-Id: I0568f27562e5d12f7e5e528b216ca1b1e9cd8256", "commit"),
    ("address 0x7ffd5e8c3a10", "commit"),
    ("md5 d41d8cd98f00b204e9800998ecf8427e", "commit"),
    ("container id 4f2e8c9a1b3d", "commit"),
    ("pod api-7d9f8b6c5-x2k4q restarted", "commit"),
    ("color #a1b2c3d4", "commit"),
    ("gist https://gist.github.com/kevinburke/1aa2b07e", "commit"),
    ("it will make sure requests are fine", "package"),
    ("because you can't splat import relatively", "package"),
    ("use SSL verification", "package"),
    ("Go with PostgreSQL 16 and Redis 7", "package"),
    ("Python 3.11 and Node 20", "package"),
    ("CI is red again", "envvar"),
    ("DEBUG logging is noisy", "envvar"),
    ("MAX_BATCH_SIZE is 500", "envvar"),
    ("make sure it works", "command"),
    ("git keeps working if we crash", "command"),
    ("use pnpm, not npm", "command"),
    ("the pytest cache directory", "command"),
    ("In python 2.x this breaks", "command"),
    ("mail jane.doe@example.com", "url"),
    ("Version 10.0.0.1 of the firmware", "url"),
    ("at 10:30 in room 4", "url"),
]


@pytest.mark.parametrize(("text", "kind"), NEGATIVES)
def test_negative(text: str, kind: str) -> None:
    assert kinds_texts(extract(text), kind) == []


def test_commit_inside_url_only_when_full_sha() -> None:
    sha = "0e322af87745eff34caffe4df68456ebc20d9068"
    kinds = kinds_texts(extract(f"see https://github.com/psf/requests/commit/{sha} now"))
    assert ("commit", sha) in kinds and (
        "url",
        f"https://github.com/psf/requests/commit/{sha}",
    ) in kinds


def test_command_contains_other_kinds() -> None:
    pairs = kinds_texts(extract('$ pip install "requests==2.31.0" -r requirements.txt'))
    assert ("command", 'pip install "requests==2.31.0" -r requirements.txt') in pairs
    assert ("package", "requests==2.31.0") in pairs and ("file", "requirements.txt") in pairs


def test_code_like_span_wins_over_concept() -> None:
    mentions = extract("The retry logic in src/http/retry.py uses exponential backoff")
    code = [(m.start, m.end) for m in mentions if m.kind != "concept"]
    for m in mentions:
        if m.kind == "concept":
            assert all(m.end <= s or m.start >= e for s, e in code)
    assert any(m.kind == "concept" and "exponential backoff" in m.norm for m in mentions)
    assert ("file", "src/http/retry.py") in kinds_texts(mentions)


def test_concepts_flag() -> None:
    text = "Flaky integration tests in the payment service"
    assert all(m.kind != "concept" for m in extract(text, concepts=False))
    concepts = [m for m in extract(text) if m.kind == "concept"]
    assert concepts and all(m.norm == m.norm.lower() for m in concepts)
    assert "integration test" in {m.norm for m in concepts} or any(
        "integration" in m.norm for m in concepts
    )


def test_extract_many_matches_extract() -> None:
    texts = [r["text"] for r in load(DATASET)[:60]] + ["", "x" * 10]
    assert extract_many(texts) == [extract(t) for t in texts]
    assert extract_many(iter(texts[:3]), concepts=False) == [
        extract(t, concepts=False) for t in texts[:3]
    ]


def test_mention_is_frozen() -> None:
    m = Mention("file", "a.py", 0, 4, "a.py")
    with pytest.raises(AttributeError):
        m.kind = "symbol"  # type: ignore[misc]
    assert m.detail == ""


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\t ",
        "`",
        "``",
        "$ ",
        "$",
        "\ud800 lone \udfff surrogates in src/a.py",
        "\x00\x01\x02 control \x1b[31mred\x1b[0m KeyError",
        "Die Datei src/main.py konnte nicht geöffnet werden: ENOENT",
        "ファイル src/app.ts が見つかりません TS2307",
        "🙂 emoji and ключ parse_config() и ECONNRESET",
        "(((((((((((((((((((((((((((((((",
        "a" * 5000 + "_" + "b" * 5000,
        "." * 20000,
        "/" * 20000,
    ],
)
def test_bad_input_never_crashes(text: str) -> None:
    mentions = extract(text)
    for m in mentions:
        assert text[m.start : m.end] == m.text or "\ud800" in text or "\x00" in text


def test_lone_surrogates_keep_offsets() -> None:
    text = "\ud800 bad src/a.py"
    [f] = [m for m in extract(text) if m.kind == "file"]
    assert (f.start, f.end, text[f.start : f.end]) == (6, 14, "src/a.py")


@pytest.mark.parametrize(
    "unit",
    [
        "Fix KeyError in src/app.py via `npm run build` at a1b2c3d; see DATABASE_URL.\n",
        "x" * 99 + " ",
        "_a/" * 33 + " ",
    ],
)
def test_one_megabyte_is_bounded(unit: str) -> None:
    text = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    start = time.process_time()
    mentions = extract(text)
    elapsed = time.process_time() - start
    print(f"\n1 MB ({unit[:20]!r}...): {elapsed:.2f} s CPU, {len(mentions)} mentions")
    assert elapsed < 10.0
    assert all(text[m.start : m.end] == m.text for m in mentions[:2000])


# ---------------------------------------------------------------------------------------------
# code_terms and import hygiene
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("parseConfig", ["parse", "config"]),
        ("parse_config", ["parse", "config"]),
        ("UserService.get_user", ["user", "service", "get", "user"]),
        ("HTTPAdapter", ["http", "adapter"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("__init__", ["init"]),
        ("src/a/b_c.py", ["src", "a", "b", "c", "py"]),
        ("base64Encode utf8", ["base64", "encode", "utf8"]),
        ("MAX_RETRIES", ["max", "retries"]),
        ("", []),
        ("   ", []),
    ],
)
def test_code_terms(text: str, terms: list[str]) -> None:
    assert code_terms(text) == terms


def test_import_is_light_and_code_terms_needs_no_spacy() -> None:
    code = (
        "import sys, graphmem.extract.text as t;"
        "assert 'spacy' not in sys.modules;"
        "assert t.code_terms('parseConfig') == ['parse', 'config'];"
        "assert 'spacy' not in sys.modules"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2]
    )


if __name__ == "__main__":
    print(render(score(DATASET), f"all splits ({DATASET.name})"))
    for name in sorted({r.get("split", "dev") for r in load(DATASET)}):
        print("\n" + render(score(DATASET, name), f"split={name}"))


def test_spacy_loads_without_torch_and_torch_stays_importable() -> None:
    """thinc would import torch (~190 MB) for a pipeline that never runs on it."""
    code = ("import sys; from graphmem.extract import text; text.extract('Fix E0433 in src/a.py'); "
            "print('torch' in sys.modules); import torch; print(torch.ones(1).item())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "1.0"]
