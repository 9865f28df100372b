"""CSV a spreadsheet opens safely: a text cell a spreadsheet would evaluate is written as text.

A cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is a formula to Excel, LibreOffice and
Google Sheets (``=HYPERLINK(...)``, ``@SUM(...)``, ``-2+3``), and a message, an id or a dataset's name may begin so.
Following OWASP's rule ("CSV injection"), such a text cell is written with a single quote in front, which a spreadsheet
shows as text. Numbers are left as they are (``-0.5`` in a numeric column stays a number): only text is changed.
JSON exports keep the raw text; this is for CSV alone. Every CSV the lab and the CLI write goes through
:func:`csv_bytes` or :func:`write_csv`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""How a cell that a spreadsheet evaluates begins (OWASP)."""

T = TypeVar("T")


def formula_safe(value: T) -> T | str:
    """``value`` as a spreadsheet shows it as text: a string beginning with a :data:`FORMULA_PREFIXES` character gets a
    ``'`` in front; anything else (numbers, None, other text) is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def formula_safe_frame(frame: Any) -> Any:
    """A copy of a pandas DataFrame with every text cell and column name made :func:`formula_safe` (numeric columns,
    and numbers in mixed columns, untouched)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].dtype == object or str(out[column].dtype) in ("string", "str"):
            out[column] = out[column].map(formula_safe)
    return out.rename(columns=lambda name: formula_safe(name) if isinstance(name, str) else name)


def csv_bytes(frame: Any) -> bytes:
    """A DataFrame as UTF-8 CSV (no index, RFC 4180 line ends), every cell :func:`formula_safe`. The ``\r\n`` line
    end also makes the writer quote a cell holding a carriage return, which a reader would otherwise take for the
    end of a row."""
    return formula_safe_frame(frame).to_csv(index=False, lineterminator="\r\n").encode("utf-8")


def write_csv(frame: Any, path: str | Path) -> Path:
    """Write a DataFrame to ``path`` as :func:`csv_bytes` (the parent folder is created); the path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(csv_bytes(frame))
    return path
