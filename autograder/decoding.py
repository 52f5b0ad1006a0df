"""What an encoded `exec` runs, read without running it: the TA's view of a cell sent to review.

An answer run through `exec` (or `eval`, `compile`) of an encoded string is a cell the process reader
cannot decide (it goes to a person); all a TA would see of it is the blob. This module folds the
argument of every such call in the student's code, statically, over the syntax tree: nothing of the
student's runs. What it may fold is named (an allowlist), everything else is "could not decode", with
the reason:

* constants: str, bytes and int literals, f-strings of them, lists and tuples of them;
* `+` of two strings or two byte strings, `*` by an int, `^ & | + - % // *` of two ints (bounded),
  slicing with constant bounds (`s[::-1]`);
* `sep.join(items)`, `.decode(...)` / `.encode(...)` with utf-8, ascii or latin-1, `.replace(a, b)`,
  `.strip()` and its sides, `.lower()`, `.upper()`, `bytes.fromhex(...)`;
* `chr`, `ord`, `bytes(ints)`, `bytearray(ints)`, `str(bytes, encoding)`, `list`, `tuple`, `reversed`,
  `map(chr | ord, items)`, and a comprehension `f(x) for x in items` (one loop, conditions allowed) of these;
* the decoders in DECODERS (base64's, binascii's hex and base64, codecs.decode with rot13, hex,
  base64, zlib, bz2 and the text encodings, codecs.encode with rot13 and the text encodings; zlib,
  gzip, bz2 and lzma decompression), each reached through the student's own `import` (`import base64
  as b`, `from zlib import decompress`) or `__import__('name')`;
* a name bound exactly once in the student's code, by a plain `name = value`, is its value.

Student content is hostile, so every step is bounded: no value longer than MAX_VALUE characters or bytes
(a decompression is cut off there: a bomb expands no further), no more than MAX_STEPS folding steps
and MAX_DEPTH nested expressions per call, MAX_SECONDS per cell's decoding, no text longer than
MAX_SOURCE parsed; a decoded text that itself execs an encoded string is decoded in turn, MAX_LEVELS
levels deep; at most MAX_SITES calls are shown per cell. The decoded text is student content, given as
it is: whoever shows it makes it inert (the formgrader's page: autograder/publish/pages.py `inert_text`).
A decoding never changes a score: the cell stays with a person.
"""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import lzma
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import GraderError

MAX_VALUE = 200_000  # characters or bytes of any value folded (a decompression stops there)
MAX_SOURCE = 200_000  # characters of a text parsed (the student's cells, a decoded text)
MAX_STEPS = 50_000  # folding steps for one call's argument
MAX_DEPTH = 60  # nested expressions in one fold
MAX_LEVELS = 4  # an exec whose text execs an encoded string: decoded this deep
MAX_SITES = 8  # calls shown for one cell (nested ones included)
MAX_SECONDS = 2.0  # for one cell's decoding, all levels
MAX_SHOWN = 20_000  # characters of one decoded text kept to show (the rest is counted, not kept)
MAX_INT = 1 << 32  # integers folded stay below this in size

# The key of a cell's metadata that holds, for the TA alone, what the grader read of a cell sent to review
# (grading/judging.py writes it, the formgrader's page shows it, publish/feedback.py drops it).
GRADER_VIEW = "course_grader_view"
RUNNERS = {"exec", "eval", "compile"}  # the calls whose first argument is code
MAX_ALIASES = 8  # `a = exec; b = a; ...`: followed this far
TEXT_ENCODINGS = {"utf-8", "utf8", "utf_8", "ascii", "us-ascii", "latin-1", "latin1", "latin_1", "iso-8859-1"}


class Refused(GraderError):
    """What could not be folded, and why (in the TA's terms)."""


def _check_size(value: Any) -> Any:
    if isinstance(value, (str, bytes, bytearray, list, tuple)) and len(value) > MAX_VALUE:
        raise Refused(f"a value longer than {MAX_VALUE:,} characters (the grader's limit)")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INT:
        raise Refused("an integer too large")
    return value


def _text_of(data: Any) -> bytes:
    if isinstance(data, str):
        if not data.isascii():
            raise Refused("a decoder given non-ASCII text")
        return data.encode("ascii")
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    raise Refused("a decoder given something other than text")


