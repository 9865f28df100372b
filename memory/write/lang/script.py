"""Which script a text is in: the write path's one test for Chinese characters (any character of the CJK Unified
Ideographs block, U+4E00..U+9FFF), and the few patterns that read both scripts at once. Nothing of memory/write
outside this package tests for Chinese characters itself (tests/test_architecture.py)."""

from __future__ import annotations

import re

HAN = "\u4e00-\u9fff"
"""The Chinese characters, as the body of a character class."""
_HAN_CHAR = re.compile(f"[{HAN}]")
TOKEN = re.compile(rf"[{HAN}]|[a-z0-9']+")
"""A word-level unit of either script: one Chinese character, or an English word or number (memory.write.features)."""
MEASURE = re.compile(rf"([$€£¥])?n\d+(?:\.\d+)?\s*(%|[a-z]+|公斤|千克|公里|千米|小时|分钟|[{HAN}])?")
"""A number token of a normalised statement (memory.write.lexicon.normalize_values_en / _zh) and its unit, in either
script ("n82 kg", "n82公斤")."""


def is_chinese(text: str) -> bool:
    """True when the text holds any Chinese character: a Chinese sentence with an English brand name is Chinese."""
    return bool(_HAN_CHAR.search(text))


def starts_chinese(text: str) -> bool:
    """True when the text opens with a Chinese character."""
    return bool(_HAN_CHAR.match(text))
