"""Code index: parse source files with tree-sitter into symbols, imports and content hashes.

This is the only module that imports tree_sitter or a tree_sitter_* grammar.

Decisions worth knowing:

- Every readable text file is recorded (language "" when we have no grammar, e.g. Makefile,
  README.md, pyproject.toml) so that memories anchored to any file can go stale; binaries,
  files over ``max_bytes``, minified/generated files and unsafe symlinks are skipped and counted.
- Hashes are of the syntax tree, not the text: its tokens and the nesting of its named nodes,
  without comments, whitespace, parentheses (the tree keeps precedence), semicolons, trailing
  commas, string quotes (a string's kind stays in its node type: ``'a'`` is ``"a"`` in Python
  and JavaScript, never in PHP or shell) or Python's string-prefix case. So re-indenting,
  re-wrapping, a formatter's parentheses and quotes, and comment edits keep every hash;
  docstrings are code and count. A symbol's own name is left out of its body hash, and a
  class-like symbol (class, module, struct, trait…) hashes only its own lines: its methods and
  nested types have hashes of their own.
- Qualnames are unique within a file: a repeated name in the same scope (overloads, property
  setters, ``impl Display``/``impl Debug`` both defining ``fmt``) gets ``#2``, ``#3``… in source
  order. Go methods and Rust impl functions are named ``Type.method``; their ``parent`` is the
  type's qualname only when that type is defined in the same file, otherwise None. Inline Rust
  ``mod m { … }`` and TypeScript ``namespace N { … }`` prefix qualnames but are not symbols.
- The same holds for C++ ``namespace`` blocks and Swift ``extension T`` (members are ``T.m``);
  C# namespaces, like Java and Kotlin packages, do not prefix. ``void A::B::f()`` is ``A.B.f``,
  Ruby ``class A::B`` is ``A.B``; C/C++ declarations without a body are not symbols.
- Elixir is walked, not queried (``defmodule``/``def`` are calls): modules by their full name,
  functions as ``Module.name/arity`` with every clause of that name/arity one symbol; code inside
  function bodies (``quote`` blocks) defines nothing.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import importlib
import os
import posixpath
import re
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path

from tree_sitter import Language, Node, Parser, Query, QueryCursor, QueryError

from graphmem import git

__all__ = [
    "HASHES",
    "LANGUAGES",
    "CodeFile",
    "CodeSymbol",
    "IndexResult",
    "index_repository",
    "parse_source",
    "resolve_imports",
    "symbol_at",
    "symbols_touching",
]

# The hashing scheme: hashes made by another are not comparable (stores move theirs over).
HASHES = "tokens-1"

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".ex": "elixir",
    ".exs": "elixir",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".cs": "c_sharp",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".sh": "bash",
    ".bash": "bash",
}

SKIP_DIRS = frozenset(
    {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", "target",
     ".mypy_cache", ".tox"}
)
MAX_WARNINGS_PER_REASON = 20

# Grammar wheels, imported on first use: a language whose wheel is missing or does not load
# with this tree_sitter is indexed like an unknown one (hashes only), never an error.
_GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "elixir": ("tree_sitter_elixir", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "c_sharp": ("tree_sitter_c_sharp", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "bash": ("tree_sitter_bash", "language"),
}

# A C/C++ function's name is inside its declarator (`*name(…)`, `Class::name(…)`): "declarator"
# captures are resolved by _c_function_name. Structs, unions and enums count only with a body;
# `typedef struct {…} name_t;` is named by its typedef.
_C_DEFS = """
(function_definition declarator: (_) @name) @declarator
(struct_specifier name: (_) @name body: (_)) @struct
(union_specifier name: (_) @name body: (_)) @struct
(enum_specifier name: (_) @name body: (_)) @enum
(type_definition type: [(struct_specifier !name body: (_)) (union_specifier !name body: (_))]
  declarator: (type_identifier) @name) @struct
(type_definition type: (enum_specifier !name body: (_)) declarator: (type_identifier) @name) @enum
"""

_JS_VALUE = "[(arrow_function) (function_expression) (generator_function)]"
_JS_DECLARATOR = f"(variable_declarator name: (identifier) @name value: {_JS_VALUE}) @function"
_JS_COMMON = f"""
(function_declaration name: (_) @name) @function
(generator_function_declaration name: (_) @name) @function
(class_declaration name: (_) @name) @class
(class_body (method_definition name: (_) @name) @method)
(program (lexical_declaration {_JS_DECLARATOR}))
(program (variable_declaration {_JS_DECLARATOR}))
(export_statement (lexical_declaration {_JS_DECLARATOR}))
(export_statement (variable_declaration {_JS_DECLARATOR}))
"""
_TS_DEFS = _JS_COMMON + """
(abstract_class_declaration name: (_) @name) @class
(class_body (public_field_definition name: (_) @name
  value: [(arrow_function) (function_expression)]) @method)
(interface_declaration name: (_) @name) @interface
(type_alias_declaration name: (_) @name) @type
(enum_declaration name: (_) @name) @enum
(internal_module name: (_) @name) @namespace
"""
_DEF_QUERIES = {
    "python": """
(function_definition name: (_) @name) @function
(class_definition name: (_) @name) @class
""",
    "javascript": _JS_COMMON + """
(class_body (field_definition property: (_) @name
  value: [(arrow_function) (function_expression)]) @method)
""",
    "typescript": _TS_DEFS,
    "tsx": _TS_DEFS,
    "go": """
(function_declaration name: (_) @name) @function
(method_declaration receiver: (parameter_list (parameter_declaration type: (_) @receiver))
  name: (_) @name) @method
(type_spec name: (_) @name) @typespec
(type_alias name: (_) @name) @type
""",
    "rust": """
(function_item name: (_) @name) @function
(struct_item name: (_) @name) @struct
(union_item name: (_) @name) @struct
(enum_item name: (_) @name) @enum
(trait_item name: (_) @name) @trait
(type_item name: (_) @name) @type
(impl_item type: (_) @name) @impl
(mod_item name: (_) @name body: (_)) @namespace
""",
    "java": """
(class_declaration name: (_) @name) @class
(record_declaration name: (_) @name) @class
(interface_declaration name: (_) @name) @interface
(annotation_type_declaration name: (_) @name) @interface
(enum_declaration name: (_) @name) @enum
(method_declaration name: (_) @name) @method
(constructor_declaration name: (_) @name) @method
""",
    # Elixir definitions are calls (`def`, `defmodule`…): _ElixirSymbols walks the tree instead.
    "elixir": "",
    "ruby": """
