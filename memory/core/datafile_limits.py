"""Limits a small data file is held to before a parser sees it: its size, its lines, how deep it nests, how many parts a
dotted key has and how long a number is, checked by one linear scan of the text.

The settings file (an operating point, memory.eval.operating_point) is a few hundred bytes written by a study, but the
lab takes it from a participant's upload and the CLI and the MCP server from a path: it is outside input. The
standard parsers are not built for hostile text. ``tomllib`` takes time quadratic in the parts of a dotted key
(``a.a.a... = 1``: 64 KB, 24 s of CPU) and recurses once per level of ``[[[...`` or ``{a={a=...`` (a
RecursionError); both parsers turn a 5,000-digit literal into a ValueError, and ``repr`` of a long integer fails
later, in the middle of an error message. :func:`check_toml_text` and :func:`check_json_text` refuse such text first,
in time linear in its length, with a one-line :class:`~memory.core.errors.DataFileError` naming the file and the line::

    point.toml: line 3: a dotted key of 4,000 parts (at most 16)

The scanners know the strings and comments of their format (a ``[`` inside a string is text, not nesting), so a file
that passes holds nothing deeper, longer or more dotted than :class:`TextLimits` allows wherever a parser would look.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.core.errors import DataFileError
from memory.core.safefile import shown


@dataclass(frozen=True)
class TextLimits:
    """The bounds a file's text is held to (every one is checked before the parser runs)."""

    max_bytes: int = 64 * 1024
    """The file's size in bytes (of its UTF-8 text when given text)."""
    max_lines: int = 1000
    max_depth: int = 16
    """Arrays and tables (objects) open at once: ``[[1]]`` is 2 deep; a TOML table header counts as its brackets."""
    max_key_parts: int = 16
    """Parts of one dotted key (``a.b.c`` has 3); TOML only."""
    max_word_chars: int = 64
    """Characters of one number literal, and (TOML) of one bare key or other bare word."""


SETTINGS_LIMITS = TextLimits()
"""The limits of a settings (operating-point) file: 64 KB, 1,000 lines, 16 levels, 16 key parts, 64-character
numbers. A file a study writes is under 1 KB, 30 lines, 2 levels, 1-part keys and 20-character numbers."""


def check_size(size: int, where: str, limits: TextLimits = SETTINGS_LIMITS, *, unit: str = "bytes") -> None:
    """Refuse ``size`` bytes over ``limits.max_bytes`` (call it before reading or decoding anything)."""
    if size > limits.max_bytes:
        raise DataFileError(f"{shown(where)}: {size:,} {unit}; at most {limits.max_bytes:,} bytes")


# TOML: the tokens that matter outside strings and comments. Multi-line strings close at the first unescaped triple
# quote and take up to two more quotes (TOML's ``""""`` rule); basic strings end at a quote or a line break.
_TOML_TOKEN = re.compile(r'''
    (?P<nl>\n)
  | (?P<ws>[ \t\r]+)
  | (?P<comment>\#[^\n]*)
  | (?P<mlb>"""(?:[^"\\]+|\\.|"(?!""))*(?:"""(?:""|")?)?)
  | (?P<mll>\'\'\'(?:[^']+|'(?!''))*(?:\'\'\'(?:''|')?)?)
  | (?P<str>"(?:[^"\\\n]+|\\[^\n])*"?|'[^'\n]*'?)
  | (?P<word>[A-Za-z0-9_+\-]+)
  | (?P<dot>\.)
  | (?P<open>[\[{])
  | (?P<close>[\]}])
  | (?P<other>.)
''', re.VERBOSE | re.DOTALL)
_JSON_TOKEN = re.compile(r'''
    (?P<nl>\n)
  | (?P<str>"(?:[^"\\\n]+|\\[^\n])*"?)
  | (?P<word>[0-9.eE+\-]+)
  | (?P<open>[\[{])
  | (?P<close>[\]}])
  | (?P<other>[^\n"0-9.eE+\-\[\]{}]+)
''', re.VERBOSE | re.DOTALL)


def check_toml_text(text: str, where: str, limits: TextLimits = SETTINGS_LIMITS) -> None:
    """Refuse TOML text past ``limits`` (a DataFileError ``WHERE: line N: ...``), in one pass linear in its length."""
    _scan(text, shown(where), limits, _TOML_TOKEN, toml=True)


def check_json_text(text: str, where: str, limits: TextLimits = SETTINGS_LIMITS) -> None:
    """Refuse JSON text past ``limits`` (size, lines, nesting, number length), in one pass linear in its length."""
    _scan(text, shown(where), limits, _JSON_TOKEN, toml=False)


def _scan(text: str, where: str, limits: TextLimits, token: re.Pattern[str], *, toml: bool) -> None:
    if len(text) > limits.max_bytes:  # each character is at least one byte: refused without encoding it
        check_size(len(text), where, limits, unit="characters")
    if len(text) * 4 > limits.max_bytes:  # UTF-8 takes at most 4 bytes a character
        check_size(len(text.encode("utf-8", "surrogatepass")), where, limits)
    lines = text.count("\n") + 1
    if lines > limits.max_lines:
        raise DataFileError(f"{where}: {lines:,} lines; at most {limits.max_lines:,}")
    line = 1
    depth = 0
    parts = 0  # parts of the dotted key being read (TOML): words and strings joined by dots
    dots = 0
    chain_line = 1

    def refuse(at: int, reason: str) -> DataFileError:
        return DataFileError(f"{where}: line {at}: {reason}")

    def end_chain() -> None:
        nonlocal parts, dots
        if parts + dots > 1 and max(parts, dots + 1) > limits.max_key_parts:
            raise refuse(chain_line, f"a dotted key of {max(parts, dots + 1):,} parts (at most {limits.max_key_parts})")
        parts = dots = 0

    for m in token.finditer(text):
        kind = m.lastgroup
        if kind == "ws":
            continue
        if kind == "word":
            size = m.end() - m.start()
            if size > limits.max_word_chars:
                first = text[m.start()]
                what = "a number" if first.isdigit() or first in "+-." or not toml else "a bare key or word"
                raise refuse(line, f"{what} of {size:,} characters (at most {limits.max_word_chars})")
        if not toml:
            if kind == "open":
                depth += 1
                if depth > limits.max_depth:
                    raise refuse(line, f"nested more than {limits.max_depth} levels deep")
            elif kind == "close":
                depth = max(depth - 1, 0)
            elif kind == "nl":
                line += 1
            elif kind == "str":
                line += m.group().count("\n")
            continue
        if kind in ("word", "str"):
            if not parts and not dots:
                chain_line = line
            parts += 1
            continue
        if kind == "dot":
            if not parts and not dots:
                chain_line = line
            dots += 1
            continue
        end_chain()
        if kind == "open":
            depth += 1
            if depth > limits.max_depth:
                raise refuse(line, f"nested more than {limits.max_depth} levels deep")
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "nl":
            line += 1
        elif kind in ("mlb", "mll"):
            line += m.group().count("\n")
    if toml:
        end_chain()
