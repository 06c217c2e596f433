"""Import boundaries: each heavy dependency lives in exactly one module; the public API is guarded."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

import graphmem

PACKAGE = Path(graphmem.__file__).parent
OWNERS = {
    "kuzu": {"store/kuzu.py"},
    "ladybug": {"store/kuzu.py"},
    "psycopg": {"store/postgres.py"},
    "pgvector": {"store/postgres.py"},
    "pgserver": set(),
    "spacy": {"extract/text.py"},
    "tree_sitter": {"extract/code.py"},
    "sentence_transformers": {"embed.py"},
    "fastmcp": {"mcp.py"},
    "torch": {"embed.py"},
    "networkx": {"graph.py"},
    "matplotlib": {"graph.py"},
}
HOOK_PATH_FORBIDDEN = ("kuzu", "ladybug", "psycopg", "pgvector", "spacy", "torch",
                       "sentence_transformers", "fastmcp", "tree_sitter", "pydantic", "numpy")


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


def test_torch_and_sentence_transformers_are_an_extra_make_install_installs() -> None:
    """The default model runs in numpy: only a model named in config needs them."""
    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}

    heavy = {"torch", "sentence-transformers"}
    assert not names(project["dependencies"]) & heavy
    assert names(project["optional-dependencies"]["st"]) == heavy
    makefile = (PACKAGE.parent / "Makefile").read_text()
    extras = re.search(r"-e '\.\[([\w,]+)\]'", makefile)
    assert extras and "st" in extras.group(1).split(",")
    assert makefile.index("pip install --quiet torch==2.13.0") < extras.start()


def test_errors_and_models_import_nothing_of_ours_but_the_kinds() -> None:
    for name in ("errors.py", "kinds.py"):
        assert "graphmem" not in imported_roots(PACKAGE / name)
    ours = {n.module for n in ast.walk(ast.parse((PACKAGE / "models.py").read_text()))
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("graphmem")}
    assert ours == {"graphmem.kinds"}


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
    """After every commit the hooks run graphmem/staleness/hook.py: without an owner it opens the
    store itself, and still needs neither pydantic, our models nor the retrieval code."""
    import subprocess
    import sys

    forbidden = ("pydantic", "torch", "spacy", "sentence_transformers", "fastmcp",
                 "graphmem.config", "graphmem.models", "graphmem.service", "graphmem.retrieve")
    code = ("import sys, graphmem.staleness.hook, graphmem.staleness.update, "
            "graphmem.owner.client, graphmem.store.journal, graphmem.store.writer; "
            f"print(','.join(m for m in {forbidden!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_journal_op_has_an_applier_in_every_engine() -> None:
    from graphmem.store import kuzu, ops, postgres
    from graphmem.store.hot import FOLLOW

    declared = set(ops.OPS.values())
    assert set(FOLLOW) == declared
    for appliers, engine in ((kuzu.APPLIERS, kuzu.KuzuStore),
                             (postgres.APPLIERS, postgres.PostgresStore)):
        assert set(appliers) == declared, engine
        for name in appliers.values():
            assert callable(getattr(engine, name, None)), (engine, name)


def test_only_the_writer_writes() -> None:
    """No module builds a journal op dict by hand or calls a private write; ops are typed."""
    offenders = []
    for path in MODULES:
        text = path.read_text()
        rel = str(path.relative_to(PACKAGE))
        if ('{"op":' in text and rel != "store/ops.py") or "._write(" in text:
            offenders.append(rel)
        if ".journal.append(" in text and rel != "store/writer.py":
            offenders.append(rel)
    assert offenders == []


def test_an_unknown_op_is_refused_when_it_is_made() -> None:
    from graphmem.errors import InvalidInput
    from graphmem.store import ops

    with pytest.raises(InvalidInput):
        ops.PutLinks("LIKES", [])
    with pytest.raises(InvalidInput):
        ops.UpdateItems(["i1"], {"no_such_field": 1})
    with pytest.raises(InvalidInput):
        ops.decode({"op": "no_such_op", "seq": 1})


def _our_imports(path: Path) -> set[str]:
    """graphmem modules a file imports (absolute imports, anywhere in the file)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("graphmem"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("graphmem")}
    return found


@pytest.mark.parametrize("engine", ["graphmem.store.kuzu", "graphmem.store.postgres"])
def test_only_store_imports_the_engine_module(engine: str) -> None:
    outside = {str(p.relative_to(PACKAGE)) for p in MODULES
               if not str(p.relative_to(PACKAGE)).startswith("store/")
               and engine in _our_imports(p)}
    assert outside == set()


