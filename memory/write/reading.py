"""Read one self-contained statement (English or Chinese) into subject, attribute, value and qualifiers.

``read_statement("On weekends the user wakes up at 9:00.")`` gives subject ``user``,
attribute ``verb:wake up``, value ``T0900``, context ``weekend``. The adjudicator
compares two readings; the extractor uses them for categories and tags. Rules are
ordered from specific (diet, residence, job, budget, deadline, ...) to generic
(``X is Y``, ``user VERB object``); a statement no rule reads keeps an empty attribute
and is compared by its content words.

The readers themselves are per language (memory/write/lang/en.py, zh.py); this module decides which reads a
statement (:func:`memory.write.lang.language_of`) and memoises the reading.
"""

from __future__ import annotations

from memory.core.textcaches import text_cache
from memory.write.lang import language_of
from memory.write.lang.base import Reading

__all__ = ["Reading", "read_statement"]


def read_statement(text: str) -> Reading:
    """Read one statement (no splitting into clauses: see :mod:`memory.write.extract` for that)."""
    return _read(text.strip())


@text_cache(maxsize=8192)
def _read(text: str) -> Reading:
    return language_of(text).read(text)