def _bytes_only(data: Any) -> bytes:
    """A decoder that Python gives bytes only (a decompression, decodebytes, the base64 codec)."""
    if not isinstance(data, (bytes, bytearray)):
        raise Refused("a decoder that takes bytes given something else (Python raises there)")
    return bytes(data)


def _bounded(make: Callable[[], Any], data: Any) -> bytes:
    """Decompress `data` with a decompressor from `make`, never past MAX_VALUE bytes."""
    d = make()
    out = d.decompress(_bytes_only(data), MAX_VALUE + 1)
    if len(out) > MAX_VALUE:
        raise Refused(f"a decompression that expands past {MAX_VALUE:,} bytes (the grader's limit): not expanded")
    return bytes(out)


def _zlib(data: Any, wbits: int = zlib.MAX_WBITS) -> bytes:
    if not isinstance(wbits, int):
        raise Refused("zlib.decompress with a computed window size")
    return _bounded(lambda: zlib.decompressobj(wbits), data)


def _gzip(data: Any) -> bytes:
    return _bounded(lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), data)


def _bz2(data: Any) -> bytes:
    return _bounded(bz2.BZ2Decompressor, data)


def _lzma(data: Any) -> bytes:
    return _bounded(lambda: lzma.LZMADecompressor(), data)


def _rot13(data: Any) -> str:
    if not isinstance(data, str):
        raise Refused("rot13 of something other than text")
    return codecs.encode(data, "rot13")


CODECS: dict[str, Callable[[Any], Any]] = {
    "rot13": _rot13,
    "rot_13": _rot13,
    "hex": lambda d: binascii.unhexlify(_text_of(d)),
    "hex_codec": lambda d: binascii.unhexlify(_text_of(d)),
    "base64": lambda d: base64.decodebytes(_bytes_only(d)),
    "base64_codec": lambda d: base64.decodebytes(_bytes_only(d)),
    "zlib": _zlib,
    "zlib_codec": _zlib,
    "bz2": _bz2,
    "bz2_codec": _bz2,
}


def _codec(data: Any, encoding: Any = "utf-8", errors: Any = "strict", *, encode: bool = False) -> Any:
    """codecs.decode (or, with `encode`, codecs.encode) as Python runs it, for the codecs the grader reads:
    rot13 either way, the text encodings (text to bytes to encode, bytes to text to decode), and hex,
    base64, zlib and bz2 to decode only."""
    if not isinstance(encoding, str) or errors != "strict":
        raise Refused("codecs with a computed encoding or an error handler")
    name = encoding.lower().replace(" ", "")
    if name in ("rot13", "rot_13"):
        return _rot13(data)
    if name in TEXT_ENCODINGS:
        if encode and isinstance(data, str):
            return data.encode(name)
        if not encode and isinstance(data, (bytes, bytearray)):
            return bytes(data).decode(name)
        raise Refused(f"codecs.{'encode' if encode else 'decode'} of the wrong kind of value for {encoding[:30]!r}")
    if name in CODECS and not encode:
        return CODECS[name](data)
    raise Refused(f"codecs.{'encode' if encode else 'decode'} with {encoding[:30]!r}, which the grader does not fold")


def _b64(fn: Callable[..., bytes]) -> Callable[..., bytes]:
    def call(data: Any, *rest: Any) -> bytes:
        if any(not isinstance(r, (bytes, str, bool)) for r in rest):
            raise Refused("a base64 decoder with a computed option")
        return fn(_text_of(data), *rest)

    return call


# The decoders the grader folds, by the dotted name a student's import reaches them by.
DECODERS: dict[str, Callable[..., Any]] = {
    "base64.b64decode": _b64(base64.b64decode),
    "base64.standard_b64decode": _b64(base64.standard_b64decode),
    "base64.urlsafe_b64decode": _b64(base64.urlsafe_b64decode),
    "base64.b32decode": _b64(base64.b32decode),
    "base64.b32hexdecode": _b64(base64.b32hexdecode),
    "base64.b16decode": _b64(base64.b16decode),
    "base64.a85decode": _b64(base64.a85decode),
    "base64.b85decode": _b64(base64.b85decode),
    "base64.decodebytes": lambda d: base64.decodebytes(_bytes_only(d)),
    "binascii.unhexlify": _b64(binascii.unhexlify),
    "binascii.a2b_hex": _b64(binascii.a2b_hex),
    "binascii.a2b_base64": _b64(binascii.a2b_base64),
    "codecs.decode": _codec,
    "codecs.encode": lambda *args: _codec(*args, encode=True),
    "zlib.decompress": _zlib,
    "gzip.decompress": _gzip,
    "bz2.decompress": _bz2,
    "lzma.decompress": _lzma,
}
MODULES = {name.split(".")[0] for name in DECODERS}


