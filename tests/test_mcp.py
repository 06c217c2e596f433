"""The MCP surface: every tool, resource and prompt through a real fastmcp Client, in memory and
as a `graphmem serve` subprocess going through the owner."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, Context
from fastmcp.client.transports import StdioTransport
from fastmcp.exceptions import ToolError

from graphmem import models as m
from graphmem.errors import InvalidInput, StoreUnavailable
from graphmem.mcp import build_server, parse_http_address
from tests.conftest import git, stop_owner
from tests.retrieve.test_live import HOP_CHECK, REDIRECTS_LOOP, SESSIONS, SETTINGS_LOOP, SOURCE

pytestmark = pytest.mark.anyio

TOOLS = {"memory_brief", "memory_search", "memory_get", "memory_evidence", "memory_add",
         "memory_related", "memory_feedback", "memory_verify", "memory_forget"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client(memory: Any) -> Client:
    return Client(build_server(lambda: memory))


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server over an empty store for the many cases that never reach the store."""
    from graphmem import Config, Memory

    root = tmp_path_factory.mktemp("shared")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root / "repo")], check=True)
    with Memory(Config(home=root / "home", cwd=root / "repo")) as memory:
        yield build_server(lambda: memory)


def seed(memory: Any) -> dict[str, str]:
    """A few items the way sessions would have left them."""
    ids = {}
    ids["retry"] = memory.add("Cap HTTP retries at 3 in fetch_page: the API bans bursty clients",
                              "Raised to 10 once and got a 24 h ban.", kind="decision",
                              files=["src/net/client.py"], symbols=["fetch_page"]).id
    ids["pool"] = memory.add("Use one shared connection pool per process",
                             "Creating a pool per request leaked sockets.", kind="convention",
                             files=["src/db/pool.py"]).id
    ids["env"] = memory.add("Tests need DATABASE_URL pointing at the local Postgres",
                            kind="env").id
    return ids


async def call(client: Client, tool: str, **args: Any) -> Any:
    result = await client.call_tool(tool, args)
    return result.structured_content


# ----- tools ---------------------------------------------------------------------------------
async def test_tools_are_listed_with_teaching_descriptions_and_limits(client: Client) -> None:
    async with client:
        tools = {t.name: t for t in await client.list_tools()}
        instructions = client.instructions or ""
    assert set(tools) == TOOLS
    assert "search" in tools["memory_search"].description.lower()
    assert "before" in tools["memory_search"].description
    assert "decision" in tools["memory_add"].description
    assert all(t.description and t.output_schema for t in tools.values())
    search = tools["memory_search"].input_schema["properties"]
    assert (search["k"]["minimum"], search["k"]["maximum"]) == (1, 50)
    assert search["files"]["description"]
    assert tools["memory_add"].input_schema["required"] == ["kind", "title"]
    assert tools["memory_search"].annotations.read_only_hint is True
    assert tools["memory_forget"].annotations.destructive_hint is True
    assert "memory_search" in instructions and "memory_add" in instructions


async def test_brief_is_empty_at_first_then_lists_items(client: Client, memory: Any) -> None:
    async with client:
        empty = await call(client, "memory_brief")
        ids = seed(memory)
        brief = await call(client, "memory_brief", budget=200)
        tiny = await call(client, "memory_brief", budget=0)
    assert empty["lines"] == [] and empty["tokens"] == 0
    assert set(brief["item_ids"]) == set(ids.values())
    assert brief["tokens"] <= 200 and f"[{ids['retry']}]" in brief["text"]
    assert tiny["item_ids"] == []


async def test_search_uses_files_context_kinds_and_budget(client: Client, memory: Any) -> None:
    ids = seed(memory)
    async with client:
        by_file = await call(client, "memory_search", query="", files=["src/net/client.py"])
        by_words = await call(client, "memory_search", query="socket leak connection pool", k=2)
        only_env = await call(client, "memory_search", query="database", kinds=["env"])
        small = await call(client, "memory_search", query="retries pool database", budget=30)
    assert by_file["hits"][0]["item"]["id"] == ids["retry"]
    assert any("src/net/client.py" in why for why in by_file["hits"][0]["why"])
    assert by_words["hits"][0]["item"]["id"] == ids["pool"] and len(by_words["hits"]) <= 2
    assert {h["item"]["kind"] for h in only_env["hits"]} == {"env"}
    assert small["tokens"] <= 30


