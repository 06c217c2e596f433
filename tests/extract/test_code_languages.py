"""The code index in the languages beyond Python/JS/TS/Go/Rust/Java: one small real file each.

For every language: the symbols a reader would name, with qualnames, kinds, lines and parents;
a comment-only edit or a re-indent changes no hash; a body edit changes that symbol's hash and
its enclosing symbols' (whose spans contain it), no other. Plus Elixir's clause/arity naming,
a grammar that fails to load, and `graphmem index` on a real git repository.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from graphmem.extract import code
from graphmem.extract.code import LANGUAGES, CodeSymbol, parse_source

ELIXIR = """\
defmodule MyApp.Accounts do
  @moduledoc "Accounts context."
  alias MyApp.Repo

  def get_user(id) do
    Repo.get(User, id)
  end

  def get_user(id, opts), do: Repo.get(User, id, opts)

  defp normalize(nil), do: nil
  defp normalize(email) when is_binary(email) do
    String.downcase(email)
  end

  defmacro admin?(user) do
    quote do: unquote(user).role == :admin
  end

  defmodule User do
    defstruct [:id, :email]

    def new(email), do: %__MODULE__{email: email}
  end
end

defprotocol MyApp.Greeter do
  def greet(thing)
end

defimpl MyApp.Greeter, for: MyApp.Accounts.User do
  def greet(user), do: "hi " <> user.email
end
"""

RUBY = """\
require "json"

module Billing
  class Invoice < Base
    attr_reader :total

    def initialize(total)
      @total = total
    end

    def self.parse(text)
      new(JSON.parse(text)["total"])
    end

    def paid?
      @paid
    end
  end

  def self.helper; 1; end
end

def main(argv)
  Billing::Invoice.parse(argv.first)
end
"""

C = """\
#include <stdio.h>
#include "list.h"

struct node {
    int value;
    struct node *next;
};

typedef enum { RED, GREEN } color_t;

static int count(const struct node *head) {
    int n = 0;
    for (; head; head = head->next) n++;
    return n;
}

char *describe(struct node *n)
{
    return n ? "node" : "null";
}
"""

CPP = """\
#include <vector>

namespace geo {

class Shape {
 public:
  virtual ~Shape() = default;
  virtual double area() const = 0;
};

struct Circle : Shape {
  double r;
  double area() const override { return 3.14 * r * r; }
};

double total(const std::vector<Shape*>& shapes) {
  double sum = 0;
  for (auto* s : shapes) sum += s->area();
  return sum;
}

}  // namespace geo

int geo::Registry::size() const {
  return 0;
}
"""

CSHARP = """\
using System;
using System.Collections.Generic;

namespace Acme.Billing
{
    public interface IStore
    {
        int Count();
    }

    public class Invoice : IStore
    {
        public Invoice(int total) { Total = total; }

        public int Total { get; }

        public int Count()
        {
            return Total;
        }
    }

    public enum Status { Open, Paid }

    public record Line(string Sku, int Qty);
}
"""

PHP = """\
<?php

namespace App\\Http;

use App\\Models\\User;

interface Handler
{
    public function handle(array $request): array;
}

class UserController implements Handler
{
    public function __construct(private User $users) {}

    public function handle(array $request): array
    {
        return $this->users->find($request['id']);
    }
}

function helper(int $x): int
{
    return $x * 2;
}
"""

KOTLIN = """\
package com.acme.billing

import kotlin.math.max

interface Store {
    fun count(): Int
}

data class Invoice(val total: Int) : Store {
    override fun count(): Int {
        return total
    }

    companion object {
        fun empty() = Invoice(0)
    }
}

object Registry {
    fun size(): Int = 0
}

fun main(args: Array<String>) {
    println(max(1, 2))
}
"""

SWIFT = """\
import Foundation

protocol Shape {
    func area() -> Double
}

struct Circle: Shape {
    let r: Double

    func area() -> Double {
        return 3.14 * r * r
    }
}

class Canvas {
    var shapes: [Shape] = []

    init() {}

