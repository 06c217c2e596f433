"""Tests for the tree-sitter code index, with real grammars, real files and real git repos."""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from graphmem.extract.code import (
    LANGUAGES,
    CodeFile,
    index_repository,
    parse_source,
    resolve_imports,
    symbol_at,
    symbols_touching,
)

PYTHON = '''\
import os
from .util import helper


@cache
def load(path):
    """Read a file."""
    def inner():
        return path
    return inner


class Store(Base):
    async def get(self, key):
        return self.data[key]

    @property
    def size(self):
        return len(self.data)
'''

JAVASCRIPT = """\
import { parse } from './parser.js';

export function main(argv) {
  return parse(argv);
}

class Widget extends Base {
  render() {
    return 1;
  }
  onClick = () => this.render();
}

export const double = (x) => x * 2;
"""

TYPESCRIPT = """\
import { Shape } from "./shape";

export interface Point {
  x: number;
}

export type Id = string;

enum Color { Red, Green }

export class Circle implements Shape {
  area(): number {
    return 3.14;
  }
}

export const make = (r: number): Circle => new Circle();
"""

TSX = """\
import React from "react";

type Props = { title: string };

export function Header(props: Props) {
  return <h1>{props.title}</h1>;
}

export const Footer = () => <footer />;
"""

GO = """\
package server

import (
\t"fmt"
\t"github.com/acme/app/internal/store"
)

type Server struct {
\taddr string
}

type Runner interface {
\tRun() error
}

func (s *Server) Start() error {
\treturn nil
}

func New(addr string) *Server {
\treturn &Server{addr: addr}
}
"""

RUST = """\
use std::collections::HashMap;

pub struct Cache {
    items: HashMap<String, String>,
}

pub enum Mode { Fast, Slow }

pub trait Store {
    fn get(&self, key: &str) -> Option<String>;
}

impl Cache {
    pub fn new() -> Self {
        Cache { items: HashMap::new() }
    }
}

fn helper() -> u32 {
    42
}
"""

JAVA = """\
package com.acme;

import java.util.List;

public class Repo {
    private final List<String> items;

    public Repo(List<String> items) {
        this.items = items;
    }

    public int size() {
        return items.size();
    }
}

interface Source {
    String read();
}

enum Level { LOW, HIGH }
"""

# path -> (source, [(local qualname, kind, start line, end line, parent local qualname)])
Expected = list[tuple[str, str, int, int, str | None]]
SYMBOL_CASES: dict[str, tuple[str, Expected]] = {
    "pkg/mod.py": (PYTHON, [
        ("load", "function", 5, 10, None),
        ("load.inner", "function", 8, 9, "load"),
        ("Store", "class", 13, 19, None),
        ("Store.get", "method", 14, 15, "Store"),
        ("Store.size", "method", 17, 19, "Store"),
    ]),
    "src/app.js": (JAVASCRIPT, [
        ("main", "function", 3, 5, None),
        ("Widget", "class", 7, 12, None),
        ("Widget.render", "method", 8, 10, "Widget"),
        ("Widget.onClick", "method", 11, 11, "Widget"),
        ("double", "function", 14, 14, None),
    ]),
    "src/geo.ts": (TYPESCRIPT, [
        ("Point", "interface", 3, 5, None),
        ("Id", "type", 7, 7, None),
        ("Color", "enum", 9, 9, None),
        ("Circle", "class", 11, 15, None),
        ("Circle.area", "method", 12, 14, "Circle"),
        ("make", "function", 17, 17, None),
    ]),
    "src/ui.tsx": (TSX, [
        ("Props", "type", 3, 3, None),
        ("Header", "function", 5, 7, None),
        ("Footer", "function", 9, 9, None),
    ]),
    "server/server.go": (GO, [
        ("Server", "struct", 8, 10, None),
        ("Runner", "interface", 12, 14, None),
        ("Server.Start", "method", 16, 18, "Server"),
        ("New", "function", 20, 22, None),
    ]),
    "src/cache.rs": (RUST, [
        ("Cache", "struct", 3, 5, None),
        ("Mode", "enum", 7, 7, None),
        ("Store", "trait", 9, 11, None),
        ("Cache.new", "method", 14, 16, "Cache"),
        ("helper", "function", 19, 21, None),
    ]),
    "src/com/acme/Repo.java": (JAVA, [
        ("Repo", "class", 5, 15, None),
        ("Repo.Repo", "method", 8, 10, "Repo"),
        ("Repo.size", "method", 12, 14, "Repo"),
        ("Source", "interface", 17, 19, None),
        ("Source.read", "method", 18, 18, "Source"),
        ("Level", "enum", 21, 21, None),
    ]),
}


