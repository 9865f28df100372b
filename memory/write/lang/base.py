"""What the readers of every language share: the reading of a statement (:class:`Reading`), the interface a
language implements (:class:`Language`: memory/write/lang/en.py, zh.py) and the few tables both readers use."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

DEVICE_DOMAINS = ("phone", "computer", "watch")
VALUE_TOKEN_ATTRS = ("budget", "deadline", "count:{g2}", "count:人", "age", "salary")
"""Attributes whose value is the number or date in the match ("been pushed to April 10" -> d0410)."""

@dataclass(frozen=True)
class Reading:
    """What one statement says, in comparable form."""

    text: str
    """The statement as given."""
    language: str
    """``en`` or ``zh``."""
    subject: str = "user"
    """Who or what the statement is about: ``user`` or a noun ("campaign", "team", "活动")."""
    attribute: str = ""
    """Canonical attribute ("residence", "job", "budget", "favourite colour", "verb:use", ...); '' when unread."""
    value: str = ""
    """Normalised value (numbers as n500000, times as t0630, dates as d0630)."""
    context: str = ""
    """Qualifier under which the statement holds ("weekend", "work", "writing go", "手表"); '' when none."""
    negated: bool = False
    """The statement denies its attribute ("is no longer vegetarian", "不再吃素")."""
    changed: bool = False
    """It announces a change ("now", "moved to", "these days", "现在", "换成", "调整为")."""
    ceased: bool = False
    """It says a habit or state ended ("quit coffee", "戒咖啡了"); ``value`` is what ended."""
    single_valued: bool = True
    """A new value of this attribute replaces the old one (a residence) rather than adding to it (a language)."""
    tokens: tuple[str, ...] = ()
    """Content tokens of the statement without subject, context and change markers (for overlap and diffs)."""
    domains: tuple[str, ...] = field(default=())
    """Domain tags of the content (context excluded)."""

    @cached_property
    def values(self) -> frozenset[str]:
        """Number, time and date tokens of the content (n500000, t0630, d0630)."""
        return frozenset(t for t in self.tokens if VALUE_TOKEN.fullmatch(t))


VALUE_TOKEN = re.compile(r"[ntd]\d+")


def read_diet(text: str, rules) -> bool | None:
    """True: eats meat; False: vegetarian; None: the statement is not about diet."""
    for pattern, eats_meat in rules:
        if re.search(pattern, text):
            return eats_meat
    return None


@dataclass(frozen=True)
class Language:
    """One language's reader: what the shared write path (extraction, the rules, the learned judge's features) asks
    of a statement in that language. :func:`memory.write.lang.language_of` decides which, once per statement."""

    name: str
    """``en`` or ``zh`` (:attr:`Reading.language`)."""
    read: Callable[[str], Reading]
    """Read one stripped statement (memory.write.reading.read_statement memoises it)."""
    stand_alone: Callable[[str, str], str]
    """Rewrite a clause to stand alone (first person -> "the user" / "用户", "one" -> the ``topic``)."""
    comma: str
    """What joins two clauses of the language ("， " / ", ")."""
    products: tuple[str, ...]
    """The products a clause may be about (memory.write.lexicon.PRODUCTS_EN / _ZH), in the lexicon's order."""
    departures: tuple[re.Pattern[str], ...]
    """Patterns whose first group is what a statement says is gone (left, sold, 走了, 离职)."""
    surface: Callable[[str], frozenset[str]]
    """A statement's content wording for the rules' overlap (English words, Chinese character pairs)."""
    stems: Callable[[str], frozenset[str]]
    """:attr:`surface` with English words cut to five letters."""
    words: Callable[[str], set[str]]
    """A statement's wording for the learned judge's jaccard (memory.write.features)."""
    units: Callable[[str], set[str]]
    """A statement's wording as units: English words; Chinese characters and character pairs."""
    is_filler: Callable[[str], bool]
    """A pleasantry or acknowledgement, given as its filler key (memory.write.lexicon.filler_key)."""
    is_qualifier: Callable[[str], bool]
    """A leading qualifier that needs the next clause ("When writing Go", "写Go时")."""
    continues: Callable[[str, bool], bool]
    """``(clause, same_sentence)``: the clause needs the one before it for its subject or its thing."""
    is_fragment: Callable[[str], bool]
    """A clause without a predicate ("the black one", "黑色那个")."""