    func total() -> Double {
        shapes.reduce(0) { $0 + $1.area() }
    }
}

extension Circle {
    func diameter() -> Double { r * 2 }
}

enum Color { case red, green }

func main() {
    print(Canvas().total())
}
"""

BASH = """\
#!/usr/bin/env bash
set -euo pipefail

source ./lib.sh

log() {
  echo "[$(date)] $*" >&2
}

function build {
  log "building"
  make -j2
}

main() {
  build
}

main "$@"
"""

# path -> (source, [(local qualname, kind, start line, end line, parent local qualname)])
SYMBOL_CASES: dict[str, tuple[str, list[tuple[str, str, int, int, str | None]]]] = {
    "lib/my_app/accounts.ex": (ELIXIR, [
        ("MyApp.Accounts", "module", 1, 25, None),
        ("MyApp.Accounts.get_user/1", "function", 5, 7, "MyApp.Accounts"),
        ("MyApp.Accounts.get_user/2", "function", 9, 9, "MyApp.Accounts"),
        ("MyApp.Accounts.normalize/1", "function", 11, 14, "MyApp.Accounts"),
        ("MyApp.Accounts.admin?/1", "macro", 16, 18, "MyApp.Accounts"),
        ("MyApp.Accounts.User", "module", 20, 24, "MyApp.Accounts"),
        ("MyApp.Accounts.User.new/1", "function", 23, 23, "MyApp.Accounts.User"),
        ("MyApp.Greeter", "protocol", 27, 29, None),
        ("MyApp.Greeter.greet/1", "function", 28, 28, "MyApp.Greeter"),
        ("MyApp.Greeter.MyApp.Accounts.User", "impl", 31, 33, None),
        ("MyApp.Greeter.MyApp.Accounts.User.greet/1", "function", 32, 32,
         "MyApp.Greeter.MyApp.Accounts.User"),
    ]),
    "lib/billing.rb": (RUBY, [
        ("Billing", "module", 3, 21, None),
        ("Billing.Invoice", "class", 4, 18, "Billing"),
        ("Billing.Invoice.initialize", "method", 7, 9, "Billing.Invoice"),
        ("Billing.Invoice.parse", "method", 11, 13, "Billing.Invoice"),
        ("Billing.Invoice.paid?", "method", 15, 17, "Billing.Invoice"),
        ("Billing.helper", "method", 20, 20, "Billing"),
        ("main", "function", 23, 25, None),
    ]),
    "src/list.c": (C, [
        ("node", "struct", 4, 7, None),
        ("color_t", "enum", 9, 9, None),
        ("count", "function", 11, 15, None),
        ("describe", "function", 17, 20, None),
    ]),
    "src/geo.cpp": (CPP, [
        ("geo.Shape", "class", 5, 9, None),
        ("geo.Shape.~Shape", "method", 7, 7, "geo.Shape"),
        ("geo.Circle", "struct", 11, 14, None),
        ("geo.Circle.area", "method", 13, 13, "geo.Circle"),
        ("geo.total", "function", 16, 20, None),
        ("geo.Registry.size", "method", 24, 26, None),
    ]),
    "src/Invoice.cs": (CSHARP, [
        ("IStore", "interface", 6, 9, None),
        ("IStore.Count", "method", 8, 8, "IStore"),
        ("Invoice", "class", 11, 21, None),
        ("Invoice.Invoice", "method", 13, 13, "Invoice"),
        ("Invoice.Count", "method", 17, 20, "Invoice"),
        ("Status", "enum", 23, 23, None),
        ("Line", "class", 25, 25, None),
    ]),
    "src/Http/UserController.php": (PHP, [
        ("Handler", "interface", 7, 10, None),
        ("Handler.handle", "method", 9, 9, "Handler"),
        ("UserController", "class", 12, 20, None),
        ("UserController.__construct", "method", 14, 14, "UserController"),
        ("UserController.handle", "method", 16, 19, "UserController"),
        ("helper", "function", 22, 25, None),
    ]),
    "src/main/kotlin/Invoice.kt": (KOTLIN, [
        ("Store", "interface", 5, 7, None),
        ("Store.count", "method", 6, 6, "Store"),
        ("Invoice", "class", 9, 17, None),
        ("Invoice.count", "method", 10, 12, "Invoice"),
        ("Invoice.empty", "method", 15, 15, "Invoice"),
        ("Registry", "object", 19, 21, None),
        ("Registry.size", "method", 20, 20, "Registry"),
        ("main", "function", 23, 25, None),
    ]),
    "Sources/Canvas.swift": (SWIFT, [
        ("Shape", "protocol", 3, 5, None),
        ("Shape.area", "method", 4, 4, "Shape"),
        ("Circle", "struct", 7, 13, None),
        ("Circle.area", "method", 10, 12, "Circle"),
        ("Canvas", "class", 15, 23, None),
        ("Canvas.init", "method", 18, 18, "Canvas"),
        ("Canvas.total", "method", 20, 22, "Canvas"),
        ("Circle.diameter", "method", 26, 26, "Circle"),
        ("Color", "enum", 29, 29, None),
        ("main", "function", 31, 33, None),
    ]),
    "scripts/build.sh": (BASH, [
        ("log", "function", 6, 8, None),
        ("build", "function", 10, 13, None),
        ("main", "function", 15, 17, None),
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
    # The name is what a reader says: no module path, no arity.
    assert all(s.name == re.sub(r"/\d+$", "", s.qualname).rpartition(".")[2].rpartition("::")[2]
               for s in parsed.symbols)


IMPORT_CASES = {
    "lib/my_app/accounts.ex": ("MyApp.Repo",),
    "lib/billing.rb": ("json",),
    "src/list.c": ("stdio.h", "list.h"),
    "src/geo.cpp": ("vector",),
    "src/Invoice.cs": ("System", "System.Collections.Generic"),
    "src/Http/UserController.php": ("App\\Models\\User",),
    "src/main/kotlin/Invoice.kt": ("kotlin.math.max",),
    "Sources/Canvas.swift": ("Foundation",),
    "scripts/build.sh": ("./lib.sh",),
}


@pytest.mark.parametrize("path", list(IMPORT_CASES))
def test_imports(path: str) -> None:
    assert parse_source(path, SYMBOL_CASES[path][0]).imports == IMPORT_CASES[path]


# path -> (the symbol a body edit is in, body edit, comment-only edit), each edit as
# (old, new) text replacements that apply once.
EDIT_CASES: dict[str, tuple[str, list[tuple[str, str]], list[tuple[str, str]]]] = {
    "lib/my_app/accounts.ex": (
        "MyApp.Accounts.normalize/1",
        [("String.downcase(email)", "String.upcase(email)")],
        [("    String.downcase(email)\n", ("    # emails compare lower-case\n"
                                          "    String.downcase(email) # see RFC 5321\n")),
         ("  alias MyApp.Repo\n", "  alias MyApp.Repo\n  # queries go through Repo\n")],
    ),
    "lib/billing.rb": (
        "Billing.Invoice.initialize",
        [("@total = total\n", "@total = total.to_i\n")],
        [("    def initialize(total)\n", ("    # Builds an invoice.\n"
                                          "    def initialize(total) # in cents\n")),
         ("  def self.helper", "=begin\nold\n=end\n  def self.helper")],
    ),
    "src/list.c": (
        "count",
        [("int n = 0;", "int n = 1;")],
        [("    int n = 0;\n", "    /* start at zero */ int n = 0; // the count\n"),
         ("char *describe", "/* Names a node. */\nchar *describe")],
    ),
    "src/geo.cpp": (
        "geo.Circle.area",
        [("3.14 * r * r", "3.14159 * r * r")],
        [("{ return 3.14", "{ /* pi r^2 */ return 3.14"),
         ("class Shape {\n", "// A shape.\nclass Shape {  // abstract\n")],
    ),
    "src/Invoice.cs": (
        "Invoice.Count",
        [("return Total;", "return Total + 1;")],
        [("        public int Count()\n", ("        /// <summary>Counts.</summary>\n"
                                           "        public int Count() // one\n")),
         ("            return Total;\n", "            // the total\n            return Total;\n")],
    ),
    "src/Http/UserController.php": (
        "UserController.handle",
        [("find($request['id'])", "find($request['uid'])")],
        [("        return $this", "        # look the user up\n        return /* ! */ $this"),
         ("function helper", "/** Doubles. */\nfunction helper")],
    ),
    "src/main/kotlin/Invoice.kt": (
        "Invoice.count",
        [("return total\n", "return total * 2\n")],
        [("        return total\n", "        // all of it\n        return total /* cents */\n"),
         ("object Registry", "/** The registry. */\nobject Registry")],
    ),
    "Sources/Canvas.swift": (
        "Circle.diameter",
        [("{ r * 2 }", "{ r * 2.0 }")],
        [("{ r * 2 }", "{ /* twice */ r * 2 } // diameter"),
         ("    init() {}\n", "    /// Empty.\n    init() {}\n")],
    ),
    "scripts/build.sh": (
        "build",
        [("make -j2", "make -j4")],
        [("  make -j2\n", "  # two cores\n  make -j2  # parallel\n"),
         ("main() {\n", "# entry point\nmain() {\n")],
    ),
}


def _edit(source: str, replacements: list[tuple[str, str]]) -> str:
    """Source with each (old, new) replacement applied to its one occurrence."""
    for old, new in replacements:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def _hashes(path: str, source: str) -> dict[str, str]:
    """Local qualname -> body hash of every symbol of a file."""
    parsed = parse_source(path, source)
    assert parsed.error_count == 0
    return {s.qualname.split("::", 1)[1]: s.body_hash for s in parsed.symbols}


CLASS_LIKE = {"class", "interface", "struct", "enum", "trait", "impl", "module", "object",
              "protocol"}


def _enclosing(symbols: tuple[CodeSymbol, ...], local: str) -> set[str]:
    """The symbol's local qualname and those of the functions whose spans contain it (a class or
    module is judged by its own lines, not its methods')."""
    target = next(s for s in symbols if s.qualname.endswith("::" + local))
    return {s.qualname.split("::", 1)[1] for s in symbols
            if s is target or (target.qualname.startswith(s.qualname + ".")
                               and s.kind not in CLASS_LIKE
                               and s.start_line <= target.start_line <= target.end_line <= s.end_line)}


