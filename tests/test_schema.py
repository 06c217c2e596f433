"""schema/ is generated from the code; these tests fail when the two drift apart."""

from pathlib import Path

from graphmem.models import json_schemas

ROOT = Path(__file__).resolve().parent.parent


def test_json_schemas_match_models() -> None:
    for name, text in json_schemas().items():
        path = ROOT / "schema" / name
        assert path.exists(), f"missing {path}; run python scripts/gen_schemas.py"
        assert path.read_text() == text, f"{name} drifted; run python scripts/gen_schemas.py"


def test_graph_ddl_copy_matches_packaged() -> None:
    shipped = ROOT / "graphmem" / "schema" / "graph.cypher"
    assert (ROOT / "schema" / "graph.cypher").read_text() == shipped.read_text()


def test_postgres_migrations_copy_matches_packaged() -> None:
    shipped = sorted((ROOT / "graphmem" / "schema" / "postgres").glob("*.sql"))
    copies = sorted((ROOT / "schema" / "postgres").glob("*.sql"))
    assert shipped and [p.name for p in copies] == [p.name for p in shipped]
    for copy, packaged in zip(copies, shipped):
        assert copy.read_text() == packaged.read_text(), copy.name