def _ints(items: Any) -> list[int]:
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, int) and 0 <= i < 256 for i in items):
        raise Refused("bytes(...) of something other than small integers")
    return list(items)


def _chr(i: Any) -> str:
    if not isinstance(i, int) or isinstance(i, bool):
        raise Refused("chr of something other than an integer")
    return chr(i)


def _ord(c: Any) -> int:
    if not isinstance(c, (str, bytes)) or len(c) != 1:
        raise Refused("ord of something other than one character")
    return ord(c)


def _bytes(items: Any, encoding: Any = None) -> bytes:
    if isinstance(items, str):
        if encoding is None:
            raise Refused("bytes(...) of text without an encoding")
        return _codec(items, encoding, encode=True)  # type: ignore[no-any-return]
    if isinstance(items, bytes):
        return items
    return bytes(_ints(items))


def _str(data: Any, encoding: Any = None) -> str:
    if isinstance(data, str) and encoding is None:
        return data
    if isinstance(data, (bytes, bytearray)) and isinstance(encoding, str) and encoding.lower() in TEXT_ENCODINGS:
        return bytes(data).decode(encoding.lower())
    raise Refused("str(...) other than of bytes with a text encoding")


def _seq(items: Any) -> list[Any]:
    if isinstance(items, (str, bytes, list, tuple)):
        return list(items)
    raise Refused("a sequence the grader cannot fold")


BUILTINS: dict[str, Callable[..., Any]] = {
    "chr": _chr,
    "ord": _ord,
    "bytes": _bytes,
    "bytearray": _bytes,
    "str": _str,
    "list": _seq,
    "tuple": lambda items: tuple(_seq(items)),
    "reversed": lambda items: _seq(items)[::-1],
}
MAPPED = {"chr": _chr, "ord": _ord}  # what map(f, items) may apply
BUILTIN_NAMES = set(BUILTINS) | {"map"}


@dataclass
class Site:
    """One call that runs code: where it is, what it runs (`text`) or why the grader could not say."""

    where: str
    text: str | None = None
    why: str = ""
    level: int = 0  # 0: in the student's cells; 1: in a text decoded from them; ...

    def as_dict(self) -> dict[str, Any]:
        """What is kept to show: the text's first MAX_SHOWN characters, and how many more there were."""
        text = self.text if self.text is None else self.text[:MAX_SHOWN]
        cut = len(self.text) - MAX_SHOWN if self.text is not None and len(self.text) > MAX_SHOWN else 0
        return {"where": self.where, "text": text, "why": self.why, "level": self.level, "cut": cut}


