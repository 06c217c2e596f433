"""Benchmark the code index: cold indexing speed and re-index time after one file changes.

Usage: python bench/bench_code_index.py [--runs N] [PATH ...]

Without paths it indexes the installed networkx package and the first installed JavaScript
package tree it finds (a global npm install, or ./node_modules). Each tree is copied to a temporary
directory first, so nothing installed is ever modified.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from collections import Counter
from pathlib import Path

from graphmem.extract.code import IndexResult, index_repository

TARGET_FILES_PER_SECOND = 200.0
TARGET_REINDEX_SECONDS = 0.2
JS_CANDIDATES = (
    "/usr/lib/node_modules/npm/node_modules",
    "/usr/local/lib/node_modules/npm/node_modules",
    "node_modules",
)


def default_paths() -> list[Path]:
    """The networkx source tree and one installed JavaScript tree, if present."""
    import networkx

    paths = [Path(networkx.__file__).parent]
    for candidate in JS_CANDIDATES:
        if Path(candidate).is_dir() and any(Path(candidate).rglob("*.js")):
            paths.append(Path(candidate).resolve())
            break
    return paths


def pick_file(result: IndexResult) -> str:
    """A parsed source file with symbols to modify between runs (the one with most symbols)."""
    return max(result.files.values(), key=lambda f: (len(f.symbols), f.path)).path


def bench_tree(source: Path, runs: int) -> dict[str, object]:
    """Index a copy of source cold `runs` times, then re-index after touching one file."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        shutil.copytree(source, root, symlinks=True)
        cold_runs = [index_repository(root) for _ in range(runs)]
        cold = cold_runs[-1]
        target = root / pick_file(cold)
        reindex = []
        previous = cold.files
        for run in range(runs):
            with target.open("a") as handle:
                handle.write(f"\n// bench edit {run}\n" if target.suffix != ".py" else
                             f"\n\ndef _bench_edit_{run}():\n    return {run}\n")
            result = index_repository(root, previous)
            assert result.changed == [target.relative_to(root).as_posix()], result.changed
            reindex.append(result.seconds)
            previous = result.files
    languages = Counter(f.language or "other" for f in cold.files.values())
    cold_seconds = statistics.median(r.seconds for r in cold_runs)
    return {
        "tree": str(source),
        "files": len(cold.files),
        "languages": dict(languages.most_common()),
        "symbols": sum(len(f.symbols) for f in cold.files.values()),
        "cold_seconds": cold_seconds,
        "files_per_second": len(cold.files) / cold_seconds,
        "reindex_seconds": statistics.median(reindex),
        "skipped": dict(cold.skipped),
        "syntax_error_files": sum(1 for f in cold.files.values() if f.error_count),
    }


def main() -> None:
    """Run the benchmark and print figures beside their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="source trees to index")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (median)")
    args = parser.parse_args()
    for path in args.paths or default_paths():
        figures = bench_tree(path, args.runs)
        print(f"tree: {figures['tree']}")
        print(f"  files {figures['files']}  symbols {figures['symbols']}  "
              f"languages {figures['languages']}")
        print(f"  skipped {figures['skipped']}  files with syntax errors "
              f"{figures['syntax_error_files']}")
        print(f"  {'measure':<22}{'median':>12}{'target':>12}")
        print(f"  {'cold files/s':<22}{figures['files_per_second']:>12.0f}"
              f"{TARGET_FILES_PER_SECOND:>12.0f}")
        print(f"  {'cold seconds':<22}{figures['cold_seconds']:>12.3f}{'':>12}")
        print(f"  {'re-index 1 file (s)':<22}{figures['reindex_seconds']:>12.3f}"
              f"{TARGET_REINDEX_SECONDS:>12.3f}")


if __name__ == "__main__":
    main()