@pytest.mark.parametrize("path", list(SYMBOL_CASES))
def test_symbols_have_qualnames_kinds_lines_and_parents(path: str) -> None:
    source, expected = SYMBOL_CASES[path]
    parsed = parse_source(path, source)
    assert parsed.language == LANGUAGES[Path(path).suffix]
    assert parsed.error_count == 0
    got = [(s.qualname, s.kind, s.start_line, s.end_line, s.parent) for s in parsed.symbols]
    want = [
        (f"{path}::{local}", kind, start, end, f"{path}::{parent}" if parent else None)
        for local, kind, start, end, parent in expected
    ]
    assert got == want
    assert all(s.path == path and s.name == s.qualname.split("::")[1].split(".")[-1]
               for s in parsed.symbols)


IMPORT_CASES = {
    "pkg/mod.py": (PYTHON, ("os", ".util")),
    "src/app.js": (JAVASCRIPT, ("./parser.js",)),
    "src/geo.ts": (TYPESCRIPT, ("./shape",)),
    "src/ui.tsx": (TSX, ("react",)),
    "server/server.go": (GO, ("fmt", "github.com/acme/app/internal/store")),
    "src/cache.rs": (RUST, ("std::collections::HashMap",)),
    "src/com/acme/Repo.java": (JAVA, ("java.util.List",)),
}


@pytest.mark.parametrize("path", list(IMPORT_CASES))
def test_imports(path: str) -> None:
    source, expected = IMPORT_CASES[path]
    assert parse_source(path, source).imports == expected


def test_import_forms() -> None:
    python = "from . import a, b as c\nfrom ..x.y import z\nimport p.q as r\n"
    assert parse_source("m.py", python).imports == (".a", ".b", "..x.y", "p.q")
    js = "const a = require('./a');\nexport * from \"./b\";\nawait import('./c');\n"
    assert parse_source("m.js", js).imports == ("./a", "./b", "./c")
    rust = "use crate::a::{b, c as d, self};\nmod inner;\n"
    assert parse_source("m.rs", rust).imports == ("crate::a::b", "crate::a::c", "crate::a",
                                                  "self::inner")
    java = "import static com.x.Util.max;\nimport com.y.*;\nclass A {}\n"
    assert parse_source("A.java", java).imports == ("com.x.Util.max", "com.y.*")