@dataclass
class _Names:
    """What the code's names are bound to, read from the text: imports of the decoders' modules, and
    names bound exactly once by `name = value`. Anything bound otherwise, or more than once, is unknown."""

    imports: dict[str, str] = field(default_factory=dict)
    values: dict[str, ast.expr] = field(default_factory=dict)
    unknown: set[str] = field(default_factory=set)
    parent: "_Names | None" = None

    @classmethod
    def of(cls, trees: list[ast.Module], parent: "_Names | None" = None) -> "_Names":
        names = cls(parent=parent)
        counts: dict[str, int] = {}
        plain: set[int] = set()  # the target of a `name = value`: counted with its statement
        for tree in trees:
            for node in ast.walk(tree):
                bound: list[str] = []
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        local = alias.asname or alias.name.split(".")[0]
                        if isinstance(node, ast.Import):
                            full = alias.name if alias.asname else alias.name.split(".")[0]
                        else:
                            full = f"{node.module}.{alias.name}" if node.module and not node.level else "?"
                        bound.append(local)
                        names.imports[local] = full
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    names.values[node.targets[0].id] = node.value
                    counts[node.targets[0].id] = counts.get(node.targets[0].id, 0) + 1
                    plain.add(id(node.targets[0]))
                elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                    if id(node) not in plain:
                        bound.append(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.append(node.name)
                elif isinstance(node, ast.ExceptHandler) and node.name:
                    bound.append(node.name)
                elif isinstance(node, (ast.Global, ast.Nonlocal)):
                    bound += node.names
                elif isinstance(node, ast.arg):
                    bound.append(node.arg)
                for name in bound:
                    counts[name] = counts.get(name, 0) + 2
        for name, n in counts.items():
            if n != 1:
                names.values.pop(name, None)
                if n > 1 and not (name in names.imports and n == 2):
                    names.unknown.add(name)
        # an import rebound (or imported twice) is unknown
        for name in list(names.imports):
            if name in names.unknown:
                del names.imports[name]
        return names

    def module_path(self, name: str) -> str | None:
        if name in self.imports:
            return self.imports[name]
        if name in self.unknown or name in self.values:
            return None
        return self.parent.module_path(name) if self.parent else None

    def builtin(self, name: str) -> bool:
        """True if the student's code binds `name` nowhere: it is Python's builtin of that name."""
        if name in self.imports or name in self.values or name in self.unknown:
            return False
        return self.parent.builtin(name) if self.parent else True

    def value(self, name: str) -> ast.expr | None:
        if name in self.values:
            return self.values[name]
        if name in self.unknown or name in self.imports:
            return None
        return self.parent.value(name) if self.parent else None


class _Folder:
    def __init__(self, names: _Names, deadline: float):
        self.names = names
        self.deadline = deadline
        self.steps = 0
        self.depth = 0
        self.resolving: set[str] = set()

    def fold(self, node: ast.AST, env: dict[str, Any] | None = None) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Refused(f"more than {MAX_STEPS:,} steps to decode (the grader's limit)")
        if self.steps % 256 == 0 and time.monotonic() > self.deadline:
            raise Refused(f"more than {MAX_SECONDS:g} s to decode (the grader's limit)")
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise Refused(f"expressions nested more than {MAX_DEPTH} deep")
            return _check_size(self._fold(node, env or {}))
        finally:
            self.depth -= 1

    def _fold(self, node: ast.AST, env: dict[str, Any]) -> Any:
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (str, bytes)) or (
                isinstance(node.value, int) and not isinstance(node.value, bool)
            ):
                return node.value
            if node.value is None:
                return None
            raise Refused(f"a constant of type {type(node.value).__name__}")
        if isinstance(node, (ast.List, ast.Tuple)):
            if len(node.elts) > MAX_VALUE:
                raise Refused("a list too long")
            items = [self.fold(e, env) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    if part.format_spec is not None or part.conversion not in (-1, ord("s")):
                        raise Refused("an f-string with a format")
                    value = self.fold(part.value, env)
                    if not isinstance(value, (str, int)):
                        raise Refused("an f-string of something other than text")
                    parts.append(str(value))
                else:
                    parts.append(self.fold(part, env))
            return self._joined("", parts)
        if isinstance(node, ast.Name):
            return self._name(node.id, env)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.fold(node.operand, env)
            if not isinstance(value, int) or isinstance(value, bool):
                raise Refused("a sign on something other than an integer")
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp):
            return self._binop(node.op, self.fold(node.left, env), self.fold(node.right, env))
        if isinstance(node, ast.Subscript):
            return self._subscript(node, env)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self._comprehension(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        shown = ast.unparse(node) if isinstance(node, (ast.Attribute, ast.Name)) else type(node).__name__
        raise Refused(f"`{shown[:60]}`, which the grader does not fold")

    def _name(self, name: str, env: dict[str, Any]) -> Any:
        if name in env:
            return env[name]
        value = self.names.value(name)
        if value is None or name in self.resolving:
            raise Refused(f"`{name[:40]}`, which is not bound once to a value the grader can fold")
        self.resolving.add(name)
        try:
            return self.fold(value)
        finally:
            self.resolving.discard(name)

    @staticmethod
    def _joined(sep: Any, parts: list[Any]) -> Any:
        if not parts and isinstance(sep, (str, bytes)):
            return sep[:0]
        kind = type(sep)
        if not all(isinstance(p, kind) for p in parts) or kind not in (str, bytes):
            raise Refused("a join of mixed or non-text items")
        total = sum(len(p) for p in parts) + len(sep) * max(len(parts) - 1, 0)
        if total > MAX_VALUE:
            raise Refused(f"a value longer than {MAX_VALUE:,} characters (the grader's limit)")
        return sep.join(parts)

    @staticmethod
    def _binop(op: ast.operator, left: Any, right: Any) -> Any:
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
        if isinstance(op, ast.Add):
            if ints:
                return left + right
            if type(left) is type(right) and isinstance(left, (str, bytes, list, tuple)):
                if len(left) + len(right) > MAX_VALUE:
                    raise Refused(f"a value longer than {MAX_VALUE:,} characters (the grader's limit)")
                return left + right
        if isinstance(op, ast.Mult):
            if ints:
                return left * right
            seq, n = (left, right) if isinstance(right, int) else (right, left)
            if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and not isinstance(n, bool):
                if len(seq) * max(n, 0) > MAX_VALUE:
                    raise Refused(f"a value longer than {MAX_VALUE:,} characters (the grader's limit)")
                return seq * n
        if ints:
            if isinstance(op, ast.Sub):
                return left - right
            if isinstance(op, ast.BitXor):
                return left ^ right
            if isinstance(op, ast.BitAnd):
                return left & right
            if isinstance(op, ast.BitOr):
                return left | right
            if isinstance(op, (ast.Mod, ast.FloorDiv)) and right != 0:
                return left % right if isinstance(op, ast.Mod) else left // right
        raise Refused(f"`{type(op).__name__}` of {type(left).__name__} and {type(right).__name__}")

    def _subscript(self, node: ast.Subscript, env: dict[str, Any]) -> Any:
        value = self.fold(node.value, env)
        if not isinstance(value, (str, bytes, list, tuple)):
            raise Refused("indexing something other than text or a list")
        index = node.slice
        if isinstance(index, ast.Slice):
            bounds = [self.fold(b, env) if b is not None else None for b in (index.lower, index.upper, index.step)]
            if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds) or bounds[2] == 0:
                raise Refused("a slice with bounds other than integers")
            return value[slice(*bounds)]
        i = self.fold(index, env)
        if not isinstance(i, int) or isinstance(i, bool) or not -len(value) <= i < len(value):
            raise Refused("an index the grader cannot fold")
        return value[i]

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp, env: dict[str, Any]) -> list[Any]:
        if len(node.generators) != 1:
            raise Refused("a comprehension of more than one loop")
        gen = node.generators[0]
        if gen.is_async or not isinstance(gen.target, ast.Name):
            raise Refused("a comprehension the grader does not fold")
        out = []
        for item in _seq(self.fold(gen.iter, env)):
            inner = {**env, gen.target.id: item}
            keep = True
            for cond in gen.ifs:
                test = self.fold(cond, inner)
                if not isinstance(test, (int, str, bytes)):
                    raise Refused("a comprehension's condition the grader cannot fold")
                keep = keep and bool(test)
            if keep:
                out.append(self.fold(node.elt, inner))
        return out

    def _callee(self, func: ast.expr) -> str | None:
        """The dotted name a call reaches through the student's imports (`b64.b64decode` -> base64.b64decode)."""
        if isinstance(func, ast.Name):
            path = self.names.module_path(func.id)
            if path is None and func.id in BUILTIN_NAMES and self.names.builtin(func.id):
                return func.id
            return path
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name):
                # __import__('base64').b64decode
                call = func.value
                if call.func.id == "__import__" and len(call.args) == 1 and not call.keywords:
                    module = self.fold(call.args[0])
                    return f"{module}.{func.attr}" if isinstance(module, str) and module in MODULES else None
            base = self._callee(func.value)
            return f"{base}.{func.attr}" if base else None
        return None

    def _call(self, node: ast.Call, env: dict[str, Any]) -> Any:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise Refused("a call with * or ** arguments")
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in METHODS:
            path = self._callee(func)
            if path not in DECODERS:  # a method of a folded value (`"...".decode()`, `sep.join(...)`)
                if (
                    func.attr == "fromhex"
                    and isinstance(func.value, ast.Name)
                    and func.value.id in ("bytes", "bytearray")
                    and self.names.builtin(func.value.id)
                ):
                    return _fromhex(*self._args(node, env))
                target = self.fold(func.value, env)
                return METHODS[func.attr](target, *self._args(node, env))
        path = self._callee(func)
        if path in DECODERS:
            try:
                return DECODERS[path](*self._args(node, env))
            except Refused:
                raise
            except (ValueError, TypeError, LookupError, zlib.error, lzma.LZMAError, OSError, EOFError) as err:
                raise Refused(f"`{path}` failed on its argument ({type(err).__name__})")
        if path in BUILTINS:
            return BUILTINS[path](*self._args(node, env))
        if path == "map" and len(node.args) == 2 and isinstance(node.args[0], ast.Name):
            if node.args[0].id in MAPPED and self.names.builtin(node.args[0].id):
                return [MAPPED[node.args[0].id](i) for i in _seq(self.fold(node.args[1], env))]
        shown = path or (
            ast.unparse(func)[:60] if isinstance(func, (ast.Name, ast.Attribute)) else "a computed function"
        )
        raise Refused(f"a call of `{shown}`, which is not one of the decoders the grader reads")

    def _args(self, node: ast.Call, env: dict[str, Any]) -> list[Any]:
        if node.keywords and not all(
            k.arg in ("encoding", "errors", "altchars", "validate", "wbits") for k in node.keywords
        ):
            raise Refused("a call with keyword arguments the grader does not read")
        return [self.fold(a, env) for a in node.args] + [self.fold(k.value, env) for k in node.keywords]


