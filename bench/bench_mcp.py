"""MCP benchmark: `graphmem serve` cold start to the first memory_brief, warm memory_search through
the stdio transport at 10k items (beside the same queries sent straight to the owner), and the
resident memory of the server and the owner with the model loaded.

    .venv/bin/python bench/bench_mcp.py [--store /tmp/gmb] [--starts 5] [--queries 100]

The 10k-item store is written with bench_retrieval's bulk_write (~1 min with 2,000 distinct
texts embedded); --store keeps it for the next run."""

from __future__ import annotations

import argparse
import asyncio
import os
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
from graphmem.owner.client import RemoteMemory, owner_running

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


def build_store(home: Path, repo: Path, n: int, embed: bool, distinct: int) -> None:
    """n synthetic items written with bench_retrieval's bulk_write (the store's own write ops,
    ~20 s for 10k) instead of add_items (extraction + embedding per item: ~30 min for 10k).
    `distinct` texts are embedded with MiniLM; the rest repeat them, tagged, with the base
    vector + N(0, 0.02) noise (as bench_retrieval's latency section does)."""
    import numpy as np
    from bench_retrieval import bulk_write, synthetic_items

    config = Config(home=home, cwd=repo, embed=embed)
    with Memory(config) as memory:
        have = memory.store.count_items(m_filter(memory.project))
        if have >= n:
            print(f"  store already holds {have:,} items; reusing it")
            return
        rows = synthetic_items(n, memory.project)[have:]
        now = time.time()
        for i, row in enumerate(rows):  # recent, so the brief's confidence decay keeps them
            row["ts_unix"] = now - 60 * (len(rows) - i)
            row["kind"] = KINDS[i % len(KINDS)]
        started = time.perf_counter()
        distinct = max(1, min(distinct, len(rows)))
        if embed:
            base = memory.embedder.encode([r["text"] for r in rows[:distinct]])
        else:
            base = np.zeros((distinct, 384), dtype=np.float32)
            base[:, 0] = 1.0
        print(f"  embedded {distinct:,} distinct texts in {time.perf_counter() - started:.0f} s",
              flush=True)
        rng = np.random.default_rng(11)
        vectors = np.empty((len(rows), base.shape[1]), dtype=np.float32)
        for i, row in enumerate(rows):
            vectors[i] = base[i % distinct]
            if i >= distinct:
                row["text"] = f"{row['text']} (#{i // distinct})"
                noisy = vectors[i] + rng.normal(0, 0.02, size=base.shape[1])
                vectors[i] = noisy / np.linalg.norm(noisy)
        started = time.perf_counter()
        bulk_write(memory, rows, vectors)
        print(f"  wrote {len(rows):,} items in {time.perf_counter() - started:.0f} s", flush=True)


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


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB: resident now, and the peak."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            fields[line[:5]] = int(line.split()[1]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def load() -> float:
    return os.getloadavg()[0]


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


def queries(n: int) -> list[dict[str, Any]]:
    """Other template texts than the store's (bench_retrieval's probes); every other one passes
    its file as context."""
    from bench_retrieval import synthetic_items

    out = []
    for i, probe in enumerate(synthetic_items(n, "probe", seed=99)):
        args: dict[str, Any] = {"query": probe["text"], "k": 10}
        if i % 2:
            args["files"] = probe["files"]
        out.append(args)
    return out


