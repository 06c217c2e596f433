"""Item kinds are declared once (graphmem/kinds.py); every list of them derives from it."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from graphmem import kinds, models
from graphmem.capture import compress, llm
from graphmem.cli import main
from graphmem.lifecycle import DEFAULT_TTL_DAYS
from graphmem.retrieve import render

ALL = {k.value for k in kinds.ItemKind}


def test_the_written_kinds_are_every_kind_but_history() -> None:
    assert models.ItemKind is kinds.ItemKind
    assert set(kinds.WRITTEN) == ALL - {"history"}
    assert compress.KINDS == kinds.WRITTEN
    assert typing.get_args(llm.Kind) == kinds.WRITTEN


def test_the_mcp_add_tool_offers_the_written_kinds() -> None:
    from graphmem import mcp
    assert typing.get_args(mcp.AddKind) == kinds.WRITTEN


@pytest.mark.parametrize("table", [DEFAULT_TTL_DAYS, render.BRIEF_ORDER, render.KIND_LABEL],
                         ids=["ttl", "brief_order", "label"])
def test_per_kind_tables_cover_every_kind(table) -> None:
    assert set(table) == ALL


def test_cli_adds_and_lists_a_summary(capsys, home: Path, repo: Path) -> None:
    """`add --kind` used to offer every written kind but summary."""
    def cli(*args: str) -> tuple[int, str]:
        code = main([*args, "--cwd", str(repo)])
        return code, capsys.readouterr().out

    code, _ = cli("add", "--kind", "summary", "Session goal: move the CI to uv; done, docs open")
    assert code == 0
    code, out = cli("list", "--kind", "summary", "--json")
    assert code == 0 and [i["kind"] for i in json.loads(out)] == ["summary"]
    with pytest.raises(SystemExit):
        main(["list", "--kind", "sumary", "--cwd", str(repo)])
