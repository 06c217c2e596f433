"""Import boundaries: each heavy dependency lives in exactly one module; the public API is guarded."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import graphmem

PACKAGE = Path(graphmem.__file__).parent
OWNERS = {
    "kuzu": {"store/kuzu.py"},
    "ladybug": {"store/kuzu.py"},
    "spacy": {"extract/text.py"},
    "tree_sitter": {"extract/code.py"},
    "sentence_transformers": {"embed.py"},
    "fastmcp": {"mcp.py"},
    "torch": {"embed.py"},
    "networkx": {"graph.py"},
    "matplotlib": {"graph.py"},
}
HOOK_PATH_FORBIDDEN = ("kuzu", "ladybug", "spacy", "torch", "sentence_transformers", "fastmcp", "tree_sitter",
                       "pydantic", "numpy")


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return {r if not r.startswith("tree_sitter") else "tree_sitter" for r in roots}


MODULES = sorted(p for p in PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("dependency", sorted(OWNERS))
def test_heavy_dependency_has_one_home(dependency: str) -> None:
    users = {str(p.relative_to(PACKAGE)) for p in MODULES if dependency in imported_roots(p)}
    assert users <= OWNERS[dependency], f"{dependency} imported outside its module: {users}"


def test_errors_and_models_import_nothing_of_ours() -> None:
    for name in ("errors.py", "models.py"):
        assert "graphmem" not in imported_roots(PACKAGE / name)


def test_public_api_is_exactly_all() -> None:
    assert graphmem.__all__ == sorted(graphmem.__all__)
    for name in graphmem.__all__:
        assert getattr(graphmem, name) is not None
    assert set(graphmem.__all__) == {
        "Brief", "Config", "Entity", "EntityKind", "EvidenceExcerpt", "GraphmemError", "Hit",
        "InvalidInput", "ItemDetail", "ItemKind", "ItemStatus", "Link", "Memory", "MemoryItem",
        "NotFound", "Observation", "OwnerUnavailable", "RetrievalWeights", "Scope", "SearchResult",
        "StoreCorrupt", "StoreUnavailable"}
    assert graphmem.__all__ == sorted(graphmem._EXPORTS)  # every lazy export is public


def test_hook_fast_path_imports_nothing_heavy() -> None:
    import subprocess
    import sys

    code = ("import sys, graphmem.hooks; "
            f"print(','.join(m for m in {HOOK_PATH_FORBIDDEN!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_git_hook_updater_imports_no_service_layer() -> None:
    """After every commit the hooks run graphmem/stalehook.py: without an owner it opens the
    store itself, and still needs neither pydantic, our models nor the retrieval code."""
    import subprocess
    import sys

    forbidden = ("pydantic", "torch", "spacy", "sentence_transformers", "fastmcp",
                 "graphmem.config", "graphmem.models", "graphmem.service", "graphmem.retrieve")
    code = ("import sys, graphmem.stalehook, graphmem.staleness, graphmem.client, "
            "graphmem.store.journal, graphmem.store.kuzu; "
            f"print(','.join(m for m in {forbidden!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_opening_a_store_loads_no_config(tmp_path) -> None:
    """The git hook without an owner opens the store itself: choosing the engine
    (GRAPHMEM_ENGINE) must not load Config and pydantic on that path."""
    import subprocess
    import sys

    code = ("import sys, pathlib; from graphmem.store.kuzu import KuzuStore; "
            f"KuzuStore(pathlib.Path({str(tmp_path / 'g.kuzu')!r})).close(); "
            "print(','.join(m for m in ('pydantic', 'graphmem.config') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""

