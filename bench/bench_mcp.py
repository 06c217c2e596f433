"""MCP benchmark: `graphmem serve` cold start to the first memory_brief, warm memory_search through
the stdio transport at 10k items (beside the same queries sent straight to the owner), and the
resident memory of the server and the owner with the model loaded."""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from graphmem import Config, Memory
from graphmem import models as m
from graphmem.client import RemoteMemory, owner_running

VOCABULARY = ("parse config session adapter retry timeout proxy auth cookie redirect header stream "
              "chunk encoding json certificate pool socket ssl verify mount hook response request "
              "charset netrc digest basic tls chunked cache migration schema index lock queue "
              "worker deadline backoff token refresh")
WORDS = VOCABULARY.split()
KINDS = ("decision", "pitfall", "convention", "env", "fact", "task")
TARGETS = {"first_brief": 1.5, "search_p95_ms": 30.0, "rss_mb": 600.0}


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def serve_argv() -> list[str]:
    from graphmem import cli

    if "serve" in cli.COMMANDS:
        return [sys.executable, "-m", "graphmem", "serve"]
    return [sys.executable, "-m", "graphmem.mcp"]


def make_items(n: int, project: str, rng: random.Random) -> tuple[list[m.MemoryItem],
                                                                   dict[str, list[str]],
                                                                   dict[str, list[str]]]:
    items, files, symbols = [], {}, {}
    for i in range(n):
        module = f"src/pkg{i % 37}/mod{i % 500}.py"
        function = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"
        title = (f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} "
                 f"{' '.join(rng.sample(WORDS, 4))} in {function}")
        body = " ".join(rng.choices(WORDS, k=25)) + f". See {module}."
        item = m.MemoryItem(project=project, branch="main", kind=m.ItemKind(rng.choice(KINDS)),
                            title=title, body=body, created_at=time.time() - i * 60)
        items.append(item)
        files[item.id], symbols[item.id] = [module], [function]
    return items, files, symbols


def build_store(home: Path, repo: Path, n: int, embed: bool) -> None:
    config = Config(home=home, cwd=repo, embed=embed)
    with Memory(config) as memory:
        have = memory.store.count_items(m_filter(memory.project))
        if have >= n:
            print(f"  store already holds {have:,} items; reusing it")
            return
        items, files, symbols = make_items(n - have, memory.project, random.Random(7))
        started = time.perf_counter()
        for start in range(0, len(items), 1000):
            memory.add_items(items[start:start + 1000], files=files, symbols=symbols,
                             dedupe=False, embed=embed)
            print(f"  built {have + min(start + 1000, len(items)):,} items "
                  f"({time.perf_counter() - started:.0f} s)", flush=True)
        if embed:
            memory.store.ensure_vector_index()


def m_filter(project: str) -> Any:
    from graphmem.store.base import ItemFilter

    return ItemFilter(project=project, statuses=None)