def _method_decode(value: Any, encoding: Any = "utf-8", errors: Any = "strict") -> str:
    if not isinstance(value, (bytes, bytearray)) or not isinstance(encoding, str) or errors != "strict":
        raise Refused("`.decode` of something other than bytes, or with an error handler")
    if encoding.lower() not in TEXT_ENCODINGS:
        raise Refused(f"`.decode` with {encoding[:30]!r}, which is not a text encoding the grader reads")
    try:
        return bytes(value).decode(encoding.lower())
    except UnicodeDecodeError:
        raise Refused(f"bytes that are not {encoding[:30]} text") from None


def _method_encode(value: Any, encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
    if not isinstance(value, str) or not isinstance(encoding, str) or errors != "strict":
        raise Refused("`.encode` of something other than text, or with an error handler")
    if encoding.lower() not in TEXT_ENCODINGS:
        raise Refused(f"`.encode` with {encoding[:30]!r}, which is not a text encoding the grader reads")
    try:
        return value.encode(encoding.lower())
    except UnicodeEncodeError:
        raise Refused(f"text that is not {encoding[:30]}") from None


def _method_join(sep: Any, items: Any) -> Any:
    return _Folder._joined(sep, _seq(items))


def _method_replace(value: Any, old: Any, new: Any, *count: Any) -> Any:
    if not (type(value) is type(old) is type(new)) or not isinstance(value, (str, bytes)) or count:
        raise Refused("`.replace` the grader does not fold")
    grows = value.count(old) * max(len(new) - len(old), 0) if old else (len(value) + 1) * len(new)
    if len(value) + grows > MAX_VALUE:
        raise Refused(f"a value longer than {MAX_VALUE:,} characters (the grader's limit)")
    return value.replace(old, new)


def _text_method(name: str) -> Callable[..., Any]:
    def call(value: Any, *args: Any) -> Any:
        if not isinstance(value, (str, bytes)) or not all(type(a) is type(value) for a in args) or len(args) > 1:
            raise Refused(f"`.{name}` the grader does not fold")
        return getattr(value, name)(*args)

    return call


def _fromhex(text: Any) -> bytes:
    if not isinstance(text, str):
        raise Refused("bytes.fromhex of something other than text")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise Refused("bytes.fromhex failed on its argument") from None


METHODS: dict[str, Callable[..., Any]] = {
    "decode": _method_decode,
    "encode": _method_encode,
    "join": _method_join,
    "replace": _method_replace,
    "strip": _text_method("strip"),
    "lstrip": _text_method("lstrip"),
    "rstrip": _text_method("rstrip"),
    "lower": _text_method("lower"),
    "upper": _text_method("upper"),
    "fromhex": _fromhex,
}


def _parse(text: str) -> ast.Module | None:
    if len(text) > MAX_SOURCE:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _runner(node: ast.AST, names: _Names) -> str | None:
    """'exec', 'eval' or 'compile' if `node` calls one of them, else None (`_runner_of`)."""
    if not isinstance(node, ast.Call):
        return None
    return _runner_of(node.func, names)


def _runner_of(func: ast.expr, names: _Names, depth: int = 0) -> str | None:
    """'exec', 'eval' or 'compile' if the expression `func` is one of them, by a way the grader names:
    the builtin's own name (the student binds it nowhere), an attribute of the module `builtins`
    (imported under any name) or of `__builtins__`, a name imported from `builtins`, or a name bound
    once to one of these (`run = exec`); anything else is not one of them."""
    if depth > MAX_ALIASES:
        return None
    if isinstance(func, ast.Name):
        if func.id in RUNNERS and names.builtin(func.id):
            return func.id
        path = names.module_path(func.id)
        if path is not None:
            module, _, attr = path.rpartition(".")
            return attr if module == "builtins" and attr in RUNNERS else None
        value = names.value(func.id)
        return _runner_of(value, names, depth + 1) if value is not None else None
    if isinstance(func, ast.Attribute) and func.attr in RUNNERS and isinstance(func.value, ast.Name):
        owner = func.value.id
        if names.module_path(owner) == "builtins" or (owner in ("builtins", "__builtins__") and names.builtin(owner)):
            return func.attr
    return None


def _sites(tree: ast.Module, names: _Names) -> list[tuple[int, str, ast.Call]]:
    """(line, runner, call) of each exec/eval/compile call; a compile inside an exec counts once."""
    inner: set[int] = set()
    found = []
    for node in ast.walk(tree):
        runner = _runner(node, names)
        if runner and id(node) not in inner and isinstance(node, ast.Call):
            found.append((getattr(node, "lineno", 0), runner, node))
            for arg in node.args[:1]:
                if _runner(arg, names) == "compile":
                    inner.add(id(arg))
    return sorted(found, key=lambda f: f[0])


def _decode_call(call: ast.Call, folder: _Folder, names: _Names) -> tuple[str | None, str]:
    """(the text the call runs, '') or (None, why not)."""
    if not call.args:
        return None, "it has no argument the grader can read"
    arg = call.args[0]
    if _runner(arg, names) == "compile" and isinstance(arg, ast.Call):
        if not arg.args:
            return None, "its compile(...) has no argument the grader can read"
        arg = arg.args[0]
    try:
        value = folder.fold(arg)
    except Refused as why:
        return None, str(why)
    except (RecursionError, MemoryError, OverflowError):
        return None, "too deep or too large to decode"
    except Exception as err:  # an allowed decoder refusing its argument (chr(-1), a bad padding...)
        return None, f"a decoder failed on its argument ({type(err).__name__})"
    if isinstance(value, (bytes, bytearray)):
        try:
            value = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None, "it runs bytes that are not UTF-8 text"
    if not isinstance(value, str):
        return None, f"its argument folds to {type(value).__name__}, not to code"
    return value, ""


def decode_runs(sources: list[str], labels: list[str] | None = None) -> list[Site]:
    """Every exec/eval/compile call in `sources` (the student's cells), with what it runs as far as the
    grader can decode it statically, nested decodings after the call that holds them (level + 1)."""
    deadline = time.monotonic() + MAX_SECONDS
    trees: list[tuple[str, ast.Module]] = []
    unread: list[Site] = []
    for n, text in enumerate(sources):
        label = labels[n] if labels and n < len(labels) else f"cell {n + 1}"
        tree = _parse(text)
        if tree is not None:
            trees.append((label, tree))
        elif len(text) > MAX_SOURCE and any(r in text for r in RUNNERS):
            unread.append(Site(label, why=f"the cell is longer than {MAX_SOURCE:,} characters (the grader's limit)"))
    names = _Names.of([t for _, t in trees])
    out: list[Site] = unread[:MAX_SITES]

    def visit(where: str, tree: ast.Module, names: _Names, level: int) -> None:
        for line, runner, call in _sites(tree, names):
            if len(out) >= MAX_SITES:
                return
            site = Site(f"{where}, line {line}: {runner}(...)", level=level)
            here = f"{where}, line {line}"
            out.append(site)
            if time.monotonic() > deadline:
                site.why = f"more than {MAX_SECONDS:g} s to decode (the grader's limit)"
                continue
            site.text, site.why = _decode_call(call, _Folder(names, deadline), names)
            if site.text is None:
                continue
            inner = _parse(site.text)
            if inner is None:
                continue
            if level + 1 >= MAX_LEVELS:
                if _sites(inner, names):
                    why = f"decoded texts nested more than {MAX_LEVELS} levels deep (the grader's limit)"
                    out.append(Site(f"{here} → decoded text", level=level + 1, why=why))
                continue
            visit(f"{here} → decoded text", inner, _Names.of([inner], parent=names), level + 1)

    for where, tree in trees:
        visit(where, tree, names, 0)
    return out
