"""env.py declares every GRAPHMEM_* variable once; Config and the light paths read through it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import graphmem
from graphmem import env
from graphmem.cli import main
from graphmem.config import Config, RetrievalWeights
from graphmem.errors import InvalidInput

PACKAGE = Path(graphmem.__file__).parent


def test_config_fields_are_the_declared_config_variables_in_order() -> None:
    assert list(Config.model_fields) == [v.key for v in env.VARIABLES.values() if v.config]


def test_config_defaults_and_descriptions_come_from_the_declarations() -> None:
    config = Config()
    for key, field in Config.model_fields.items():
        variable = env.VARIABLES[key]
        assert field.description == variable.meaning, key
        if key != "weights":
            assert getattr(config, key) == variable.default_value(), key
    assert config.weights == RetrievalWeights()


def test_every_process_variable_is_read_somewhere() -> None:
    """A declared variable nothing reads would be documentation of a knob that does not exist."""
    sources = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "env.py")
    unread = [v.name for v in env.VARIABLES.values()
              if not v.config and not re.search(rf"\benv\.\w+\(\s*\"{v.key}\"", sources)]
    assert unread == []


@pytest.mark.parametrize("reader, key, value, expected", [
    (env.integer, "trim_bytes", "4096", 4096),
    (env.integer, "trim_bytes", "lots", 8192),
    (env.integer, "trim_bytes", "", 8192),
    (env.number, "inject_wait", "1.5", 1.5),
    (env.number, "inject_wait", "soon", 0.3),
    (env.flag, "no_inject", "1", True),
    (env.flag, "no_inject", "true", True),
    (env.flag, "no_inject", "0", False),
    (env.flag, "no_inject", "off", False),
    (env.strings, "redact_extra", '["a", 1]', ["a", "1"]),
    (env.strings, "redact_extra", '{"a": 1}', []),
    (env.strings, "redact_extra", "[", []),
    (env.text, "owner", " never ", "never"),
    (env.text, "owner", "", "auto"),
    (env.path, "home", "/tmp/x", Path("/tmp/x")),
])
def test_typed_readers_fall_back_to_the_default(monkeypatch, reader, key, value, expected) -> None:
    monkeypatch.setenv(env.name(key), value)
    assert reader(key) == expected


def test_an_undeclared_variable_is_an_error() -> None:
    with pytest.raises(KeyError):
        env.raw("no_such_knob")


def test_config_from_env_reads_through_the_declarations(monkeypatch) -> None:
    monkeypatch.setenv("GRAPHMEM_HTTP_ALLOWED_HOSTS", '["memory.example.com"]')
    monkeypatch.setenv("GRAPHMEM_WEIGHTS", '{"vector": 0.8}')
    monkeypatch.setenv("GRAPHMEM_BRIEF_BUDGET", "300")
    config = Config.from_env()
    assert config.http_allowed_hosts == ["memory.example.com"]
    assert config.weights.vector == 0.8 and config.brief_budget == 300
    monkeypatch.setenv("GRAPHMEM_TTL_DAYS", "{")
    with pytest.raises(InvalidInput, match="GRAPHMEM_TTL_DAYS is not valid JSON"):
        Config.from_env()


def test_cli_config_lists_every_variable_without_values(monkeypatch, capsys) -> None:
    monkeypatch.setenv("GRAPHMEM_LLM_API_KEY", "sk-very-secret")
    assert main(["config", "--json"]) == 0
    out = capsys.readouterr().out
    rows = {r["name"]: r for r in json.loads(out)}
    assert list(rows) == [v.name for v in env.VARIABLES.values()]
    assert rows["GRAPHMEM_LLM_API_KEY"]["set"] is True and "sk-very-secret" not in out
    assert rows["GRAPHMEM_BRIEF_BUDGET"]["default"] == 400