def env_for(home: Path, embed: bool) -> dict[str, str]:
    return {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_OWNER_IDLE": "600",
            "GRAPHMEM_EMBED": "true" if embed else "false", "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "FASTMCP_LOG_LEVEL": "WARNING"}


def remote(home: Path, repo: Path, start: bool) -> RemoteMemory:
    config = Config(home=home, cwd=repo)
    return RemoteMemory(config, Memory.data_dir_for(config), str(repo), "main", start=start)


def stop_owner(home: Path, repo: Path) -> None:
    data_dir = Memory.data_dir_for(Config(home=home, cwd=repo))
    if not owner_running(data_dir):
        return
    with remote(home, repo, start=False) as owner:
        pid = owner.ping()["pid"]
    os.kill(pid, signal.SIGTERM)
    while owner_running(data_dir):
        time.sleep(0.02)
    time.sleep(0.2)  # let the process release the database files


def transport(home: Path, repo: Path, embed: bool) -> StdioTransport:
    argv = serve_argv()
    return StdioTransport(command=argv[0], args=argv[1:], env=env_for(home, embed),
                          cwd=str(repo), keep_alive=False)


async def first_brief(home: Path, repo: Path, embed: bool,
                      think: float = 0.0) -> tuple[float, float]:
    """Seconds from spawning `graphmem serve` to initialize done, and the latency of the first
    memory_brief sent `think` seconds after that (an agent rarely calls at once)."""
    started = time.perf_counter()
    async with Client(transport(home, repo, embed), timeout=120) as client:
        initialized = time.perf_counter() - started
        await asyncio.sleep(think)
        asked = time.perf_counter()
        await client.call_tool("memory_brief", {})
        answered = time.perf_counter() - asked
    return initialized, answered


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def server_pid() -> int:
    """The `graphmem serve` process this benchmark spawned (a child of ours)."""
    me = str(os.getpid())
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[1] == me and "graphmem" in cmdline \
                and " owner" not in cmdline:
            return int(proc.name)
    raise RuntimeError("server process not found")


def queries(n: int, rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        args: dict[str, Any] = {"query": " ".join(rng.sample(WORDS, 3)), "k": 10}
        if i % 2:
            args["files"] = [f"src/pkg{rng.randrange(37)}/mod{rng.randrange(500)}.py"]
        out.append(args)
    return out


async def warm_search(home: Path, repo: Path, embed: bool, n: int) -> dict[str, Any]:
    rng = random.Random(11)
    batch = queries(n, rng)
    async with Client(transport(home, repo, embed), timeout=300) as client:
        await client.call_tool("memory_brief", {})
        with remote(home, repo, start=False) as owner:
            while embed and not owner.ping()["model_loaded"]:
                await asyncio.sleep(0.2)
            for args in batch[:5]:  # warm caches, tokenizer, first embedding
                await client.call_tool("memory_search", args)
            mcp_times, direct, sizes = [], [], []
            for args in batch:  # alternate MCP and direct calls so both see the same load
                started = time.perf_counter()
                result = await client.call_tool("memory_search", args)
                mcp_times.append(time.perf_counter() - started)
                sizes.append(len(result.content[0].text))  # type: ignore[union-attr]
                started = time.perf_counter()
                owner.search(args["query"], files=args.get("files", []), k=args["k"])
                direct.append(time.perf_counter() - started)
            owner_pid = owner.ping()["pid"]
        rss = {"server": rss_mb(server_pid()), "owner": rss_mb(owner_pid)}
    return {"mcp": mcp_times, "direct": direct, "bytes": statistics.median(sizes), "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--starts", type=int, default=5, help="cold starts per mode")
    parser.add_argument("--no-embed", action="store_true",
                        help="no embeddings (keyword + entity channels only): skips the ~2 min "
                             "it takes to embed 10k items here")
    parser.add_argument("--store", help="keep the built store here and reuse it next time")
    args = parser.parse_args()
    embed = not args.no_embed
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.store or tmp).resolve()
        home, repo = root / "home", root / "repo"
        if not (repo / ".git").exists():
            repo.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        print(f"building a {args.items:,}-item store ({'with' if embed else 'without'} "
              "embeddings)…", flush=True)
        build_store(home, repo, args.items, embed)
        try:
            cold: dict[tuple[str, float], list[tuple[float, float]]] = {}
            for think in (0.0, 1.0):
                key = ("owner not running", think)
                for _ in range(args.starts):
                    stop_owner(home, repo)
                    time.sleep(1.0)  # let the machine settle after the owner's exit
                    cold.setdefault(key, []).append(
                        asyncio.run(first_brief(home, repo, embed, think)))
            stop_owner(home, repo)
            with remote(home, repo, start=True) as owner:
                owner.ping()
            asyncio.run(first_brief(home, repo, embed))  # the client's own lazy imports, unmeasured
            for think in (0.0, 1.0):
                for _ in range(args.starts):
                    cold.setdefault(("owner running", think), []).append(
                        asyncio.run(first_brief(home, repo, embed, think)))
            search = asyncio.run(warm_search(home, repo, embed, args.queries))
        finally:
            stop_owner(home, repo)

    channels = "MiniLM embeddings" if embed else "no embeddings: keyword + entity channels"
    print(f"\nMCP benchmark ({args.items:,} items, {channels}, stdio transport, "
          f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}); medians of "
          f"{args.starts} cold starts")
    print(f"  {'what':<52}{'measured':>12}{'target':>12}")
    for (mode, think), runs in cold.items():
        init = statistics.median(r[0] for r in runs)
        brief = statistics.median(r[1] for r in runs)
        if think == 0.0:
            print(f"  {'spawn → initialized, ' + mode:<52}{init:>10.2f} s")
            print(f"  {'spawn → first brief answered, ' + mode:<52}"
                  f"{statistics.median(r[0] + r[1] for r in runs):>10.2f} s"
                  f"{'≤ ' + str(TARGETS['first_brief']) + ' s':>12}")
            print(f"  {'  first brief latency, asked at once':<52}{brief * 1000:>9.0f} ms")
        else:
            print(f"  {'  first brief latency, asked 1 s after initialize':<52}"
                  f"{brief * 1000:>9.0f} ms")
    mcp, direct = search["mcp"], search["direct"]
    print(f"  {'memory_search via MCP, p50':<52}{pct(mcp, .5) * 1000:>9.1f} ms")
    print(f"  {'memory_search via MCP, p95':<52}{pct(mcp, .95) * 1000:>9.1f} ms"
          f"{'≤ ' + str(int(TARGETS['search_p95_ms'])) + ' ms':>12}")
    print(f"  {'baseline: same queries to the owner, p50':<52}{pct(direct, .5) * 1000:>9.1f} ms")
    print(f"  {'baseline: same queries to the owner, p95':<52}{pct(direct, .95) * 1000:>9.1f} ms")
    print(f"  {'MCP overhead at p50':<52}{(pct(mcp, .5) - pct(direct, .5)) * 1000:>9.1f} ms")
    print(f"  {'median search answer size':<52}{search['bytes'] / 1024:>9.1f} KB")
    rss = search["rss"]
    print(f"  {'RSS server (graphmem serve)':<52}{rss['server']:>9.0f} MB")
    print(f"  {'RSS owner' + (' (model loaded)' if embed else ''):<52}{rss['owner']:>9.0f} MB")
    print(f"  {'RSS server + owner':<52}{rss['server'] + rss['owner']:>9.0f} MB"
          f"{'≤ ' + str(int(TARGETS['rss_mb'])) + ' MB':>12}")


if __name__ == "__main__":
    main()
