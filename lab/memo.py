"""Values computed from texts, memoised process-wide: bounded, shared by every session, and forgettable.

Two memos use it: the token counts of the texts a page shows (:data:`lab.views.cached_count_tokens`) and the
vectors of the texts an embedder has embedded (:class:`lab.models.RememberingEmbedder`). Both hold participants'
texts, so an erasure must be able to take them out (:meth:`TextMemo.forget`).

Reads take no lock (one dict lookup); writes and forgets hold one (several sessions share a memo).
"""

from __future__ import annotations

import threading
from typing import Generic, Iterable, Iterator, TypeVar

V = TypeVar("V")


class TextMemo(Generic[V]):
    """text -> value, at most ``maxsize`` texts (the oldest text leaves first)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._values: dict[str, V] = {}
        self._lock = threading.Lock()

    def get(self, text: str) -> V | None:
        return self._values.get(text)

    def put(self, items: Iterable[tuple[str, V]]) -> None:
        with self._lock:
            self._values.update(items)
            while len(self._values) > self.maxsize:
                del self._values[next(iter(self._values))]

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, text: object) -> bool:
        return text in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    def forget(self, texts: Iterable[str]) -> int:
        """Drop every text that contains one of ``texts`` (a whole context holds the messages it was built from);
        returns how many were dropped. Another session holding the same text just computes it again."""
        fragments = [text for text in set(texts) if text]
        with self._lock:
            gone = [held for held in self._values if any(fragment in held for fragment in fragments)]
            for held in gone:
                del self._values[held]
        return len(gone)