# (path, original, whitespace-only edit, comment-only edit, body edit, rename, name, new name)
HASH_CASES = [
    ("a.py",
     "def area(w, h):\n    return w * h\n",
     "def area( w,h ):\n\n        return w*h\n",
     "def area(w, h):  # area\n    # multiply\n    return w * h\n",
     "def area(w, h):\n    return w + h\n",
     "def surface(w, h):\n    return w * h\n",
     "area", "surface"),
    ("a.js",
     "function area(w, h) {\n  return w * h;\n}\n",
     "function area(w,h){ return w*h; }\n",
     "function area(w, h) {\n  /* product */ return w * h; // done\n}\n",
     "function area(w, h) {\n  return w - h;\n}\n",
     "function surface(w, h) {\n  return w * h;\n}\n",
     "area", "surface"),
    ("a.ts",
     "export const area = (w: number, h: number) => w * h;\n",
     "export const area = (w: number,\n    h: number) => w * h;\n",
     "// doc\nexport const area = (w: number, h: number) => /* x */ w * h;\n",
     "export const area = (w: number, h: number) => w * h * 2;\n",
     "export const surface = (w: number, h: number) => w * h;\n",
     "area", "surface"),
    ("a.go",
     "package a\n\nfunc Area(w, h int) int {\n\treturn w * h\n}\n",
     "package a\n\nfunc Area(w, h int) int {\n    return w*h\n}\n",
     "package a\n\n// Area multiplies.\nfunc Area(w, h int) int {\n\treturn w * h // product\n}\n",
     "package a\n\nfunc Area(w, h int) int {\n\treturn w / h\n}\n",
     "package a\n\nfunc Surface(w, h int) int {\n\treturn w * h\n}\n",
     "Area", "Surface"),
    ("a.rs",
     "fn area(w: u32, h: u32) -> u32 {\n    w * h\n}\n",
     "fn area(w: u32, h: u32) -> u32 { w * h }\n",
     "fn area(w: u32, h: u32) -> u32 {\n    /* product */ w * h // x\n}\n",
     "fn area(w: u32, h: u32) -> u32 {\n    w + h\n}\n",
     "fn surface(w: u32, h: u32) -> u32 {\n    w * h\n}\n",
     "area", "surface"),
    ("A.java",
     "class A {\n  int area(int w, int h) {\n    return w * h;\n  }\n}\n",
     "class A {\n  int area(int w,int h) { return w*h; }\n}\n",
     "class A {\n  /** Area. */\n  int area(int w, int h) {\n    return w * h; // x\n  }\n}\n",
     "class A {\n  int area(int w, int h) {\n    return w % h;\n  }\n}\n",
     "class A {\n  int surface(int w, int h) {\n    return w * h;\n  }\n}\n",
     "A.area", "A.surface"),
]


def _hash_of(path: str, source: str, local: str) -> str:
    """The body hash of one named symbol."""
    symbols = {s.qualname: s for s in parse_source(path, source).symbols}
    return symbols[f"{path}::{local}"].body_hash


@pytest.mark.parametrize("case", HASH_CASES, ids=[c[0] for c in HASH_CASES])
def test_body_hash_ignores_layout_and_comments_but_not_code(case: tuple[str, ...]) -> None:
    path, original, spaced, commented, edited, renamed, name, new_name = case
    base = _hash_of(path, original, name)
    assert _hash_of(path, spaced, name) == base
    assert _hash_of(path, commented, name) == base
    assert _hash_of(path, edited, name) != base
    assert _hash_of(path, renamed, new_name) == base
    assert parse_source(path, spaced).content_hash == parse_source(path, original).content_hash
    assert parse_source(path, edited).content_hash != parse_source(path, original).content_hash


# (path, symbol, source, what a formatter makes of it, a real change that looks alike)
FORMATTER_CASES = [
    ("a.py", "f", "def f(a, b):\n    return g(a, 'x')\n",
     'def f(\n    a,\n    b,\n):\n    return (\n        g(a, "x",)\n    )\n',
     "def f(a, b):\n    return g(a, b'x')\n"),
    ("a.py", "f", "def f(a, b):\n    return (a + b) * 2\n",
     "def f(a, b):\n    return ((a + b)) * 2\n",
     "def f(a, b):\n    return a + b * 2\n"),
    ("a.js", "total", "function total(xs) { return xs.reduce((s, x) => s + x, 0); }\n",
     'function total(xs) {\n  return xs.reduce(\n    (s, x) => s + x,\n    0,\n  )\n}\n',
     "function total(xs) { return xs.reduce((s, x) => s + x, 1); }\n"),
    ("a.ts", "greet", "export const greet = (name: string) => 'hi ' + name;\n",
     'export const greet = (name: string) => "hi " + name\n',
     "export const greet = (name: string) => `hi ` + name;\n"),
    ("a.rs", "area", "fn area(w: u32, h: u32) -> u32 { mul(w, h) }\n",
     "fn area(w: u32, h: u32) -> u32 {\n    mul(\n        w,\n        h,\n    )\n}\n",
     "fn area(w: u32, h: u32) -> u32 { mul(w, h); }\n"),
    ("a.go", "f", "package m\n\nfunc f(a int) int { return (a + 1) }\n",
     "package m\n\nfunc f(a int) int {\n\treturn a + 1\n}\n",
     "package m\n\nfunc f(a int) int { return (a + 1) * 2 }\n"),
    ("lib/a.ex", "A.f/1", "defmodule A do\n  def f(x), do: g([x, 1])\nend\n",
     "defmodule A do\n  def f(x),\n    do:\n      g([\n        x,\n        1,\n      ])\nend\n",
     "defmodule A do\n  def f(x), do: g([x, 1, 2])\nend\n"),
]