async def test_search_in_a_session_knows_the_function_the_agent_edited(
        client: Client, memory: Any, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No files or symbols passed: the edit the session's hook spooled is the context."""
    from graphmem import hooks

    (repo / "src").mkdir()
    (repo / SESSIONS).write_text(SOURCE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "sessions")
    memory.index_code()
    redirects = memory.add(REDIRECTS_LOOP, kind="pitfall", session_id="earlier-1").id
    settings = memory.add(SETTINGS_LOOP, kind="pitfall", session_id="earlier-2").id
    (repo / SESSIONS).write_text(SOURCE.replace("        seen += 1\n", "        seen += 1\n" +
                                                HOP_CHECK))
    git(repo, "commit", "-q", "-am", "hop check")  # no uncommitted change: the session alone
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "s-mcp")
    assert hooks.main(["post-tool", "--agent", "claude-code", json.dumps({
        "session_id": "s-mcp", "cwd": str(repo), "hook_event_name": "PostToolUse",
        "tool_name": "Edit", "tool_input": {"file_path": str(repo / SESSIONS),
                                            "old_string": "        seen += 1\n",
                                            "new_string": "        seen += 1\n" + HOP_CHECK},
        "tool_response": {}})]) == 0
    async with client:
        found = await call(client, "memory_search", query="why does this loop forever?")
        given = await call(client, "memory_search", query="why does this loop forever?",
                           symbols=[f"{SESSIONS}::merge_settings"])
    assert found["hits"][0]["item"]["id"] == redirects
    assert f"mentions {SESSIONS}::resolve_redirects" in found["hits"][0]["why"]
    assert given["hits"][0]["item"]["id"] == settings  # what the agent passes wins


@pytest.mark.parametrize(("tool", "args", "problem"), [
    ("memory_search", {"query": "x", "k": 0}, "k:"),
    ("memory_search", {"query": "x", "k": 51}, "k:"),
    ("memory_search", {"query": 42}, "query:"),
    ("memory_search", {}, "query: required argument is missing"),
    ("memory_search", {"query": "x", "kinds": ["gossip"]}, "kinds.0:"),
    ("memory_search", {"query": "x", "files": "src/a.py"}, "files:"),
    ("memory_search", {"query": "x", "colour": "red"}, "colour:"),
    ("memory_add", {"kind": "gossip", "title": "t"}, "kind:"),
    ("memory_add", {"kind": "decision"}, "title: required argument is missing"),
    ("memory_add", {"kind": "decision", "title": "t", "confidence": 1.5}, "confidence:"),
    ("memory_get", {"ids": []}, "ids:"),
    ("memory_get", {"ids": "abc"}, "ids:"),
    ("memory_evidence", {"id": "../etc/passwd"}, "id:"),
    ("memory_feedback", {"id": "abc", "verdict": "meh"}, "verdict:"),
    ("memory_brief", {"budget": -1}, "budget:"),
])
async def test_invalid_arguments_are_one_line_tool_errors(shared_server: Any, tool: str,
                                                          args: dict[str, Any],
                                                          problem: str) -> None:
    async with Client(shared_server) as client:
        with pytest.raises(ToolError) as info:
            await client.call_tool(tool, args)
        assert (await call(client, "memory_brief"))["budget"] == 400  # still serving
    message = str(info.value)
    assert message.startswith(f"invalid arguments for {tool}: ") and problem in message
    assert "\n" not in message


async def test_search_needs_something_to_search_for(shared_server: Any) -> None:
    async with Client(shared_server) as client:
        with pytest.raises(ToolError, match="give a query, files or symbols"):
            await client.call_tool("memory_search", {"query": "  "})


async def test_get_reports_unknown_ids_per_id(client: Client, memory: Any) -> None:
    ids = seed(memory)
    async with client:
        result = await call(client, "memory_get", ids=[ids["retry"], "0000000000000000",
                                                       ids["retry"], ids["env"]])
    assert [d["item"]["id"] for d in result["items"]] == [ids["retry"], ids["env"]]
    assert result["missing"] == [{"id": "0000000000000000",
                                  "error": "no memory with id '0000000000000000'"}]
    detail = result["items"][0]
    assert detail["item"]["status"] == "active" and detail["item"]["body"]
    assert {link["entity"]["name"] for link in detail["links"]} >= {"src/net/client.py"}


