"""Calibrate the prompt hook's relevance floor on replayed real sessions (after `make sessbench`).

For each floor: injection recall of each project's own gold probes, and how often another
project's probes (prompts about code this store never saw) get anything injected at all. The
default floor (0.50) is where the second falls to about 5 % while the first still holds.

Each store is copied first, so nothing here changes the replayed runs. Usage:
    python bench/inject_floor.py [--runs $SESSBENCH_OUT] [--floors 0.40,0.45,0.50,0.55]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSBENCH = ROOT.parent / "shared" / "sessbench"
PROJECTS = {"spotter": ROOT.parent / "shared" / "bench-data" / "sessions",
            "entire-cli": ROOT.parent / "shared" / "bench-data" / "sessions",
            "ida-hcli": ROOT / "bench" / "sessions", "napoli": ROOT / "bench" / "sessions",
            "dndsheets": ROOT / "bench" / "sessions"}


def recalled(must: list[list[str]], entries: list[str]) -> bool:
    """score.py's rule: one injected entry holds an alternative of every must group."""
    return any(all(any(alt.lower() in entry.lower() for alt in group) for group in must) for entry in entries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=os.environ.get("SESSBENCH_OUT", os.path.join(tempfile.gettempdir(), "sessbench")))
    parser.add_argument("--floors", default="0.40,0.45,0.50,0.55")
    args = parser.parse_args()
    sys.path.insert(0, str(SESSBENCH))
    from score import split_entries  # the benchmark's own entry split

    from graphmem.config import Config
    from graphmem.service import Memory

    floors = [float(f) for f in args.floors.split(",")]
    gold = {p: json.loads((d / p / "gold.json").read_text())["facts"] for p, d in PROJECTS.items()
            if (Path(args.runs) / "runs" / p / "gmhome.pristine").is_dir()}
    if not gold:
        sys.exit(f"no replayed projects under {args.runs}/runs: run `make sessbench` first")
    tally = {f: [0, 0, 0, 0] for f in floors}  # recalled, probes, other projects' injecting, their probes
    for project, facts in gold.items():
        run = Path(args.runs) / "runs" / project
        with tempfile.TemporaryDirectory() as home:
            shutil.copytree(run / "gmhome.pristine", home, dirs_exist_ok=True)
            os.environ["GRAPHMEM_HOME"] = home
            state = json.loads((run / "state.json").read_text())
            others = [f["probe"] for p, fs in gold.items() if p != project for f in fs]
            with Memory(Config.from_env(cwd=state["probe_cwd"])) as memory:
                for floor in floors:
                    memory.config.inject_floor = floor
                    for fact in facts:
                        context = memory.prompt_context(fact["probe"])
                        tally[floor][0] += recalled(fact["must"], split_entries(context))
                        tally[floor][1] += 1
                    tally[floor][2] += sum(bool(memory.prompt_context(probe)) for probe in others)
                    tally[floor][3] += len(others)
    print(f"{len(gold)} projects: {', '.join(gold)}")
    for floor, (hit, probes, noisy, foreign) in tally.items():
        print(f"floor {floor:.2f}: own probes recalled {hit}/{probes} ({hit / probes:.2f}); "
              f"other projects' probes injecting {noisy}/{foreign} ({noisy / foreign:.2f})")


if __name__ == "__main__":
    main()