@pytest.mark.parametrize("case", FORMATTER_CASES, ids=[f"{c[0]}:{c[2][:12]}" for c in FORMATTER_CASES])
def test_what_a_formatter_changes_keeps_the_hash_and_code_changes_do_not(
        case: tuple[str, ...]) -> None:
    path, name, source, formatted, changed = case
    assert _hash_of(path, formatted, name) == _hash_of(path, source, name)
    assert parse_source(path, formatted).content_hash == parse_source(path, source).content_hash
    assert _hash_of(path, changed, name) != _hash_of(path, source, name)


def test_a_class_hash_covers_its_own_lines_not_its_methods() -> None:
    source = "class A:\n    x = 1\n\n    def m(self):\n        return 1\n"
    method_edit = source.replace("return 1", "return 2")
    added = source + "\n    def n(self):\n        return 1\n"
    own_edit = source.replace("x = 1", "x = 2")
    assert _hash_of("a.py", method_edit, "A") == _hash_of("a.py", source, "A")
    assert _hash_of("a.py", added, "A") == _hash_of("a.py", source, "A")
    assert _hash_of("a.py", method_edit, "A.m") != _hash_of("a.py", source, "A.m")
    assert _hash_of("a.py", own_edit, "A") != _hash_of("a.py", source, "A")


def test_python_docstring_counts_in_body_hash() -> None:
    plain = "def f():\n    return 1\n"
    documented = 'def f():\n    """Return one."""\n    return 1\n'
    assert _hash_of("a.py", plain, "f") != _hash_of("a.py", documented, "f")


MORE_FORMS: dict[str, tuple[str, Expected]] = {
    "a.py": ("@dataclass\nclass P:\n    x: int\n\n    class Meta:\n        def m(self): pass\n",
             [("P", "class", 1, 6, None), ("P.Meta", "class", 5, 6, "P"),
              ("P.Meta.m", "method", 6, 6, "P.Meta")]),
    "a.ts": (("namespace N {\n  export function f() {}\n}\n"
              "abstract class B {\n  abstract g(): void;\n  h = () => 1;\n}\n"),
             [("N.f", "function", 2, 2, None), ("B", "class", 4, 7, None),
              ("B.h", "method", 6, 6, "B")]),
    "a.go": (("package a\n\ntype List[T any] struct{}\n\nfunc (l *List[T]) Len() int { return 0 }\n"
              "\nfunc (o Other) Name() string { return \"\" }\n"),
             [("List", "struct", 3, 3, None), ("List.Len", "method", 5, 5, "List"),
              ("Other.Name", "method", 7, 7, None)]),
    "a.rs": (("struct P;\nimpl std::fmt::Display for P {\n    fn fmt(&self) {}\n}\n"
              "impl std::fmt::Debug for P {\n    fn fmt(&self) {}\n}\n"
              "mod tests {\n    fn check() {}\n}\n"),
             [("P", "struct", 1, 1, None), ("P.fmt", "method", 3, 3, "P"),
              ("P.fmt#2", "method", 6, 6, "P"), ("tests.check", "function", 9, 9, None)]),
}