async def test_evidence_returns_redacted_observations(client: Client, memory: Any) -> None:
    observation = m.Observation(project=memory.project, event="PostToolUse", tool="Bash",
                                command="pytest -x", text="FAILED test_fetch: 429 Too Many Requests")
    memory.put_observations([observation])
    item = memory.add("fetch_page gets 429 when retrying fast", kind="pitfall",
                      observations=[observation.id])
    bare = memory.add("A note without evidence", kind="note")
    async with client:
        result = await call(client, "memory_evidence", id=item.id)
        none = await call(client, "memory_evidence", id=bare.id)
        with pytest.raises(ToolError, match="^no memory with id 'ffff'$"):
            await client.call_tool("memory_evidence", {"id": "ffff"})
    assert result["id"] == item.id
    assert [(e["tool"], e["command"]) for e in result["excerpts"]] == [("Bash", "pytest -x")]
    assert "429" in result["excerpts"][0]["text"]
    assert none["excerpts"] == []


async def test_add_records_agent_items_and_merges_repeats(client: Client, memory: Any) -> None:
    async with client:
        first = await call(client, "memory_add", kind="decision",
                           title="Pin kuzu to 0.11.3: later versions drop the vector extension",
                           body="Checked on 2025-10-02.", files=["pyproject.toml"], confidence=0.9)
        again = await call(client, "memory_add", kind="decision",
                           title="Pin kuzu to 0.11.3: later versions drop the vector extension")
    item = memory.get_item(first["item"]["id"])
    assert first["merged"] is False and again["merged"] is True
    assert again["item"]["id"] == item.id and item.source == m.Source.agent
    assert item.kind == m.ItemKind.decision and item.hit_count == 1
    assert len(memory.list()) == 1


async def test_one_megabyte_body_is_a_clear_error_and_the_server_stays_up(client: Client) -> None:
    async with client:
        with pytest.raises(ToolError) as info:
            await client.call_tool("memory_add", {"kind": "note", "title": "huge",
                                                  "body": "x" * 1_000_000})
        after = await call(client, "memory_add", kind="note", title="small is fine")
    assert str(info.value).startswith("text too long: 1,000,004 characters")
    assert "\n" not in str(info.value)
    assert after["item"]["title"] == "small is fine"


async def test_related_explores_an_entity(client: Client, memory: Any) -> None:
    ids = seed(memory)
    async with client:
        result = await call(client, "memory_related", entity="src/net/client.py")
        with pytest.raises(ToolError, match="nothing is known about"):
            await client.call_tool("memory_related", {"entity": "src/never/heard_of.py"})
    assert [e["name"] for e in result["entities"]] == ["src/net/client.py"]
    assert {(i["item"]["id"], i["direct"]) for i in result["items"]} >= {(ids["retry"], True)}


async def test_feedback_moves_confidence_and_status(client: Client, memory: Any) -> None:
    ids = seed(memory)
    async with client:
        helpful = await call(client, "memory_feedback", id=ids["retry"], verdict="helpful")
        outdated = await call(client, "memory_feedback", id=ids["pool"], verdict="outdated",
                              note="pool moved to src/db/engine.py")
        wrong = [await call(client, "memory_feedback", id=ids["env"], verdict="wrong",
                            note="it is SQLite in tests") for _ in range(2)]
        with pytest.raises(ToolError, match="no memory with id"):
            await client.call_tool("memory_feedback", {"id": "abc", "verdict": "helpful"})
    retry = memory.get_item(ids["retry"])
    assert helpful["item"]["confidence"] == retry.confidence == pytest.approx(0.85)
    assert retry.hit_count == 1 and retry.last_used_at > 0
    assert helpful["change"] == "confidence 0.75 → 0.85, hits 1"
    pool = memory.get_item(ids["pool"])
    assert pool.status == m.ItemStatus.stale and outdated["item"]["status"] == "stale"
    assert "pool moved to src/db/engine.py" in pool.stale_reason
    assert outdated["change"].startswith("status active → stale, reason: reported outdated")
    assert wrong[0]["item"]["status"] == "active"
    assert wrong[0]["item"]["confidence"] == pytest.approx(0.45)
    env = memory.get_item(ids["env"])
    assert env.status == m.ItemStatus.archived and env.confidence == pytest.approx(0.15)
    assert "status active → archived" in wrong[1]["change"]
    assert ids["env"] not in {i.id for i in memory.list()}  # archived items leave the live set