(module name: (_) @name) @module_
(class name: (_) @name) @class
(method name: (_) @name) @function
(singleton_method name: (_) @name) @method
""",
    "c": _C_DEFS,
    "cpp": _C_DEFS + """
(class_specifier name: (_) @name body: (_)) @class
(namespace_definition name: (_) @name body: (_)) @namespace
""",
    "c_sharp": """
(class_declaration name: (_) @name) @class
(struct_declaration name: (_) @name) @struct
(record_declaration name: (_) @name) @class
(interface_declaration name: (_) @name) @interface
(enum_declaration name: (_) @name) @enum
(method_declaration name: (_) @name) @method
(constructor_declaration name: (_) @name) @method
(local_function_statement name: (_) @name) @function
""",
    "php": """
(class_declaration name: (_) @name) @class
(interface_declaration name: (_) @name) @interface
(trait_declaration name: (_) @name) @trait
(enum_declaration name: (_) @name) @enum
(function_definition name: (_) @name) @function
(method_declaration name: (_) @name) @method
""",
    "kotlin": """
(class_declaration name: (_) @name) @typedecl
(object_declaration name: (_) @name) @object
(function_declaration name: (_) @name) @function
""",
    "swift": """
(class_declaration name: (_) @name) @typedecl
(protocol_declaration name: (_) @name) @protocol
(function_declaration name: (simple_identifier) @name) @function
(protocol_function_declaration name: (simple_identifier) @name) @method
(init_declaration "init" @name) @method
""",
    "bash": "(function_definition name: (_) @name) @function",
}

_JS_IMPORTS = """
(import_statement source: (string (string_fragment) @module))
(export_statement source: (string (string_fragment) @module))
(call_expression function: (identifier) @_fn
  arguments: (arguments . (string (string_fragment) @module)) (#eq? @_fn "require"))
(call_expression function: (import) arguments: (arguments . (string (string_fragment) @module)))
"""
_TS_IMPORTS = _JS_IMPORTS + "(import_require_clause source: (string (string_fragment) @module))"
_IMPORT_QUERIES = {
    "python": """
(import_statement name: (dotted_name) @module)
(import_statement name: (aliased_import name: (dotted_name) @module))
(import_from_statement) @from
""",
    "javascript": _JS_IMPORTS,
    "typescript": _TS_IMPORTS,
    "tsx": _TS_IMPORTS,
    "go": "(import_spec path: (_) @module)",
    "rust": """
(use_declaration argument: (_) @module)
(mod_item name: (_) @mod !body)
""",
    "java": "(import_declaration) @import",
    "elixir": """
(call target: (identifier) @_kw (arguments . (alias) @module)
  (#any-of? @_kw "alias" "import" "require" "use"))
""",
    "ruby": """
(call method: (identifier) @_fn arguments: (argument_list . (string (string_content) @module))
  (#any-of? @_fn "require" "require_relative"))
""",
    "c": "(preproc_include path: (_) @module)",
    "cpp": "(preproc_include path: (_) @module)",
    "c_sharp": "(using_directive [(qualified_name) (identifier)] @module)",
    "php": "(namespace_use_clause [(qualified_name) (name)] @module)",
    "kotlin": "(import (qualified_identifier) @module)",
    "swift": "(import_declaration (identifier) @module)",
    "bash": """
(command name: (command_name) @_cmd . argument: [(word) (string) (raw_string)] @module
  (#any-of? @_cmd "source" "."))
""",
}

_CLASS_LIKE = frozenset(
    {"class", "interface", "struct", "enum", "trait", "impl", "module", "object", "protocol"}
)
_SCOPES_NOT_SYMBOLS = frozenset({"impl", "namespace"})
_DROPPED_TOKENS = frozenset({b"(", b")", b";", b'"', b"'", b'"""', b"'''", b"`"})
_CLOSERS = frozenset({b")", b"]", b"}"})
_OPEN, _CLOSE = b"\x01", b"\x02"
# Parameter lists whose brackets a formatter may add (`x => x` vs `(x) => x`); the brackets of
# parenthesized expressions never matter either: the tree around them keeps the precedence.
_TRANSPARENT = frozenset({"formal_parameters"})
_THREAD = threading.local()
_IMPORT_CAPTURES = frozenset({"module", "from", "mod", "import"})
_JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
_MINIFIED_LINE = 5000


@dataclass(frozen=True)
class CodeSymbol:
    """A function, method, class or type definition in a source file."""

    qualname: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    body_hash: str
    parent: str | None


@dataclass(frozen=True)
class CodeFile:
    """One indexed file: hashes, symbols, imports and syntax-error count."""

    path: str
    language: str
    content_hash: str
    raw_hash: str
    size: int
    symbols: tuple[CodeSymbol, ...]
    imports: tuple[str, ...]
    error_count: int


@dataclass
class IndexResult:
    """The outcome of indexing a repository."""

    files: dict[str, CodeFile] = field(default_factory=dict)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


# --- grammars and queries -------------------------------------------------------------------


@functools.cache
def _language(name: str) -> Language | None:
    """The tree-sitter Language for a language name, or None if its grammar does not load."""
    module, function = _GRAMMARS[name]
    try:
        return Language(getattr(importlib.import_module(module), function)())
    except (ImportError, AttributeError, TypeError, ValueError, OSError, RuntimeError):
        return None


def _grammar(name: str) -> Language:
    """The Language of a name known to load (see _usable)."""
    language = _language(name)
    if language is None:
        raise LookupError(f"no usable tree-sitter grammar for {name}")
    return language


@functools.cache
def _usable(name: str) -> bool:
    """True if the language's grammar loads and its query compiles against it."""
    if name not in _GRAMMARS or _language(name) is None:
        return False
    try:
        _query(name)
    except (QueryError, ValueError, NameError):
        return False
    return True


def _parser(name: str) -> Parser:
    """This thread's parser for a language name (a parser must not be shared by threads)."""
    parsers: dict[str, Parser] = _THREAD.__dict__.setdefault("parsers", {})
    if name not in parsers:
        parsers[name] = Parser(_grammar(name))
    return parsers[name]


@functools.cache
def _query(name: str) -> Query:
    """The one query of a language, matching definitions and imports; cached."""
    return Query(_grammar(name), "\n".join((_DEF_QUERIES[name], _IMPORT_QUERIES[name])))


_Definition = tuple[Node, str, Node, Node | None]  # node, capture kind, name node, Go receiver


@dataclass
class _Scan:
    """What a language's query found in one tree, each list in source order."""

    definitions: list[_Definition] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)


def _scan(language: str, root: Node) -> _Scan:
    """Run the language's query once over a tree and sort what it found."""
    scan = _Scan()
    imports: list[tuple[int, str]] = []
    for _, caps in QueryCursor(_query(language)).matches(root):
        if capture := next((c for c in caps if c in _IMPORT_CAPTURES), None):
            node = caps[capture][0]
            imports += [(node.start_byte, n) for n in _import_names(language, capture, node)]
        else:
            kind = next(k for k in caps if k not in ("name", "receiver"))
            receiver = caps["receiver"][0] if "receiver" in caps else None
            scan.definitions.append((caps[kind][0], kind, caps["name"][0], receiver))
    scan.definitions.sort(key=lambda d: (d[0].start_byte, -d[0].end_byte))
    names = (re.sub(r"\s+", "", name) for _, name in sorted(imports, key=lambda i: i[0]))
    scan.imports = list(dict.fromkeys(name for name in names if name))
    return scan


# --- hashing ----------------------------------------------------------------------------------


def _sha1(data: bytes) -> str:
    """Hex sha1 of bytes."""
    return hashlib.sha1(data).hexdigest()


@dataclass(frozen=True)
class _Kinds:
    """Per node kind of one grammar: what the token stream makes of it."""

    skipped: frozenset[int]  # comments and line continuations
    opens: tuple[bytes | None, ...]  # the marker a named node opens with (None: transparent)
    named: tuple[bool, ...]
    loose: frozenset[int]  # named leaves whose spaces are layout (Elixir's `do: ` keyword)
    strings: frozenset[int]  # named string delimiters (Python's string_start and string_end)
    string_end: frozenset[int]


@functools.cache
def _kinds(name: str) -> _Kinds:
    language = _grammar(name)
    types = [language.node_kind_for_id(i) or "" for i in range(language.node_kind_count)]
    named = tuple(language.node_kind_is_named(i) for i in range(len(types)))
    return _Kinds(
        skipped=frozenset(i for i, t in enumerate(types)
                          if "comment" in t or t == "line_continuation"),
        opens=tuple(_OPEN + t.encode() if named[i] and t not in _TRANSPARENT
                    and "parenthesized" not in t else None for i, t in enumerate(types)),
        named=named,
        loose=frozenset(i for i, t in enumerate(types) if named[i] and t == "keyword"),
        strings=frozenset(i for i, t in enumerate(types)
                          if t in ("string_start", "string_end") and named[i]),
        string_end=frozenset(i for i, t in enumerate(types) if t == "string_end" and named[i]),
    )


class _Tokens:
    """A tree's tokens in source order: leaf texts, and markers where named nodes open and close.

    Each token has a byte position (a closing marker sits half a byte before its node's end), and
    each named node's markers are indexed by its byte span, so the tokens of a node are exactly
    its own (never an enclosing node's marker that happens to end where it ends)."""

    def __init__(self, language: str, root: Node, data: bytes) -> None:
        self.at: list[float] = []
        self.text: list[bytes] = []
        self.nodes: dict[tuple[int, int], list[int]] = {}  # span: [open index, close index + 1]
        self._walk(_kinds(language), root, data)

    def _walk(self, kinds: _Kinds, root: Node, data: bytes) -> None:
        at, text = self.at, self.text
        skipped, opens, named = kinds.skipped, kinds.opens, kinds.named
        cursor = root.walk()
        first_child, next_sibling, parent = (cursor.goto_first_child, cursor.goto_next_sibling,
                                             cursor.goto_parent)
        nodes = self.nodes
        closes: list[tuple[int, int] | None] = []
        while True:
            node = cursor.node
            assert node is not None
            start, end, kind = node.start_byte, node.end_byte, node.kind_id
            if start != end and kind not in skipped and not node.is_extra:
                if first_child():
                    marker = opens[kind]
                    closes.append(None if marker is None else (start, end))
                    if marker is not None:
                        nodes.setdefault((start, end), [len(text), 0])
                        at.append(start)
                        text.append(marker)
                    continue
                raw = data[start:end]
                if not named[kind]:
                    if raw in _CLOSERS and text and text[-1] == b",":
                        at.pop()  # a trailing comma
                        text.pop()
                    if raw not in _DROPPED_TOKENS:
                        at.append(start)
                        text.append(b" ".join(raw.split()))  # `is  not`: one token, spaced
                elif kind in kinds.strings:
                    self._string_edge(kinds, kind, start, raw)
                elif kind in kinds.loose:
                    at.append(start)
                    text.append(b" ".join(raw.split()))
                else:
                    at.append(start)
                    text.append(raw)
            while not next_sibling():
                if not parent():
                    return
                span = closes.pop()
                if span is not None:
                    at.append(span[1] - 0.5)
                    text.append(_CLOSE)
                    nodes[span][1] = len(text)  # the outermost of equal spans closes last

    def _string_edge(self, kinds: _Kinds, kind: int, start: int, raw: bytes) -> None:
        """Python's string delimiters: only the prefix counts, in any case (`f"` is f, `B'` b; `u'`
        stays u, as Python's own AST keeps it)."""
        prefix = raw.strip(b"\"'").lower()
        if kind not in kinds.string_end and prefix:
            self.at.append(start)
            self.text.append(prefix)

    def _indexes(self, start: int, end: int) -> tuple[int, int]:
        """The token indexes of a byte span: a named node's own, else every token inside it."""
        found = self.nodes.get((start, end))
        if found is not None:
            return found[0], found[1]
        return bisect.bisect_left(self.at, start), bisect.bisect_left(self.at, end - 0.5)

    def digest(self, start: int, end: int, cuts: Iterable[tuple[int, int]] = ()) -> str:
        """sha1 of the tokens of bytes [start, end) but those of the cut spans inside it."""
        low, high = self._indexes(start, end)
        parts: list[bytes] = []
        for cut_start, cut_end in sorted(self._indexes(a, b) for a, b in cuts
                                         if start <= a and b <= end and (a, b) != (start, end)):
            parts += self.text[low:max(low, cut_start)]
            low = max(low, cut_end)
        parts += self.text[low:high]
        return _sha1(b"\0".join(parts))


# --- parsing ----------------------------------------------------------------------------------


def _language_for(path: str) -> str:
    """The language name for a path from its suffix, or "" if unknown."""
    return LANGUAGES.get(posixpath.splitext(path)[1].lower(), "")


def _to_bytes(source: bytes | str) -> bytes:
    """Source as bytes; strings are UTF-8 encoded without ever failing."""
    if isinstance(source, bytes):
        return source
    try:
        return source.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return source.encode("utf-8", "surrogatepass")


def parse_source(path: str, source: bytes | str, language: str | None = None) -> CodeFile:
    """Parse one file's source into a CodeFile; unknown languages get hashes only."""
    data = _to_bytes(source)
    return _parse(path, data, _language_for(path) if language is None else language, _sha1(data))


def _parse(path: str, data: bytes, language: str, raw_hash: str) -> CodeFile:
    """Parse bytes of a known raw hash into a CodeFile."""
    if not _usable(language):
        return CodeFile(path, "", raw_hash, raw_hash, len(data), (), (), 0)
    root = _parser(language).parse(data).root_node
    scan = _scan(language, root)
    tokens = _Tokens(language, root, data)
    return CodeFile(
        path=path,
        language=language,
        content_hash=_sha1(b"\0".join(tokens.text)),
        raw_hash=raw_hash,
        size=len(data),
        symbols=(_ElixirSymbols(path, tokens).collect(root) if language == "elixir"
                 else _Symbols(path, tokens).collect(scan.definitions)),
        imports=tuple(scan.imports),
        error_count=_error_count(root),
    )


def _error_count(root: Node) -> int:
    """Number of ERROR and MISSING nodes in a tree."""
    if not root.has_error:
        return 0
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return count


def _text(node: Node) -> str:
    """A node's source text, decoded leniently."""
    return (node.text or b"").decode("utf-8", "replace")


def _first_type_name(node: Node) -> str:
    """The first type identifier under a type node (`*Server[T]` -> Server), else its text."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "type_identifier":
            return _text(current)
        stack.extend(reversed(current.children))
    return re.sub(r"\s+", "", _text(node))


_DECLARATORS = frozenset({"pointer_declarator", "reference_declarator", "function_declarator",
                          "parenthesized_declarator", "attributed_declarator"})
_C_NAMES = frozenset({"identifier", "field_identifier", "destructor_name", "operator_name",
                      "operator_cast"})


def _c_function_name(declarator: Node) -> tuple[Node, str] | None:
    """The name node in a C/C++ function declarator and its `A::B::` scope as "A.B", if any."""
    node: Node | None = declarator
    scopes: list[str] = []
    while node is not None:
        if node.type in _DECLARATORS:
            inner = node.child_by_field_name("declarator")
            node = inner if inner is not None else next(iter(node.named_children), None)
        elif node.type == "qualified_identifier":
            scope = node.child_by_field_name("scope")
            if scope is not None:
                scopes.append(re.sub(r"<.*>", "", _text(scope)).replace("::", "."))
            node = node.child_by_field_name("name")
        elif node.type == "template_function":
            node = node.child_by_field_name("name")
        elif node.type in _C_NAMES:
            return node, ".".join(scopes)
        else:
            return None
    return None


def _declared_kind(node: Node) -> str:
    """Kind of a Swift or Kotlin class-like declaration, from its keyword."""
    keyword = node.child_by_field_name("declaration_kind")
    words = [_text(keyword)] if keyword is not None else []
    words += [c.type for c in node.children if not c.is_named]
    modifiers = next((c for c in node.children if c.type == "modifiers"), None)
    if modifiers is not None:
        words += _text(modifiers).split()
    for word, kind in (("extension", "impl"), ("protocol", "protocol"), ("interface", "interface"),
                       ("enum", "enum"), ("struct", "struct"), ("actor", "class")):
        if word in words:
            return kind
    return "class"


@dataclass
class _Scope:
    """A definition seen while collecting symbols: its local qualname and kind."""

    local: str
    kind: str


class _Symbols:
    """Collects the symbols of one parsed file."""

    def __init__(self, path: str, tokens: _Tokens):
        self.path = path
        self.tokens = tokens
        self.scopes: dict[int, _Scope] = {}
        self.seen: dict[str, int] = {}
        self.spans: dict[str, tuple[int, int, int, int]] = {}  # qualname: span and name bytes

    def collect(self, definitions: list[_Definition]) -> tuple[CodeSymbol, ...]:
        """Every symbol in source order, with parents resolved within the file."""
        found = [s for d in definitions if (s := self._symbol(*d)) is not None]
        spans = [self.spans[s.qualname] for s, _ in found]
        hashed = []
        for i, (symbol, container) in enumerate(found):
            start, end, name_start, name_end = spans[i]
            cuts = [(name_start, name_end)]
            if symbol.kind in _CLASS_LIKE:  # its own lines: nested symbols are hashed apart
                cuts += [(a, b) for a, b, _, _ in spans[i + 1:] if start <= a and b <= end]
            digest = self.tokens.digest(start, end, cuts)[:16]
            hashed.append((replace(symbol, body_hash=digest), container))
        return self._link_parents(hashed)

    def _symbol(
        self, node: Node, kind: str, name_node: Node, receiver: Node | None
    ) -> tuple[CodeSymbol, str | None] | None:
        """The symbol for one definition (hashed by collect) and its container's local name
        (None for scopes)."""
        enclosing = self._enclosing(node)
        container = enclosing.local if enclosing else None
        scope = ""
        if kind == "declarator":
            found = _c_function_name(name_node)
            if found is None:
                return None
            name_node, scope = found
            kind = "method" if scope else "function"
        if kind in ("impl", "typedecl"):
            name = _first_type_name(name_node)
        else:
            name = _text(name_node).replace("::", ".").replace("\\", ".")
        if receiver is not None:
            container = _first_type_name(receiver)
        kind = self._kind(node, kind, enclosing)
        scope, _, name = f"{scope}.{name}".strip(".").rpartition(".")
        if scope:  # `class A::B`, `void Shape::area()`: the rest of the path joins the container
            container = f"{container}.{scope}" if container else scope
        local = f"{container}.{name}" if container else name
        if kind in _SCOPES_NOT_SYMBOLS:
            self.scopes[node.id] = _Scope(local, kind)
            return None
        local = self._unique(local)
        self.scopes[node.id] = _Scope(local, kind)
        span = node.parent if node.parent and node.parent.type == "decorated_definition" else node
        self.spans[f"{self.path}::{local}"] = (span.start_byte, span.end_byte,
                                               name_node.start_byte, name_node.end_byte)
        symbol = CodeSymbol(
            qualname=f"{self.path}::{local}",
            name=name,
            kind=kind,
            path=self.path,
            start_line=span.start_point[0] + 1,
            end_line=span.end_point[0] + 1,
            body_hash="",
            parent=None,
        )
        return symbol, container

    def _kind(self, node: Node, kind: str, enclosing: _Scope | None) -> str:
        """The public kind of a definition, from its capture and its context."""
        if kind == "typespec":
            value = node.child_by_field_name("type")
            value_type = value.type if value is not None else ""
            return {"struct_type": "struct", "interface_type": "interface"}.get(value_type, "type")
        if kind == "typedecl":
            return _declared_kind(node)
        if kind == "module_":  # "module" names an import capture
            return "module"
        if kind == "function" and enclosing is not None and enclosing.kind in _CLASS_LIKE:
            return "method"
        return kind

    def _enclosing(self, node: Node) -> _Scope | None:
        """The nearest enclosing definition already seen, if any."""
        current = node.parent
        while current is not None:
            scope = self.scopes.get(current.id)
            if scope is not None:
                return scope
            current = current.parent
        return None

    def _unique(self, local: str) -> str:
        """The local qualname, suffixed with #n if it was already used in this file."""
        count = self.seen.get(local, 0) + 1
        self.seen[local] = count
        return local if count == 1 else f"{local}#{count}"

    def _link_parents(self, found: list[tuple[CodeSymbol, str | None]]) -> tuple[CodeSymbol, ...]:
        """Set each symbol's parent to its container when that container is a symbol here."""
        qualnames = {s.qualname for s, _ in found}
        linked = []
        for symbol, container in found:
            parent = f"{self.path}::{container}" if container else None
            if parent in qualnames:
                symbol = replace(symbol, parent=parent)
            linked.append(symbol)
        return tuple(linked)


_ELIXIR_MODULES = {"defmodule": "module", "defprotocol": "protocol", "defimpl": "impl"}
_ELIXIR_FUNCTIONS = {"def": "function", "defp": "function", "defdelegate": "function",
                     "defmacro": "macro", "defmacrop": "macro", "defguard": "guard",
                     "defguardp": "guard", "defn": "function", "defnp": "function"}


@dataclass
class _ElixirDef:
    """One Elixir definition: a module, or a function whose clauses may be several calls."""

    local: str
    name: str
    kind: str
    start: Node
    end: Node
    clauses: list[tuple[int, int, int, int]]  # each clause's bytes and its name's
    container: str | None


class _ElixirSymbols:
    """Collects the symbols of an Elixir file, where `defmodule` and `def` are macro calls.

    Modules are named as Elixir names them (`defmodule User` inside `MyApp` is `MyApp.User`,
    `defimpl P, for: T` is `P.T`); functions by module, name and arity (`MyApp.get/1`), and
    all clauses of one name/arity in a module are one symbol spanning its first to last clause,
    hashed over every clause, so adding a clause changes that function and no other.
    """

    def __init__(self, path: str, tokens: _Tokens):
        self.path = path
        self.tokens = tokens
        self.defs: dict[str, _ElixirDef] = {}

    def collect(self, root: Node) -> tuple[CodeSymbol, ...]:
        """Every module and function in source order (by first clause), parents linked."""
        self._walk(root, None)
        found = sorted(self.defs.values(), key=lambda d: (d.start.start_byte, -d.end.end_byte))
        inner: dict[str, list[tuple[int, int]]] = {}
        for d in found:
            if d.container is not None:
                inner.setdefault(d.container, []).extend((a, b) for a, b, _, _ in d.clauses)
        return tuple(
            CodeSymbol(
                qualname=f"{self.path}::{d.local}",
                name=d.name,
                kind=d.kind,
                path=self.path,
                start_line=d.start.start_point[0] + 1,
                end_line=d.end.end_point[0] + 1,
                body_hash=self._hash(d, inner.get(d.local, [])),
                parent=(f"{self.path}::{d.container}"
                        if d.container is not None and d.container in self.defs else None),
            )
            for d in found
        )

    def _hash(self, d: _ElixirDef, nested: list[tuple[int, int]]) -> str:
        """Every clause's tokens without its name; a module's without its functions and modules."""
        cut = nested if d.kind in _CLASS_LIKE else []
        return _sha1(b"\n".join(self.tokens.digest(a, b, [(n, m), *cut]).encode()
                                for a, b, n, m in d.clauses))[:16]

    def _walk(self, root: Node, module: str | None) -> None:
        """Find definitions under root, not descending into function bodies."""
        stack = [(root, module)]
        while stack:
            node, current = stack.pop()
            keyword = _elixir_keyword(node)
            if keyword in _ELIXIR_MODULES:
                name = self._module(node, keyword, current)
                if name is not None:
                    stack += [(c, name) for c in reversed(node.children) if c.type == "do_block"]
                    continue
            elif keyword in _ELIXIR_FUNCTIONS and current is not None:
                self._function(node, keyword, current)
                continue
            stack += [(c, current) for c in reversed(node.named_children)]

    def _module(self, node: Node, keyword: str, current: str | None) -> str | None:
        """Record a defmodule/defprotocol/defimpl call; its module name, or None."""
        args = _elixir_arguments(node)
        alias = args[0] if args and args[0].type == "alias" else None
        if alias is None:
            return None
        name = _text(alias)
        if keyword == "defimpl":
            target = _elixir_keyword_value(args, "for")
            target_name = _text(target) if target is not None else current
            local = f"{name}.{target_name}" if target_name else name
        else:
            local = f"{current}.{name}" if current else name
        self._add(node, local, local.rpartition(".")[2], _ELIXIR_MODULES[keyword], alias, current)
        return local

    def _function(self, node: Node, keyword: str, module: str) -> None:
        """Record one clause of a def-like call inside a module."""
        args = _elixir_arguments(node)
        head = args[0] if args else None
        if head is not None and head.type == "binary_operator" and _elixir_operator(head) == "when":
            head = head.child_by_field_name("left")
        if head is None:
            return
        if head.type == "identifier":
            name_node, arity = head, 0
        elif head.type == "call" and (target := head.child_by_field_name("target")) is not None \
                and target.type == "identifier":
            name_node = target
            params = next((c for c in head.children if c.type == "arguments"), None)
            arity = len(params.named_children) if params is not None else 0
        else:  # operators, `unquote(name)(…)`: no name a reader would look up
            return
        name = _text(name_node)
        self._add(node, f"{module}.{name}/{arity}", name, _ELIXIR_FUNCTIONS[keyword], name_node,
                  module)

    def _add(self, node: Node, local: str, name: str, kind: str, name_node: Node,
             container: str | None) -> None:
        """Add a definition, or one more clause to the function of the same local name."""
        clause = (node.start_byte, node.end_byte, name_node.start_byte, name_node.end_byte)
        known = self.defs.get(local)
        if known is not None and kind not in _ELIXIR_MODULES.values():
            known.clauses.append(clause)
            if node.end_byte > known.end.end_byte:
                known.end = node
            return
        if known is not None:  # a module defined twice in one file: keep both, like #2 elsewhere
            count = 2
            while f"{local}#{count}" in self.defs:
                count += 1
            local = f"{local}#{count}"
        self.defs[local] = _ElixirDef(local, name, kind, node, node, [clause], container)


def _elixir_keyword(node: Node) -> str:
    """The macro a call node invokes when its target is a bare identifier (`def`), else ""."""
    if node.type != "call":
        return ""
    target = node.child_by_field_name("target")
    return _text(target) if target is not None and target.type == "identifier" else ""


def _elixir_arguments(node: Node) -> list[Node]:
    """The named argument nodes of a call."""
    args = next((c for c in node.children if c.type == "arguments"), None)
    return list(args.named_children) if args is not None else []


def _elixir_operator(node: Node) -> str:
    """The operator of a binary_operator node."""
    operator = node.child_by_field_name("operator")
    return _text(operator) if operator is not None else ""


def _elixir_keyword_value(args: list[Node], key: str) -> Node | None:
    """The value of `key:` in a call's trailing keyword list."""
    for arg in args:
        if arg.type == "keywords":
            for pair in arg.named_children:
                pair_key = pair.child_by_field_name("key")
                if pair_key is not None and _text(pair_key).strip().rstrip(":") == key:
                    return pair.child_by_field_name("value")
    return None


# --- imports ----------------------------------------------------------------------------------


def _import_names(language: str, capture: str, node: Node) -> list[str]:
    """The names one captured import node contributes."""
    if capture == "from":
        return _python_from(node)
    if capture == "mod":
        return ["self::" + _text(node)]
    if capture == "import":
        return [_java_import(_text(node))]
    if language == "rust":
        return _rust_use_paths(_text(node))
    if language in ("c", "cpp"):
        return [_text(node).strip('"<>')]
    return [_text(node).strip("\"'`")]


def _python_from(node: Node) -> list[str]:
    """Modules named by a `from X import …` statement (`from . import a` gives ".a")."""
    module = node.child_by_field_name("module_name")
    if module is None:
        return []
    text = re.sub(r"\s+", "", _text(module))
    if text.strip("."):
        return [text]
    names = []
    for name in node.children_by_field_name("name"):
        dotted = name.child_by_field_name("name") if name.type == "aliased_import" else name
        if dotted is not None:
            names.append(text + _text(dotted))
    return names or [text]


def _rust_use_paths(text: str) -> list[str]:
    """Paths named by a `use` argument, expanding one level of `{a, b}` groups."""
    text = re.sub(r"\s+as\s+\w+", "", text)
    text = re.sub(r"\s+", "", text)
    if "{" not in text:
        return [text]
    prefix, _, rest = text.partition("{")
    prefix = prefix.rstrip(":")
    paths = []
    for item in _split_top_level(rest[: rest.rfind("}")]):
        if item in ("", "self", "*") or "{" in item:
            paths.append(prefix)
        else:
            paths.append(f"{prefix}::{item}" if prefix else item)
    return [p for p in paths if p]


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside braces."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "{") - (char == "}")
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def _java_import(text: str) -> str:
    """The dotted name of a Java import declaration (`import static a.B.c;` gives "a.B.c")."""
    match = re.match(r"import\s+(?:static\s+)?([\w.*\s]+?)\s*;", text)
    return re.sub(r"\s+", "", match.group(1)) if match else ""


# --- lookups by line --------------------------------------------------------------------------


def _depth(symbol: CodeSymbol) -> int:
    """Nesting depth of a symbol, from its qualname."""
    return symbol.qualname.rpartition("::")[2].count(".")


def symbol_at(file: CodeFile, line: int) -> CodeSymbol | None:
    """The innermost symbol whose line span contains line, or None."""
    containing = [s for s in file.symbols if s.start_line <= line <= s.end_line]
    if not containing:
        return None
    return min(containing, key=lambda s: (s.end_line - s.start_line, -_depth(s)))


def symbols_touching(file: CodeFile, start_line: int, end_line: int) -> list[CodeSymbol]:
    """The innermost symbols of the lines in [start_line, end_line], in source order.

    A symbol is listed when some line of the range lies in it and in none of its children,
    so a hunk that edits a method lists the method, and one that also edits the class body
    between methods lists the class too.
    """
    overlapping = [s for s in file.symbols if s.start_line <= end_line and s.end_line >= start_line]
    touched = []
    for i, symbol in enumerate(overlapping):
        low, high = max(start_line, symbol.start_line), min(end_line, symbol.end_line)
        children = []
        for inner in overlapping[i + 1:]:
            if inner.start_line > symbol.end_line:
                break
            if _is_inside(inner, symbol):
                children.append((max(low, inner.start_line), min(high, inner.end_line)))
        if _has_uncovered_line(low, high, sorted(children)):
            touched.append(symbol)
    return touched


def _is_inside(inner: CodeSymbol, outer: CodeSymbol) -> bool:
    """True if inner is nested in outer: a qualname child lying within its line span."""
    return (
        inner.qualname.startswith(outer.qualname + ".")
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
    )


def _has_uncovered_line(low: int, high: int, intervals: list[tuple[int, int]]) -> bool:
    """True if some line in [low, high] lies outside every (sorted) interval."""
    next_free = low
    for start, end in intervals:
        if start > next_free:
            return True
        next_free = max(next_free, end + 1)
    return next_free <= high


# --- import resolution ------------------------------------------------------------------------


def resolve_imports(files: Mapping[str, CodeFile]) -> list[tuple[str, str]]:
    """(from_path, to_path) pairs for imports that resolve to files in the index."""
    paths = set(files)
    python_modules = _python_module_map(files)
    go_dirs = _go_package_dirs(files)
    java_by_stem = _java_files_by_stem(files)
    edges: set[tuple[str, str]] = set()
    for path, file in files.items():
        for name in file.imports:
            if file.language == "python":
                targets = _resolve_python(path, name, paths, python_modules)
            elif file.language in ("javascript", "typescript", "tsx"):
                targets = _resolve_js(path, name, paths)
            elif file.language == "go":
                targets = _resolve_go(name, go_dirs)
            elif file.language == "rust":
                targets = _resolve_rust(path, name, paths)
            elif file.language == "java":
                targets = _resolve_java(name, java_by_stem)
            else:
                targets = []
            edges.update((path, target) for target in targets if target != path)
    return sorted(edges)


def _python_module_map(files: Mapping[str, CodeFile]) -> dict[str, str]:
    """Dotted module name -> path, by package (`__init__.py`) roots, repo root and src/."""
    py = sorted((p for p, f in files.items() if f.language == "python"),
                key=lambda p: (p.endswith(".pyi"), p))
    packages = {posixpath.dirname(p) for p in py if posixpath.basename(p).startswith("__init__.")}
    modules: dict[str, str] = {}
    for path in py:
        parts = _module_parts(path)
        top = len(parts) - 1
        while top > 0 and "/".join(parts[:top]) in packages:
            top -= 1
        modules.setdefault(".".join(parts[top:]), path)
    for path in py:
        parts = _module_parts(path)
        modules.setdefault(".".join(parts), path)
        if parts[0] in ("src", "lib") and len(parts) > 1:
            modules.setdefault(".".join(parts[1:]), path)
    return modules


def _module_parts(path: str) -> list[str]:
    """Path components of a python file as a module (`a/b/__init__.py` -> [a, b])."""
    parts = posixpath.splitext(path)[0].split("/")
    return parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts


def _resolve_python(path: str, name: str, paths: set[str], modules: dict[str, str]) -> list[str]:
    """Files a python import names: relative to the file's package, else by module name."""
    if not name.startswith("."):
        parts = name.split(".")
        while parts:
            found = modules.get(".".join(parts))
            if found:
                return [found]
            parts.pop()
        return []
    dots = len(name) - len(name.lstrip("."))
    base = posixpath.dirname(path)
    for _ in range(dots - 1):
        base = posixpath.dirname(base)
    rest = [p for p in name[dots:].split(".") if p]
    while True:
        stem = posixpath.join(base, *rest) if rest else base
        for suffix in (".py", "/__init__.py", ".pyi", "/__init__.pyi"):
            candidate = (stem + suffix).lstrip("/")
            if candidate in paths:
                return [candidate]
        if not rest:
            return []
        rest.pop()


_JS_RESOLVE_SUFFIXES = ("", ".ts", ".tsx", ".d.ts", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")


def _resolve_js(path: str, name: str, paths: set[str]) -> list[str]:
    """Files a relative JS/TS import names, trying extensions, index files and .js -> .ts."""
    if not name.startswith(("./", "../")) and name not in (".", ".."):
        return []
    base = posixpath.normpath(posixpath.join(posixpath.dirname(path), name))
    if base.startswith(".."):
        return []
    stems = [base, f"{base}/index"]
    stem, suffix = posixpath.splitext(base)
    if suffix in (".js", ".jsx", ".mjs", ".cjs"):
        stems.insert(1, stem)
    for candidate_stem in stems:
        for ext in _JS_RESOLVE_SUFFIXES:
            candidate = (candidate_stem + ext).removeprefix("./")
            if candidate in paths:
                return [candidate]
    return []


def _go_package_dirs(files: Mapping[str, CodeFile]) -> dict[str, list[str]]:
    """Directory -> its non-test Go files (a Go package is a directory)."""
    dirs: dict[str, list[str]] = {}
    for path, file in sorted(files.items()):
        if file.language == "go" and not path.endswith("_test.go"):
            dirs.setdefault(posixpath.dirname(path), []).append(path)
    return dirs


def _resolve_go(name: str, dirs: dict[str, list[str]]) -> list[str]:
    """Files of the local package an import path names, matched by its longest path suffix."""
    if name in dirs:
        return dirs[name]
    parts = name.split("/")
    if "." not in parts[0]:
        return []
    for i in range(1, len(parts)):
        suffix = "/".join(parts[i:])
        if suffix in dirs:
            return dirs[suffix]
    return []


def _resolve_rust(path: str, name: str, paths: set[str]) -> list[str]:
    """The module file a `crate::`, `self::` or `super::` path (or `mod x;`) names."""
    parts = name.split("::")
    if parts[0] == "crate":
        base = _rust_crate_root(path, paths)
        parts = parts[1:]
    elif parts[0] in ("self", "super"):
        base = _rust_module_dir(path)
        parts = parts[1:] if parts[0] == "self" else parts
    else:
        return []
    if base is None:
        return []
    while parts and parts[0] == "super":
        base = posixpath.dirname(base)
        parts = parts[1:]
    for end in range(len(parts), -1, -1):
        stem = posixpath.join(base, *parts[:end])
        candidates = [f"{stem}.rs", f"{stem}/mod.rs"]
        if end == 0:
            candidates += [f"{stem}/lib.rs", f"{stem}/main.rs"]
        for candidate in candidates:
            if candidate.lstrip("/") in paths:
                return [candidate.lstrip("/")]
    return []


def _rust_crate_root(path: str, paths: set[str]) -> str | None:
    """The nearest ancestor directory holding lib.rs or main.rs."""
    directory = posixpath.dirname(path)
    while True:
        if any(posixpath.join(directory, f) in paths for f in ("lib.rs", "main.rs")):
            return directory
        if not directory:
            return None
        directory = posixpath.dirname(directory)


def _rust_module_dir(path: str) -> str:
    """The directory holding a Rust file's child modules (`src/a.rs` -> `src/a`)."""
    directory, filename = posixpath.split(path)
    if filename in ("lib.rs", "main.rs", "mod.rs"):
        return directory
    return posixpath.join(directory, filename[: -len(".rs")])


def _java_files_by_stem(files: Mapping[str, CodeFile]) -> dict[str, list[str]]:
    """Class name -> Java files of that name."""
    by_stem: dict[str, list[str]] = {}
    for path, file in sorted(files.items()):
        if file.language == "java":
            stem = posixpath.splitext(posixpath.basename(path))[0]
            by_stem.setdefault(stem, []).append(path)
    return by_stem


def _resolve_java(name: str, by_stem: dict[str, list[str]]) -> list[str]:
    """Java files a (possibly static or wildcard) import names, matched by path suffix."""
    parts = name.split(".")
    if parts[-1] == "*":
        package = "/".join(parts[:-1])
        return [p for paths in by_stem.values() for p in paths
                if posixpath.dirname(p) == package or posixpath.dirname(p).endswith("/" + package)]
    for end in range(len(parts), 1, -1):
        suffix = "/".join(parts[:end]) + ".java"
        found = [p for p in by_stem.get(parts[end - 1], [])
                 if p == suffix or p.endswith("/" + suffix)]
        if found:
            return found
    return []


# --- repository walk --------------------------------------------------------------------------


def index_repository(
    root: str | Path,
    previous: Mapping[str, CodeFile] | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    max_bytes: int = 1_000_000,
) -> IndexResult:
    """Index every file under root, reusing files of `previous` whose raw bytes are unchanged."""
    started = time.perf_counter()
    root = Path(root).resolve()
    previous = previous or {}
    result = IndexResult()
    paths = _git_files(root)
    if paths is None:
        paths = list(_walk_files(root, result))
    for done, rel in enumerate(paths, 1):
        data = _read(root, rel, max_bytes, result)
        if data is not None:
            raw_hash = _sha1(data)
            old = previous.get(rel)
            if old is not None and old.raw_hash == raw_hash:
                result.files[rel] = old
            else:
                result.files[rel] = _parse(rel, data, _language_for(rel), raw_hash)
                result.changed.append(rel)
        if progress is not None:
            progress(done, len(paths))
    result.removed = sorted(set(previous) - set(result.files))
    _summarise_warnings(result)
    result.seconds = time.perf_counter() - started
    return result


def _skip(result: IndexResult, reason: str, message: str) -> None:
    """Count a skipped path under reason and warn about it (the first few per reason)."""
    result.skipped[reason] = result.skipped.get(reason, 0) + 1
    if result.skipped[reason] <= MAX_WARNINGS_PER_REASON:
        result.warnings.append(message)


def _summarise_warnings(result: IndexResult) -> None:
    """Add syntax-error warnings and a line for each reason whose warnings were capped."""
    broken = [(p, f.error_count) for p, f in sorted(result.files.items()) if f.error_count]
    result.warnings += [f"syntax errors: {p} ({n})" for p, n in broken[:MAX_WARNINGS_PER_REASON]]
    if len(broken) > MAX_WARNINGS_PER_REASON:
        result.warnings.append(f"syntax errors: {len(broken) - MAX_WARNINGS_PER_REASON} more files")
    for reason, count in result.skipped.items():
        if count > MAX_WARNINGS_PER_REASON:
            result.warnings.append(f"{reason}: {count - MAX_WARNINGS_PER_REASON} more not listed")


def _git_files(root: Path) -> list[str] | None:
    """Tracked and untracked-not-ignored files under root, or None if root is not in git."""
    excludes = [f":(exclude,glob)**/{name}/**" for name in sorted(SKIP_DIRS)]
    try:
        done = git.run(["ls-files", "-co", "--exclude-standard", "-z", "--", ".", *excludes], root)
    except git.GitUnavailable:
        return None
    if done.returncode != 0:
        return None
    return list(dict.fromkeys(os.fsdecode(n) for n in done.stdout.split(b"\0") if n))


_IgnoreRule = tuple[str, str, bool, bool]  # base dir, pattern, directories only, anchored


def _walk_files(root: Path, result: IndexResult) -> Iterator[str]:
    """Files under root by os.walk, honouring .gitignore files and never following symlinks."""
    rules: list[_IgnoreRule] = []
    for directory, dirnames, filenames in os.walk(root):
        base = Path(directory).relative_to(root).as_posix()
        base = "" if base == "." else base
        if ".gitignore" in filenames:
            rules += _read_gitignore(Path(directory, ".gitignore"), base)
        kept = []
        for name in sorted(dirnames):
            rel = posixpath.join(base, name)
            if name in SKIP_DIRS or _ignored(rel, True, rules):
                continue
            if os.path.islink(os.path.join(directory, name)):
                _classify_dir_symlink(root, rel, result)
            else:
                kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = posixpath.join(base, name)
            if not _ignored(rel, False, rules):
                yield rel


def _read_gitignore(path: Path, base: str) -> list[_IgnoreRule]:
    """Rules of one .gitignore (negations are not supported and are ignored)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    rules = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        directories_only = line.endswith("/")
        pattern = line.rstrip("/").removeprefix("**/")
        anchored = "/" in pattern
        rules.append((base, pattern.lstrip("/"), directories_only, anchored))
    return rules


def _ignored(rel: str, is_dir: bool, rules: list[_IgnoreRule]) -> bool:
    """True if a root-relative path matches one of the .gitignore rules that apply to it."""
    for base, pattern, directories_only, anchored in rules:
        if (directories_only and not is_dir) or (base and not rel.startswith(base + "/")):
            continue
        sub = rel[len(base) + 1:] if base else rel
        if fnmatchcase(sub if anchored else sub.rpartition("/")[2], pattern):
            return True
    return False


def _classify_dir_symlink(root: Path, rel: str, result: IndexResult) -> None:
    """Count a directory symlink we do not follow, warning if it loops or escapes root."""
    link = root / rel
    try:
        target = link.resolve(strict=True)
    except (OSError, RuntimeError):
        _skip(result, "symlink loop", f"symlink loop: {rel}")
        return
    if link.parent.resolve() == target or target in link.parent.resolve().parents:
        _skip(result, "symlink loop", f"symlink loop: {rel} -> {target}")
    elif not target.is_relative_to(root):
        _skip(result, "symlink escapes root", f"symlink escapes root: {rel} -> {target}")
    else:
        result.skipped["symlinked directory"] = result.skipped.get("symlinked directory", 0) + 1


def _read(root: Path, rel: str, max_bytes: int, result: IndexResult) -> bytes | None:
    """The bytes of a file worth indexing, or None after counting why it was skipped."""
    path = root / rel
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            if not _safe_file_symlink(root, rel, result):
                return None
            info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > max_bytes:
            _skip(result, "too large", f"too large: {rel} ({info.st_size / 1e6:.1f} MB)")
            return None
        if rel.endswith((".min.js", ".min.css", ".map")):
            _skip(result, "minified", f"minified: {rel}")
            return None
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        _skip(result, "unreadable", f"unreadable: {rel} ({error.strerror or error})")
        return None
    if b"\0" in data[:8192]:
        _skip(result, "binary", f"skipped binary: {rel}")
        return None
    if rel.endswith(_JS_SUFFIXES) and _has_long_line(data[:65536]):
        _skip(result, "minified", f"minified: {rel}")
        return None
    return data


def _has_long_line(head: bytes) -> bool:
    """True if a line of head is longer than a hand-written line ever is."""
    return any(len(line) > _MINIFIED_LINE for line in head.split(b"\n"))


def _safe_file_symlink(root: Path, rel: str, result: IndexResult) -> bool:
    """True if a file symlink resolves to a regular file inside root; else counts why not."""
    link = root / rel
    try:
        target = link.resolve(strict=True)
    except FileNotFoundError:
        _skip(result, "broken symlink", f"broken symlink: {rel}")
        return False
    except (OSError, RuntimeError):
        _skip(result, "symlink loop", f"symlink loop: {rel}")
        return False
    if target.is_dir():
        _classify_dir_symlink(root, rel, result)
        return False
    if not target.is_relative_to(root):
        _skip(result, "symlink escapes root", f"symlink escapes root: {rel} -> {target}")
        return False
    return True