@pytest.mark.parametrize("path", list(MORE_FORMS))
def test_more_definition_forms(path: str) -> None:
    source, expected = MORE_FORMS[path]
    got = [(s.qualname.split("::")[1], s.kind, s.start_line, s.end_line,
            s.parent.split("::")[1] if s.parent else None)
           for s in parse_source(path, source).symbols]
    assert got == expected


def test_parsing_from_threads_matches_serial() -> None:
    sources = [(path, source) for path, (source, _) in SYMBOL_CASES.items()] * 10
    serial = [parse_source(path, source) for path, source in sources]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda item: parse_source(*item), sources))
    assert threaded == serial


def test_repeated_names_get_unique_qualnames() -> None:
    source = "class A {\n  void m(int a) {}\n  void m(String s) {}\n}\n"
    qualnames = [s.qualname for s in parse_source("A.java", source).symbols]
    assert qualnames == ["A.java::A", "A.java::A.m", "A.java::A.m#2"]


BROKEN = {
    "a.py": "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass After:\n    pass\n",
    "a.js": "function ok() { return 1; }\nfunction broken( { \nclass After {}\n",
    "a.ts": "export function ok(): number { return 1; }\nconst x = (;\n",
    "a.go": "package a\n\nfunc Ok() int { return 1 }\n\nfunc Broken( {\n",
    "a.rs": "fn ok() -> u32 { 1 }\nfn broken( {\n",
    "A.java": "class A {\n  void ok() {}\n  void broken( {\n}\n",
}


@pytest.mark.parametrize("path", list(BROKEN))
def test_syntax_errors_give_partial_symbols(path: str) -> None:
    parsed = parse_source(path, BROKEN[path])
    assert parsed.error_count > 0
    assert any(s.name in ("ok", "Ok") for s in parsed.symbols)


def test_unknown_language_and_str_and_invalid_utf8() -> None:
    unknown = parse_source("notes.xyz", "def f(): pass\n")
    assert (unknown.language, unknown.symbols, unknown.imports) == ("", (), ())
    assert unknown.content_hash == unknown.raw_hash
    assert parse_source("a.py", b"def f():\n    return 1\n", language="cobol").language == ""
    mangled = parse_source("a.py", b"def f():\n    return '\xff'\n\ndef caf\xe9():\n    pass\n")
    assert [s.name for s in mangled.symbols] == ["f", "caf"]
    assert parse_source("a.py", "def f(): return 'é'\n").symbols[0].name == "f"


def test_symbol_at_and_symbols_touching() -> None:
    parsed = parse_source("pkg/mod.py", PYTHON)
    by_name = {s.qualname.split("::")[1]: s for s in parsed.symbols}
    assert symbol_at(parsed, 9) == by_name["load.inner"]
    assert symbol_at(parsed, 7) == by_name["load"]
    assert symbol_at(parsed, 2) is None
    assert symbols_touching(parsed, 15, 15) == [by_name["Store.get"]]
    assert symbols_touching(parsed, 14, 18) == [by_name["Store"], by_name["Store.get"],
                                                by_name["Store.size"]]
    assert symbols_touching(parsed, 17, 19) == [by_name["Store.size"]]
    assert symbols_touching(parsed, 1, 3) == []


# --- repository walk --------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    """Run git in root with a fixed identity."""
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root, check=True, capture_output=True,
    )


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    """Create files (text or bytes) under root."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A committed git repository with a few source files and an ignored directory."""
    _write(tmp_path, {
        "app/__init__.py": "",
        "app/main.py": "from . import util\n\ndef main():\n    return util.x()\n",
        "app/util.py": "def x():\n    return 1\n",
        "web/index.ts": "import { a } from './lib';\nexport const run = () => a;\n",
        "web/lib.ts": "export const a = 1;\n",
        "README.md": "# demo\n",
        ".gitignore": "generated/\n*.log\n",
        "generated/big.py": "def ignored(): pass\n",
        "debug.log": "noise\n",
    })
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-q", "-m", "init")
    return tmp_path