async def warm_search(home: Path, repo: Path, embed: bool, n: int) -> dict[str, Any]:
    batch = queries(n + 5)
    async with Client(transport(home, repo, embed), timeout=300) as client:
        await client.call_tool("memory_brief", {})
        with remote(home, repo, start=False) as owner:
            while embed and not owner.ping()["model_loaded"]:
                await asyncio.sleep(0.2)
            for args in batch[:5]:  # warm caches, tokenizer, first embedding
                await client.call_tool("memory_search", args)
            mcp_times, direct, sizes = [], [], []
            for args in batch[5:]:  # alternate MCP and direct calls so both see the same load
                started = time.perf_counter()
                result = await client.call_tool("memory_search", args)
                mcp_times.append(time.perf_counter() - started)
                sizes.append(len(result.content[0].text))  # type: ignore[union-attr]
                started = time.perf_counter()
                owner.search(args["query"], files=args.get("files", []), k=args["k"])
                direct.append(time.perf_counter() - started)
            owner_pid = owner.ping()["pid"]
        rss = {"server": rss_mb(server_pid()), "owner": rss_mb(owner_pid)}
    return {"mcp": mcp_times, "direct": direct, "bytes": statistics.median(sizes), "rss": rss,
            "load": load()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--starts", type=int, default=5, help="cold starts per mode")
    parser.add_argument("--no-embed", action="store_true",
                        help="no embeddings (keyword + entity channels only): skips the ~2 min "
                             "it takes to embed 10k items here")
    parser.add_argument("--distinct", type=int, default=2_000,
                        help="texts embedded with MiniLM; the rest repeat them with noise")
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
        stop_owner(home, repo)  # a kept store may still have an owner from an earlier run
        build_store(home, repo, args.items, embed, args.distinct)
        try:
            asyncio.run(first_brief(home, repo, embed))  # the client's own lazy imports, unmeasured
            cold: dict[tuple[str, float], list[tuple[float, float]]] = {}
            loads: dict[str, list[float]] = {}
            for think in (0.0, 1.0):
                key = ("owner not running", think)
                for _ in range(args.starts):
                    stop_owner(home, repo)
                    time.sleep(1.0)  # let the machine settle after the owner's exit
                    cold.setdefault(key, []).append(
                        asyncio.run(first_brief(home, repo, embed, think)))
                    loads.setdefault(key[0], []).append(load())
            stop_owner(home, repo)
            with remote(home, repo, start=True) as owner:
                owner.ping()
            asyncio.run(first_brief(home, repo, embed))  # the client's own lazy imports, unmeasured
            for think in (0.0, 1.0):
                for _ in range(args.starts):
                    cold.setdefault(("owner running", think), []).append(
                        asyncio.run(first_brief(home, repo, embed, think)))
                    loads.setdefault("owner running", []).append(load())
            search = asyncio.run(warm_search(home, repo, embed, args.queries))
        finally:
            stop_owner(home, repo)

    channels = "MiniLM embeddings" if embed else "no embeddings: keyword + entity channels"
    print(f"\nMCP benchmark ({args.items:,} items, {channels}, stdio transport, "
          f"{os.cpu_count()} cores); medians of {args.starts} cold starts; 'load' is the "
          "1-min load average (median over the runs of that row)")
    print(f"  {'what':<52}{'measured':>12}{'target':>12}{'load':>7}")
    for (mode, think), runs in cold.items():
        init = statistics.median(r[0] for r in runs)
        brief = statistics.median(r[1] for r in runs)
        if think == 0.0:
            print(f"  {'spawn → initialized, ' + mode:<52}{init:>10.2f} s")
            print(f"  {'spawn → first brief answered, ' + mode:<52}"
                  f"{statistics.median(r[0] + r[1] for r in runs):>10.2f} s"
                  f"{'≤ ' + str(TARGETS['first_brief']) + ' s':>12}"
                  f"{statistics.median(loads[mode]):>7.1f}")
            print(f"  {'  first brief latency, asked at once':<52}{brief * 1000:>9.0f} ms")
        else:
            print(f"  {'  first brief latency, asked 1 s after initialize':<52}"
                  f"{brief * 1000:>9.0f} ms")
    mcp, direct = search["mcp"], search["direct"]
    print(f"  {'memory_search via MCP, p50':<52}{pct(mcp, .5) * 1000:>9.1f} ms")
    print(f"  {'memory_search via MCP, p95':<52}{pct(mcp, .95) * 1000:>9.1f} ms"
          f"{'≤ ' + str(int(TARGETS['search_p95_ms'])) + ' ms':>12}{search['load']:>7.1f}")
    print(f"  {'baseline: same queries to the owner, p50':<52}{pct(direct, .5) * 1000:>9.1f} ms")
    print(f"  {'baseline: same queries to the owner, p95':<52}{pct(direct, .95) * 1000:>9.1f} ms")
    print(f"  {'MCP overhead at p50':<52}{(pct(mcp, .5) - pct(direct, .5)) * 1000:>9.1f} ms")
    print(f"  {'median search answer size':<52}{search['bytes'] / 1024:>9.1f} KB")
    rss = search["rss"]
    model = " (model loaded)" if embed else ""
    print(f"  {'RSS server (graphmem serve), now / peak':<52}"
          f"{rss['server'][0]:>6.0f} / {rss['server'][1]:.0f} MB")
    print(f"  {'RSS owner' + model + ', now / peak':<52}"
          f"{rss['owner'][0]:>6.0f} / {rss['owner'][1]:.0f} MB"
          f"{'≤ ' + str(int(TARGETS['rss_mb'])) + ' MB':>12}")
    print(f"  {'RSS server + owner, now':<52}{rss['server'][0] + rss['owner'][0]:>9.0f} MB")
    print("  (the RSS target is the owner's: the process that holds the model and the graph; "
          "every MCP server of a project adds its own 'server' figure)")


if __name__ == "__main__":
    main()
