"""Process-wide memos keyed by message or statement text, and the one call that empties them all.

The write path memoises what it works out from a text (a message's identity, a statement's reading, its change
markers and measures): a bulk write asks for each many times. Those memos hold users' texts, so an erasure must not
leave them there: each memo registers here (:func:`text_cache`), and :meth:`memory.MemoryManager.erase_user` calls
:func:`clear_text_caches` after its deletes. A memo is emptied whole (an ``lru_cache`` cannot drop one key); what the
other users lose is a recomputation.
"""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import Any, Callable, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
_MEMOS: list[Any] = []
_LOCK = threading.Lock()


def text_cache(maxsize: int) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)``, registered so that :func:`clear_text_caches` empties it."""
    def wrap(fn: F) -> F:
        memo = lru_cache(maxsize=maxsize)(fn)
        with _LOCK:
            _MEMOS.append(memo)
        return memo  # type: ignore[return-value]
    return wrap


def clear_text_caches() -> int:
    """Empty every registered memo; how many entries they held."""
    with _LOCK:
        memos = list(_MEMOS)
    held = 0
    for memo in memos:
        held += memo.cache_info().currsize
        memo.cache_clear()
    return held


def cached_texts() -> int:
    """How many entries the registered memos hold now."""
    with _LOCK:
        return sum(memo.cache_info().currsize for memo in _MEMOS)


class TextMemo:
    """A bounded dict memo (oldest entry dropped first) that callers fill themselves, for answers computed in batches
    (an ``lru_cache`` can only be filled by calling its function). Registered like :func:`text_cache`'s memos."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: dict[Any, Any] = {}
        self._lock = threading.Lock()
        with _LOCK:
            _MEMOS.append(self)

    def get(self, key: Any) -> Any:
        with self._lock:
            return self._data.get(key)

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data.pop(key, None)
            self._data[key] = value
            while len(self._data) > self.maxsize:
                self._data.pop(next(iter(self._data)))

    def cache_info(self) -> Any:
        from types import SimpleNamespace

        with self._lock:
            return SimpleNamespace(currsize=len(self._data))

    def cache_clear(self) -> None:
        with self._lock:
            self._data.clear()