async def test_verify_clears_stale(client: Client, memory: Any, repo: Path) -> None:
    (repo / "src" / "db").mkdir(parents=True)
    (repo / "src" / "db" / "pool.py").write_text("POOL = None\n")
    ids = seed(memory)
    async with client:
        await call(client, "memory_feedback", id=ids["pool"], verdict="outdated", note="moved")
        verified = await call(client, "memory_verify", id=ids["pool"])
        with pytest.raises(ToolError, match="no memory with id"):
            await client.call_tool("memory_verify", {"id": "abc"})
    item = memory.get_item(ids["pool"])
    assert verified["item"]["status"] == "active" and item.status == m.ItemStatus.active
    assert item.verified and item.stale_reason == ""
    assert isinstance(verified["anchors"], int) and isinstance(verified["dropped"], list)


async def test_forget_deletes_for_good(client: Client, memory: Any) -> None:
    ids = seed(memory)
    async with client:
        result = await call(client, "memory_forget", id=ids["env"])
        got = await call(client, "memory_get", ids=[ids["env"]])
        hits = await call(client, "memory_search", query="DATABASE_URL local Postgres")
        with pytest.raises(ToolError, match="no memory with id"):
            await client.call_tool("memory_forget", {"id": ids["env"]})
    assert result["deleted"] is True and result["id"] == ids["env"]
    assert got["items"] == [] and got["missing"][0]["id"] == ids["env"]
    assert ids["env"] not in {h["item"]["id"] for h in hits["hits"]}


async def test_resources_and_prompt(client: Client, memory: Any) -> None:
    ids = seed(memory)
    async with client:
        resources = {str(r.uri) for r in await client.list_resources()}
        templates = {t.uri_template for t in await client.list_resource_templates()}
        brief = (await client.read_resource("memory://brief"))[0].text
        item = (await client.read_resource(f"memory://item/{ids['retry']}"))[0].text
        with pytest.raises(Exception, match="no memory with id"):
            await client.read_resource("memory://item/0123456789abcdef")
        prompts = {p.name for p in await client.list_prompts()}
        plain = await client.get_prompt("use_memory")
        focused = await client.get_prompt("use_memory", {"task": "fix flaky fetch_page test"})
    assert resources == {"memory://brief"} and templates == {"memory://item/{id}"}
    assert f"[{ids['retry']}]" in brief
    assert item.startswith("# Cap HTTP retries at 3") and "status: active" in item
    assert "file:src/net/client.py" in item and "24 h ban" in item
    assert prompts == {"use_memory"}
    text = plain.messages[0].content.text
    assert "memory_search" in text and "memory_add" in text and "before" in text
    assert "fix flaky fetch_page test" in focused.messages[0].content.text


async def test_every_tool_call_is_logged(client: Client, memory: Any) -> None:
    async with client:
        await call(client, "memory_add", kind="fact", title="The CI runs on two cores")
        await call(client, "memory_search", query="CI cores")
        with pytest.raises(ToolError):
            await client.call_tool("memory_search", {"query": "x", "k": 0})
    lines = (memory.dir / "logs" / "mcp.log").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["tool"] for r in records] == ["memory_add", "memory_search", "memory_search"]
    assert all(r["ms"] >= 0 and "ts" in r for r in records)
    assert records[1]["ok"] is True and records[1]["bytes"] > 100
    assert records[2]["ok"] is False and records[2]["error"].startswith("invalid arguments")


