"""libconfig text (the format of OpenAirInterface's `.conf` files): a writer for the renderer and a
reader for the checker.

Only the subset OAI's configs use: groups `{}`, lists `()`, arrays `[]`, strings, integers
(64-bit ones with the `L` suffix), floats and booleans; comments `#`, `//`, `/* */`. The reader
returns plain Python values (dict, list, str, int, float, bool), so `make check-config` can read
a rendered file back exactly as OAI's libconfig will (tests/testbed/ran/oai/test_libconfig.py
compares both with the C library on rendered files).
"""
from __future__ import annotations

import re
from typing import Any

INT32_MAX = 2**31 - 1


class Int64(int):
    """An integer written with libconfig's 64-bit suffix (`12345678L`): OAI reads such keys
    (e.g. `nr_cellid`) with config_setting_lookup_int64."""


class LibconfigError(ValueError):
    """Text that is not valid libconfig (the message names line and column)."""


_NAME = re.compile(r"^[A-Za-z*][-A-Za-z0-9_*]*$")


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{int(value)}L" if isinstance(value, Int64) or abs(value) > INT32_MAX else str(int(value))
    if isinstance(value, float):
        text = repr(value)
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    raise TypeError(f"libconfig cannot hold a {type(value).__name__}: {value!r}")


def _value(value: Any, indent: int) -> str:
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        return "{\n" + "".join(_setting(k, v, indent + 1) for k, v in value.items()) + pad + "}"
    if isinstance(value, (list, tuple)):
        if not value:
            return "( )"
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
            return "[ " + ", ".join(_scalar(x) for x in value) + " ]"      # array: scalars of one kind
        inner = ",\n".join("  " * (indent + 1) + _value(x, indent + 1) for x in value)
        return "(\n" + inner + "\n" + pad + ")"
    return _scalar(value)


def _setting(name: str, value: Any, indent: int) -> str:
    if not _NAME.match(str(name)):
        raise ValueError(f"libconfig setting name {name!r} is not valid")
    return "  " * indent + f"{name} = {_value(value, indent)};\n"


def dumps(data: dict[str, Any], header: str = "") -> str:
    """The libconfig text of a mapping of top-level settings (header: comment lines, '#'-prefixed)."""
    lines = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return lines + "".join(_setting(k, v, 0) for k, v in data.items())


# --- reader --------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\n]+)
  | (?P<comment>\#[^\n]*|//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<float>[-+]?(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+)
  | (?P<hex>[-+]?0[xX][0-9A-Fa-f]+L{0,2})
  | (?P<int>[-+]?\d+L{0,2})
  | (?P<bool>(?i:true|false)\b)
  | (?P<name>[A-Za-z*][-A-Za-z0-9_*]*)
  | (?P<punct>[=:;,{}()\[\]])
""", re.VERBOSE | re.DOTALL)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise LibconfigError(f"{_where(text, pos)}: unexpected {text[pos]!r}")
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            out.append((kind, m.group(0), pos))
        pos = m.end()
    return out


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            raise LibconfigError(f"unexpected end of file (expected {value or 'a value'})")
        if value is not None and tok[1] != value:
            raise LibconfigError(f"{_where(self.text, tok[2])}: expected {value!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def settings(self, closing: str | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while True:
            tok = self.peek()
            if tok is None or (closing is not None and tok[1] == closing):
                if tok is None and closing is not None:
                    raise LibconfigError(f"unexpected end of file: {closing!r} missing")
                return out
            kind, name, pos = self.take()
            if kind != "name":
                raise LibconfigError(f"{_where(self.text, pos)}: expected a setting name, found {name!r}")
            sep = self.take()
            if sep[1] not in ("=", ":"):
                raise LibconfigError(f"{_where(self.text, sep[2])}: expected '=' after {name}")
            if name in out:
                raise LibconfigError(f"{_where(self.text, pos)}: duplicate setting {name}")
            out[name] = self.value()
            nxt = self.peek()
            if nxt is not None and nxt[1] in (";", ","):
                self.i += 1

    def value(self) -> Any:
        kind, text, pos = self.take()
        if text == "{":
            group = self.settings("}")
            self.take("}")
            return group
        if text in ("(", "["):
            closing = ")" if text == "(" else "]"
            items: list[Any] = []
            while True:
                nxt = self.peek()
                if nxt is not None and nxt[1] == closing:
                    self.i += 1
                    return items
                items.append(self.value())
                nxt = self.peek()
                if nxt is not None and nxt[1] == ",":
                    self.i += 1
        if kind == "string":
            parts = [text]
            while (nxt := self.peek()) is not None and nxt[0] == "string":     # "a" "b" = "ab"
                parts.append(self.take()[1])
            return "".join(bytes(p[1:-1], "utf-8").decode("unicode_escape") for p in parts)
        if kind in ("int", "hex"):
            digits = text.rstrip("L")
            number = int(digits, 16 if kind == "hex" else 10)
            return Int64(number) if text.endswith("L") else number
        if kind == "float":
            return float(text)
        if kind == "bool":
            return text.lower() == "true"
        raise LibconfigError(f"{_where(self.text, pos)}: expected a value, found {text!r}")


def loads(text: str) -> dict[str, Any]:
    """The settings of a libconfig text as nested dicts/lists (LibconfigError if malformed)."""
    return _Parser(text).settings(None)