def test_index_git_repo_respects_gitignore(repo: Path) -> None:
    _write(repo, {".venv/lib/site.py": "x = 1\n", "pkg/node_modules/dep.js": "x\n"})
    calls: list[tuple[int, int]] = []
    result = index_repository(repo, progress=lambda done, total: calls.append((done, total)))
    assert set(result.files) == {"app/__init__.py", "app/main.py", "app/util.py", "web/index.ts",
                                 "web/lib.ts", "README.md", ".gitignore"}
    assert sorted(result.changed) == sorted(result.files)
    assert result.files["README.md"].language == ""
    assert result.files["app/main.py"].symbols[0].qualname == "app/main.py::main"
    assert calls[-1] == (len(calls), len(calls))
    assert result.removed == [] and result.warnings == [] and result.seconds > 0


def test_incremental_reindex_parses_only_changed_files(repo: Path) -> None:
    first = index_repository(repo)
    again = index_repository(repo, first.files)
    assert again.changed == [] and again.files == first.files
    (repo / "app/util.py").write_text("def x():\n    return 2\n")
    (repo / "web/lib.ts").unlink()
    (repo / "app/new.py").write_text("def y():\n    pass\n")
    second = index_repository(repo, first.files)
    assert sorted(second.changed) == ["app/new.py", "app/util.py"]
    assert second.removed == ["web/lib.ts"]
    assert second.files["app/main.py"] is first.files["app/main.py"]
    assert second.files["app/util.py"].raw_hash != first.files["app/util.py"].raw_hash