class BrokenMemory:
    """Raises what a failing store or owner would."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory

    def brief(self, budget: int | None = None) -> Any:
        raise StoreUnavailable("store is in use by another process (pid 4242)")

    def search(self, query: str, **kwargs: Any) -> Any:
        raise RuntimeError("kuzu exploded\nwith a second line")

    def get(self, item_id: str) -> Any:
        raise InvalidInput("bad id")


async def test_errors_become_one_line_tool_errors(tmp_path: Path) -> None:
    async with Client(build_server(lambda: BrokenMemory(tmp_path))) as client:
        with pytest.raises(ToolError, match=r"^store is in use by another process \(pid 4242\)$"):
            await client.call_tool("memory_brief", {})
        with pytest.raises(ToolError, match="^internal error in search: RuntimeError: kuzu "
                                            "exploded with a second line$"):
            await client.call_tool("memory_search", {"query": "x"})
        with pytest.raises(ToolError, match="^bad id$"):  # not an unknown id: not per-id
            await client.call_tool("memory_get", {"ids": ["abc"]})
    log = [json.loads(line) for line in (tmp_path / "logs" / "mcp.log").read_text().splitlines()]
    crash = next(r for r in log if r.get("event") == "crash")
    assert "Traceback" in crash["traceback"]


async def test_agent_story(client: Client, memory: Any) -> None:
    """brief → search with the files being edited → get → add a decision → feedback → forget."""
    ids = seed(memory)
    async with client:
        brief = await call(client, "memory_brief")
        assert ids["retry"] in brief["item_ids"]
        found = await call(client, "memory_search", query="how many retries are allowed",
                           files=["src/net/client.py"], symbols=["fetch_page"], k=3)
        top = found["hits"][0]["item"]["id"]
        assert top == ids["retry"]
        detail = (await call(client, "memory_get", ids=[top]))["items"][0]
        assert "24 h ban" in detail["item"]["body"]
        added = await call(client, "memory_add", kind="decision",
                           title="Back off exponentially between fetch_page retries",
                           body="Keeps the cap of 3 and spaces them 1 s, 2 s, 4 s.",
                           files=["src/net/client.py"], symbols=["fetch_page"])
        await call(client, "memory_feedback", id=top, verdict="helpful", note="saved a ban")
        again = await call(client, "memory_search", query="", files=["src/net/client.py"])
        assert {h["item"]["id"] for h in again["hits"]} >= {top, added["item"]["id"]}
        await call(client, "memory_forget", id=added["item"]["id"])
        final = await call(client, "memory_brief")
    assert added["item"]["id"] not in final["item_ids"]
    assert memory.get_item(top).confidence == pytest.approx(0.85)


# ----- serving -------------------------------------------------------------------------------
@pytest.mark.parametrize(("address", "expected"), [
    ("127.0.0.1:8765", ("127.0.0.1", 8765)),
    ("localhost:80", ("localhost", 80)),
    ("[::1]:9000", ("::1", 9000)),
    ("127.1.2.3:1", ("127.1.2.3", 1)),
])
def test_http_address_accepts_loopback(address: str, expected: tuple[str, int]) -> None:
    assert parse_http_address(address) == expected


@pytest.mark.parametrize(("address", "message"), [
    ("0.0.0.0:8765", "refusing to serve memory over HTTP on '0.0.0.0'"),
    ("192.168.1.20:8765", "only loopback addresses"),
    ("example.com:8765", "only loopback addresses"),
    ("[::]:8765", "refusing"),
    ("8765", "HOST:PORT"),
    ("127.0.0.1:http", "port must be a number"),
    ("127.0.0.1:70000", "1..65535"),
])
def test_http_address_refuses_the_rest(address: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(".", r"\.")):
        parse_http_address(address)


def serve_argv(*extra: str) -> list[str]:
    from graphmem import cli

    if "serve" in cli.COMMANDS:
        return [sys.executable, "-m", "graphmem", "serve", *extra]
    return [sys.executable, "-m", "graphmem.mcp", *extra]  # until the CLI wiring lands


def server_env(home: Path, **extra: str) -> dict[str, str]:
    # The owner's idle timeout must outlast the slowest call, and the tests stop the owner
    # themselves rather than wait for it. No embeddings: loading the model in the owner would
    # double this file's time, and the vector channel is the service's business, not the
    # transport's (bench/bench_mcp.py measures the served path with the model).
    return {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_OWNER_IDLE": "30",
            "GRAPHMEM_EMBED": "false", "FASTMCP_LOG_LEVEL": "WARNING", **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_http_refuses_a_non_loopback_host(home: Path, repo: Path) -> None:
    refused = subprocess.run(serve_argv("--http", "0.0.0.0:8765"), check=False, cwd=repo,
                             env=server_env(home), capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert "only loopback addresses" in refused.stderr and not list(home.rglob("mcp.log"))


def start_http_server(home: Path, repo: Path, port: int, log: Any) -> subprocess.Popen[bytes]:
    """`graphmem serve --http 127.0.0.1:PORT`, once it accepts connections."""
    server = subprocess.Popen(serve_argv("--http", f"127.0.0.1:{port}"), cwd=repo,
                              env=server_env(home), stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                server.wait()
                pytest.fail("HTTP server did not start: " + Path(log.name).read_text())
            time.sleep(0.1)


async def test_stdio_and_http_servers_share_the_owner(home: Path, repo: Path) -> None:
    """`graphmem serve` over stdio starts the owner; a second server over HTTP uses it too."""
    transport = StdioTransport(command=serve_argv()[0], args=serve_argv()[1:],
                               env=server_env(home), cwd=str(repo), keep_alive=False)
    port = free_port()
    http_log = (home.parent / "serve-http.stderr").open("wb")
    http_server: subprocess.Popen[bytes] | None = None
    try:
        async with Client(transport, timeout=120) as client:
            assert {t.name for t in await client.list_tools()} == TOOLS
            first = await call(client, "memory_brief")
            assert first["lines"] == [] and first["project"] == str(repo)
            added = await call(client, "memory_add", kind="pitfall",
                               title="The build breaks when NODE_ENV is unset",
                               files=["package.json"])
            found = await call(client, "memory_search", query="build fails NODE_ENV")
            brief = await call(client, "memory_brief")
        assert found["hits"][0]["item"]["id"] == added["item"]["id"]
        assert brief["item_ids"] == [added["item"]["id"]]
        logs = next(home.rglob("mcp.log")).read_text().splitlines()
        assert [json.loads(line)["tool"] for line in logs][-2:] == ["memory_search",
                                                                    "memory_brief"]

        http_server = start_http_server(home, repo, port, http_log)
        token = next(home.rglob("http.token")).read_text().strip()
        async with Client(f"http://127.0.0.1:{port}/mcp", timeout=60, auth=token) as client:
            shared = await call(client, "memory_brief")
            second = await call(client, "memory_add", kind="env", title="Run make dev first")
        assert shared["item_ids"] == [added["item"]["id"]]
        assert second["merged"] is False
    finally:
        if http_server is not None:
            http_server.terminate()
            http_server.wait(timeout=10)
        http_log.close()
        stop_owner(home, repo)


# ----- startup cost ------------------------------------------------------------------------------
async def test_session_state_still_works_through_the_lazy_store() -> None:
    server = build_server(lambda: None)

    @server.tool
    async def keep(value: str, ctx: Context) -> str:
        before = await ctx.get_state("kept")
        await ctx.set_state("kept", value)  # to the real store, made on this first write
        return f"{before} {await ctx.get_state('kept')}"

    async with Client(server) as client:
        result = await client.call_tool("keep", {"value": "a"})
    assert result.data == "None a"


def test_reading_empty_session_state_needs_no_key_value_store() -> None:
    """fastmcp reads session state on every request; until something is stored, answering that
    must not import its key-value store (~0.4 s before the first answer of `graphmem serve`)."""
    code = """if True:
        import asyncio, sys
        from fastmcp.server.server import StateValue
        from graphmem.mcp import build_server

        store = build_server(lambda: None)._state_store
        async def main():
            assert await store.get(key="rules") is None
            print(sorted(m for m in ("key_value", "griffe") if m in sys.modules))
            await store.put(key="rules", value=StateValue(value=[1]), ttl=60)
            print((await store.get(key="rules")).value)
        asyncio.run(main())
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "[1]"]


async def test_tool_descriptions_are_the_docstrings(shared_server: Any) -> None:
    import inspect

    from graphmem import mcp as module

    async with Client(shared_server) as client:
        tools = {t.name: t.description for t in await client.list_tools()}
    source = inspect.getsource(module.build_server)
    assert tools["memory_brief"].startswith("The project's memory at a glance")
    assert all("\n    " not in text for text in tools.values())  # dedented like getdoc
    assert all(text.split("\n")[0][:30] in source for text in tools.values())


def test_serve_preloads_jsonref_without_requests() -> None:
    code = """if True:
        import sys
        from graphmem import mcp
        mcp._preload(mcp.FASTMCP_LAZY_MODULES)
        import jsonref
        print(jsonref.requests is None, "requests" in sys.modules)
        import requests  # still importable by anyone who wants it
        print(requests is not None)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "True"]