@pytest.mark.parametrize("path", list(EDIT_CASES))
def test_body_edit_changes_that_symbol_and_its_enclosing_functions_only(path: str) -> None:
    source = SYMBOL_CASES[path][0]
    local, body_edit, _ = EDIT_CASES[path]
    before, after = _hashes(path, source), _hashes(path, _edit(source, body_edit))
    assert set(after) == set(before)
    changed = {name for name in before if before[name] != after[name]}
    assert changed == _enclosing(parse_source(path, source).symbols, local)
    assert local in changed


@pytest.mark.parametrize("path", list(EDIT_CASES))
def test_comment_edits_and_reindenting_change_no_hash(path: str) -> None:
    source = SYMBOL_CASES[path][0]
    commented = _edit(source, EDIT_CASES[path][2])
    assert _hashes(path, commented) == _hashes(path, source)
    assert parse_source(path, commented).content_hash == parse_source(path, source).content_hash
    lines = source.splitlines(keepends=True)
    reindented = lines[0] + "".join("  " + line if line.strip() else line for line in lines[1:])
    assert _hashes(path, reindented) == _hashes(path, source)


ELIXIR_CLAUSES = """\
defmodule Shop.Cart do
  def total(cart, discount \\\\ 0)
  def total(%{items: []}, _discount), do: 0

  def total(%{items: items}, discount) when discount > 0 do
    sum(items) - discount
  end

  def empty?, do: true

  def clear() do
    %{items: []}
  end

  defdelegate sum(items), to: Enum

  defguard positive(x) when x > 0

  def unquote(:dynamic)(x), do: x
end
"""


