"""Round 9 of issue #18: the vocabulary (graphmem/extract/vocabulary.py) and the parts text.py switches by name, on lines
of the tuning sets by id (dev.jsonl ``x…``, dev2.jsonl ``z…``, dev3.jsonl ``h2-…`` … dev7.jsonl ``h6-…``, the sixth
held-out set once it had had its one look; a held-out set is never used in tests). Every case fails on the code before
round 9; the guards hold before and after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.extract.text import extract

FRESH = Path(__file__).resolve().parents[2] / "bench" / "data" / "extraction-fresh"
LINES = {r["id"]: r["text"] for split in ("dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7")
         for r in map(json.loads, (FRESH / f"{split}.jsonl").read_text(encoding="utf-8").splitlines())}


def found(text: str, kind: str) -> list[str]:
    return [m.text for m in extract(text, concepts=False) if m.kind == kind]


# (part, dev line, kind, every surface of that kind the line gives, in order)
CASES = [
    ("programs", "h2-0172", "command", ["choco install yarn"]),
    ("programs", "h4-0322", "command", ["nuget restore"]),
    ("programs", "h5-0239", "command", ["dnf install", "apt install"]),
    ("programs", "h5-0278", "command", ["xcode-select --install"]),
    ("programs", "h6-0081", "symbol", []),
    ("programs", "h6-0081", "command", ["dune --version"]),
    ("programs", "h6-0122", "command", ["pub get"]),
    ("programs", "h6-0126", "command", ["powershell -ExecutionPolicy ByPass -File \"Install.ps1\""]),
    ("programs", "h6-0130", "command", ["helm repo update"]),
    ("programs", "h6-0144", "command", ["clang --version"]),
    ("programs", "h6-0164", "command", ["zig version"]),
    ("programs", "h6-0191", "command", ["ansible localhost -m setup"]),
    ("programs", "h6-0200", "command", ["cd my-dir", "zig init-exe"]),
    ("programs", "h6-0246", "command", ["cabal install --only-dependencies --max-backjumps 10000 ganeti.cabal"]),
    ("programs", "h6-0268", "command", ["flutter pub get"]),
    ("programs", "h6-0286", "command", ["flutter pub get", "dart pub get", "pub get"]),
    ("programs", "h6-0404", "command", ["msbuild /m /p:Platform=x64 /p:Configuration=Release netplus.sln /t:Rebuild"]),
    ("programs", "h6-0423", "command", ["zig build"]),
    ("installers", "h6-0041", "package", ["nimlsp"]),
    ("installers", "h6-0105", "package", ["happy", "alex"]),
    ("installers", "h6-0109", "package", ["liquidsoap"]),
    ("installers", "h6-0141", "package", ["dub"]),
    ("installers", "h6-0415", "package", ["dune", "core", "lwt", "re", "color", "sexp_pretty"]),
    ("files", "h5-0158", "file", ["moduleA.aar"]),
    ("files", "h6-0033", "file", ["install_nimble.nims"]),
    ("files", "h6-0033", "symbol", []),
    ("files", "h6-0042", "file", ["parser.zig"]),
    ("files", "h6-0042", "symbol", []),
    ("files", "h6-0076", "file", ["ws2_32.lib"]),
    ("files", "h6-0076", "symbol", []),
    ("files", "h6-0246", "file", ["ganeti.cabal"]),
    ("files", "h6-0246", "symbol", []),
    ("files", "h6-0404", "file", ["netplus.sln"]),
    ("files", "h6-0404", "symbol", []),
    ("files", "h6-0445", "file", ["piaf.opam"]),
    ("files", "h6-0445", "symbol", []),
    ("cmdlet", "h6-0111", "command", ["Set-ExecutionPolicy -ExecutionPolicy RemoteSigned -Scope CurrentUser"]),
    ("cmdlet", "h6-0202", "command", ["Set-ExecutionPolicy unrestricted"]),
    ("cmdlet", "h6-0264", "package", ["Azure"]),
    ("cmdlet", "h6-0264", "command", ["Import-Module Azure"]),
    ("cmdlet", "h6-0313", "command", ["set-executionpolicy bypass –scope process"]),
    ("lone-program", "x182", "command", []),
    ("lone-program", "z259", "command", []),
    ("lone-program", "h5-0435", "command", []),
    ("lone-program", "h6-0081", "command", ["dune --version"]),
    ("lone-program", "h6-0199", "command", []),
    ("specifier", "h6-0159", "package", ["sharp", "npm:sharp@^0.33.5"]),
    ("specifier", "h6-0229", "package", ["npm:esbuild@0.17.6"]),
    ("specifier", "h6-0238", "package", ["npm:khroma@2.1.0"]),
    ("ivy", "h6-0009", "symbol", []),
    ("ivy", "h6-0009", "package", ["org.scoverage#sbt-scoverage;1.5.0"]),
    ("ivy", "h6-0272", "symbol", []),
    ("ivy", "h6-0272", "package", ["foundrylogic.vpp#vpp;2.2.1"]),
    ("lang-install", "h6-0099", "package", ["Pkg", "Pkg", "Pkg"]),
    ("lang-install", "h6-0135", "package", ["BenchmarkTools"]),
    ("lang-install", "h6-0135", "command", ["add BenchmarkTools"]),
    ("lang-install", "h6-0160", "package", ["StatsBase"]),
    ("lang-install", "h6-0198", "package", ["tibble"]),
    ("lang-install", "h6-0394", "package", ["MarkEdmondson1234/googleAnalyticsR"]),
    ("dep-constraint", "h6-0115", "symbol", []),
    ("dep-constraint", "h6-0115", "package", ["Trace", "flutter_circular_chart"]),
    ("dep-constraint", "h6-0122", "package", ["ones_mobile", "fluro"]),
    ("dep-constraint", "h6-0133", "symbol", []),
    ("dep-constraint", "h6-0133", "package", ["eureeca", "flutter_form_builder", "intl", "intl"]),
    ("dep-constraint", "h6-0194", "package", ["flutter_form_app", "intl"]),
    ("module-missing", "h6-0004", "package", ["bs58"]),
    ("module-missing", "h6-0010", "package", ["Dtools"]),
    ("module-missing", "h6-0024", "package", ["httpclient"]),
    ("module-missing", "h6-0147", "package", ["open"]),
    ("solver", "h6-0038", "package", ["test-framework-0.8.2.1", "ganeti"]),
    ("solver", "h6-0148", "package", ["ghc-7.6.3", "ghci-ng", "ghc>=7.8"]),
    ("solver", "h6-0263", "package", ["bin-package-db", "hdevtools-0.1.3.1"]),
    ("spaced-prompt", "h2-0008", "command", ["uv pip install torch==2.2.0 --index-url https://download.pytorch.org/whl/cpu"]),
    ("spaced-prompt", "h6-0241", "command", ["python3 -m pip install --upgrade --no-cache-dir mmpm"]),
    ("keywords", "h6-0094", "symbol", ["hive.api.getAccounts"]),
    ("keywords", "h6-0123", "symbol", []),
    ("keywords", "h6-0183", "symbol", []),
    ("apt-output", "h6-0080", "package", ["luarocks"]),
]


@pytest.mark.parametrize(("part", "line_id", "kind", "expected"), CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES])
def test_vocabulary_part(part: str, line_id: str, kind: str, expected: list[str]) -> None:
    assert found(LINES[line_id], kind) == expected


# Guards: prose naming a program, a hyphenated word or a version line is no command; a yarn descriptor is no specifier
GUARDS = [
    ("Tools like cabal, opam and nimble each resolve versions differently.", "command", []),
    ("I switched from pub to melos for the monorepo.", "command", []),
    ("Lock-in is moderate: it is real Postgres underneath.", "command", []),
    ("See the Set-Cookie: header and the read-only flag.", "command", []),
    ("gcc version 12.2.0 (Debian 12.2.0-14) ", "command", []),
    ("Oh yes sorry, it's `0.7.1`. I got it from `pacman`. My mistake.", "command", []),
    ("➤ YN0007: │ core-js@npm:3.33.2 must be built because it never has been before", "package", []),
    ("1: In install.packages(p, dependencies = TRUE):", "package", []),
    ("Oh I should make some check-list with \"BUILD DAT THING BEFORE COMMIT\" in it", "file", []),
    ("On Fedora, it says dnf install instead of apt install.", "package", []),
    ("- The minimum is gcc >= 4.9 or clang >= 3.6, but older versions are untested", "command", []),
    ("lock-serialized libraries still get *worse*, not better, under", "command", []),
    ("from peewee import fn", "symbol", ["fn"]),
    ("be used as a decorator or called with a name and `func` keyword argument.", "symbol", ["func"]),
    ("  ``to_string()``, and ``kind``.", "symbol", ["to_string()", "kind"]),
]


@pytest.mark.parametrize(("text", "kind", "expected"), GUARDS)
def test_vocabulary_guard(text: str, kind: str, expected: list[str]) -> None:
    assert found(text, kind) == expected