def test_capture_imports_neither_store_nor_retrieve() -> None:
    bad = {str(p.relative_to(PACKAGE)): sorted(m for m in _our_imports(p)
                                             if m.startswith(("graphmem.store", "graphmem.retrieve")))
           for p in (PACKAGE / "capture").rglob("*.py")}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_store_protocol_is_what_the_engines_offer() -> None:
    from graphmem.store.base import Store
    from graphmem.store.kuzu import KuzuStore
    from graphmem.store.postgres import PostgresStore

    verbs = {n for n in vars(Store) if not n.startswith("_")}
    for engine in (KuzuStore, PostgresStore):
        missing = {n for n in verbs if not hasattr(engine, n)}
        assert verbs and missing == set(), engine


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



def _runs_git(path: Path) -> bool:
    """An argv that starts with "git" (["git", ...]), or a shell command line that does."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, (ast.List, ast.Tuple)) and node.elts
                and isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "git"):
            return True
        if isinstance(node, ast.Call) and _PROCESS_CALLS & {
                getattr(node.func, "attr", None), getattr(node.func, "id", None)} and any(
                isinstance(a, ast.Constant) and isinstance(a.value, str)
                and a.value.lstrip().startswith("git ") for a in node.args):
            return True
    return False


_PROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output", "system", "getoutput",
                  "getstatusoutput"}


def test_only_the_git_module_runs_git() -> None:
    """graphmem/git.py holds the one git runner (environment, timeout, errors); the rest call
    it. The installed hook scripts are shell text, not Python that runs git."""
    assert {str(p.relative_to(PACKAGE)) for p in MODULES if _runs_git(p)} == {"git.py"}


def test_the_git_module_is_stdlib_only() -> None:
    """The git hooks' lean path and capture may import it: nothing heavy, none of our models."""
    ours = {n.module for n in ast.walk(ast.parse((PACKAGE / "git.py").read_text()))
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("graphmem")}
    assert ours <= {"graphmem", "graphmem.errors", "graphmem.paths"}
    assert not imported_roots(PACKAGE / "git.py") - {"graphmem", "os", "re", "subprocess",
                                                       "collections", "dataclasses", "pathlib",
                                                       "typing", "__future__"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_module_level_import_cycles() -> None:
    names = {_module_name(p): p for p in MODULES}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        found = set()
        for node in ast.parse(path.read_text()).body:  # module level: lazy imports may cycle
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("graphmem"):
                found |= {f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in names
                          else node.module for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("graphmem")}
        graph[name] = {m for m in found if m in names and m != name}
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError(" -> ".join(path[path.index(name):] + [name]))
        if name in done:
            return
        for other in sorted(graph[name]):
            visit(other, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_no_module_imports_another_modules_private_names() -> None:
    private = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("graphmem"):
                private += [f"{path.relative_to(PACKAGE)}: {node.module}.{a.name}"
                            for a in node.names if a.name.startswith("_")]
    assert private == []


def test_item_columns_are_the_item_fields() -> None:
    from graphmem.models import MemoryItem
    from graphmem.store.schema import DERIVED_ITEM_COLUMNS, ITEM_COLUMNS

    assert set(ITEM_COLUMNS) == set(MemoryItem.model_fields) | set(DERIVED_ITEM_COLUMNS)


def _graphmem_names(path: Path) -> list[str]:
    """String constants that are a whole GRAPHMEM_* name, and f-strings that build one."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if re.fullmatch(r"\$?\{?GRAPHMEM_[A-Z0-9_]+\}?", node.value):
                found.append(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith("GRAPHMEM_"):
                found.append(ast.unparse(node))
    return found


def test_only_env_names_graphmem_variables() -> None:
    """env.py declares every GRAPHMEM_* variable; everything else reads (or sets, for a child
    process) them through it, so no variable is read where its type and default are unknown."""
    users = {str(p.relative_to(PACKAGE)): names for p in MODULES
             if p.name != "env.py" and (names := _graphmem_names(p))}
    assert users == {}


def test_the_owner_serves_declared_verbs_of_memory_each_marked_read_or_write() -> None:
    from graphmem.owner.codec import METHODS, READ_METHODS
    from graphmem.service import Memory

    assert all(callable(getattr(Memory, name, None)) for name in METHODS)
    assert {"search", "brief", "ping", "request_status"} <= READ_METHODS
    assert not {"add", "forget", "forget_many", "import_items", "rebuild"} & READ_METHODS
