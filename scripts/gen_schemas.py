"""Regenerate schema/*.schema.json and the packaged graph DDL copy from the code."""

import shutil
from pathlib import Path

from graphmem.models import json_schemas

root = Path(__file__).resolve().parent.parent
for name, text in json_schemas().items():
    (root / "schema" / name).write_text(text)
shutil.copy(root / "graphmem" / "schema" / "graph.cypher", root / "schema" / "graph.cypher")
print("schema/ regenerated")