def test_elixir_clauses_arity_and_heads() -> None:
    parsed = parse_source("lib/shop/cart.ex", ELIXIR_CLAUSES)
    got = [(s.qualname.split("::")[1], s.kind, s.start_line, s.end_line) for s in parsed.symbols]
    assert got == [
        ("Shop.Cart", "module", 1, 20),
        ("Shop.Cart.total/2", "function", 2, 7),
        ("Shop.Cart.empty?/0", "function", 9, 9),
        ("Shop.Cart.clear/0", "function", 11, 13),
        ("Shop.Cart.sum/1", "function", 15, 15),
        ("Shop.Cart.positive/1", "guard", 17, 17),
    ]


def test_elixir_new_clause_changes_only_that_function() -> None:
    path = "lib/my_app/accounts.ex"
    before = _hashes(path, ELIXIR)
    after = _hashes(path, _edit(ELIXIR, [("  defp normalize(nil), do: nil\n",
                                           ("  defp normalize(nil), do: nil\n"
                                           "  defp normalize(\"\"), do: nil\n"))]))
    assert {name for name in before if before[name] != after[name]} == {
        "MyApp.Accounts.normalize/1"}


@pytest.fixture
def fresh_grammars() -> Iterator[None]:
    """Grammar caches emptied before and after, so a broken grammar is loaded anew."""
    def clear() -> None:
        for cached in ("_language", "_query", "_usable"):
            getattr(getattr(code, cached, None), "cache_clear", lambda: None)()
        code._THREAD.__dict__.clear()

    clear()
    yield
    clear()