def test_hostile_files_are_skipped_with_counted_warnings(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("def secret(): pass\n")
    root = tmp_path / "root"
    _write(root, {
        "ok.py": "def ok():\n    return 1\n",
        "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100),
        "latin.py": b"def caf\xe9():\n    return 1\n",
        "notes.xyz": "whatever\n",
        "broken.py": "def broken(:\n    pass\n",
        "static/app.min.js": "x",
        "dist/out.js": "x",
        "node_modules/dep/index.js": "module.exports = 1;\n",
        ".gitignore": "secret.txt\n",
        "secret.txt": "hidden\n",
    })
    line = "var a=1;" * 1000
    minified = "\n".join([line] * 1300)
    (root / "bundle.js").write_text(minified)
    assert len(minified) > 10_000_000
    os.symlink(root, root / "loop")
    os.symlink(outside, root / "escape.py")
    os.symlink(root / "missing", root / "dangling.py")
    os.symlink(root / "ok.py", root / "alias.py")
    os.symlink(root / "ping.py", root / "pong.py")
    os.symlink(root / "pong.py", root / "ping.py")

    result = index_repository(root)
    assert set(result.files) == {"ok.py", "latin.py", "notes.xyz", "broken.py", ".gitignore",
                                 "alias.py"}
    assert result.files["latin.py"].symbols[0].name == "caf"
    assert result.files["notes.xyz"].language == ""
    assert result.files["broken.py"].error_count > 0
    assert result.skipped == {"binary": 1, "minified": 1, "too large": 1, "symlink loop": 3,
                              "symlink escapes root": 1, "broken symlink": 1}
    assert "skipped binary: image.png" in result.warnings
    assert "too large: bundle.js (10.4 MB)" in result.warnings
    assert "syntax errors: broken.py (1)" in result.warnings
    assert any(w.startswith("symlink loop: loop") for w in result.warnings)

    roomy = index_repository(root, max_bytes=20_000_000)
    assert roomy.skipped["minified"] == 2
    assert "minified: bundle.js" in roomy.warnings


def test_symlink_loop_in_git_repo(repo: Path) -> None:
    os.symlink(repo / "app", repo / "app" / "again")
    result = index_repository(repo)
    assert result.skipped == {"symlink loop": 1}
    assert "app/util.py" in result.files


def test_many_skips_cap_warnings(tmp_path: Path) -> None:
    _write(tmp_path, {f"img{i}.bin": b"\x00" * 10 for i in range(25)})
    result = index_repository(tmp_path)
    assert result.skipped == {"binary": 25}
    assert len(result.warnings) == 21
    assert result.warnings[-1] == "binary: 5 more not listed"


# --- import resolution ------------------------------------------------------------------------


def _index(files: dict[str, str]) -> dict[str, CodeFile]:
    """Parse a mapping of path -> source into an index."""
    return {path: parse_source(path, source) for path, source in files.items()}


def test_resolve_python_package() -> None:
    files = _index({
        "src/shop/__init__.py": "from .cart import Cart\n",
        "src/shop/cart.py": "from . import pricing\nfrom .models import Item\nimport os\n",
        "src/shop/pricing.py": "from shop.models import Item\n",
        "src/shop/models/__init__.py": "",
        "src/shop/models/item.py": "from .. import pricing\nfrom ...outside import nope\n",
        "tests/test_cart.py": "import shop.cart\nfrom shop.models.item import thing\n",
    })
    assert resolve_imports(files) == [
        ("src/shop/__init__.py", "src/shop/cart.py"),
        ("src/shop/cart.py", "src/shop/models/__init__.py"),
        ("src/shop/cart.py", "src/shop/pricing.py"),
        ("src/shop/models/item.py", "src/shop/pricing.py"),
        ("src/shop/pricing.py", "src/shop/models/__init__.py"),
        ("tests/test_cart.py", "src/shop/cart.py"),
        ("tests/test_cart.py", "src/shop/models/item.py"),
    ]


def test_resolve_typescript_project() -> None:
    files = _index({
        "src/index.ts": "import { App } from './app';\nimport * as u from './util/index.js';\n"
                        "import React from 'react';\nexport * from './types';\n",
        "src/app.tsx": "import { fmt } from './util';\nconst x = require('../config.json');\n",
        "src/util/index.ts": "export const fmt = (s: string) => s;\n",
        "src/types.d.ts": "export type T = string;\n",
        "config.json": "{}\n",
    })
    assert resolve_imports(files) == [
        ("src/app.tsx", "config.json"),
        ("src/app.tsx", "src/util/index.ts"),
        ("src/index.ts", "src/app.tsx"),
        ("src/index.ts", "src/types.d.ts"),
        ("src/index.ts", "src/util/index.ts"),
    ]


def test_resolve_go_rust_java() -> None:
    files = _index({
        "cmd/main.go": 'package main\n\nimport (\n\t"fmt"\n\t"example.com/app/store"\n)\n',
        "store/store.go": "package store\n",
        "store/store_test.go": "package store\n",
        "src/main.rs": "mod net;\nuse crate::net::client::Client;\n",
        "src/net/mod.rs": "pub mod client;\n",
        "src/net/client.rs": "use super::Config;\n",
        "java/com/acme/App.java": "package com.acme;\nimport com.acme.util.Strings;\n"
                                  "import com.acme.model.*;\nclass App {}\n",
        "java/com/acme/util/Strings.java": "package com.acme.util;\nclass Strings {}\n",
        "java/com/acme/model/User.java": "package com.acme.model;\nclass User {}\n",
    })
    assert resolve_imports(files) == [
        ("cmd/main.go", "store/store.go"),
        ("java/com/acme/App.java", "java/com/acme/model/User.java"),
        ("java/com/acme/App.java", "java/com/acme/util/Strings.java"),
        ("src/main.rs", "src/net/client.rs"),
        ("src/main.rs", "src/net/mod.rs"),
        ("src/net/client.rs", "src/net/mod.rs"),
        ("src/net/mod.rs", "src/net/client.rs"),
    ]
