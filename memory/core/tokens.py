"""Token counting for budgets: a deterministic, dependency-free approximation.

Counts each Chinese character, each run of letters/digits and each punctuation
mark as one token. Real tokenizers differ by model; pass your own callable as
``token_counter=`` wherever a budget is applied.
"""

from __future__ import annotations

import re
from typing import Callable

TokenCounter = Callable[[str], int]

_TOKEN = re.compile(r"[\u4e00-\u9fff]|[^\W\u4e00-\u9fff]+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Approximate token count of ``text`` (see module docstring)."""
    return len(_TOKEN.findall(text))