@pytest.mark.usefixtures("fresh_grammars")
@pytest.mark.parametrize("path", ["lib/billing.rb", "a.py"])
def test_a_grammar_that_fails_to_load_indexes_hashes_only(path: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    language = LANGUAGES[Path(path).suffix]
    monkeypatch.setitem(code._GRAMMARS, language, ("tree_sitter_not_installed", "language"))
    parsed = parse_source(path, RUBY if path.endswith(".rb") else "def f():\n    return 1\n")
    assert (parsed.language, parsed.symbols, parsed.imports) == ("", (), ())
    assert parsed.content_hash == parsed.raw_hash


def test_graphmem_index_finds_elixir_and_ruby_symbols(
        capsys: pytest.CaptureFixture[str], home: Path, repo: Path) -> None:
    from graphmem.cli import main
    from graphmem.config import Config
    from graphmem.extract.link import resolve_code
    from graphmem.service import Memory
    from tests.conftest import git

    (repo / "lib" / "my_app").mkdir(parents=True)
    (repo / "lib" / "my_app" / "accounts.ex").write_text(ELIXIR)
    (repo / "lib" / "billing.rb").write_text(RUBY)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "app code")
    assert main(["index", "--json", "--cwd", str(repo)]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = {f"{path}::{case[0]}" for path in ("lib/my_app/accounts.ex", "lib/billing.rb")
                for case in SYMBOL_CASES[path][1]}
    assert summary["symbols"] == len(expected)
    with Memory(Config(home=home, cwd=repo)) as memory:
        rows = memory.store.find_entities(path_suffixes=["accounts.ex", "billing.rb"],
                                          kinds=["symbol"])
        assert {row["qualname"] for row in rows} == expected
        found = memory.store.find_entities(names=["get_user"], kinds=["symbol"])
        assert {row["qualname"] for row in found} == {
            "lib/my_app/accounts.ex::MyApp.Accounts.get_user/1",
            "lib/my_app/accounts.ex::MyApp.Accounts.get_user/2"}
        # A mention without the arity ("Accounts.normalize", as in prose) names the function.
        resolved = resolve_code("symbol", "Accounts.normalize", "Accounts.normalize", memory.store)
        assert [r.entity.qualname for r in resolved] == [
            "lib/my_app/accounts.ex::MyApp.Accounts.normalize/1"]
        assert resolved[0].anchor
