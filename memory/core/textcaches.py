"""Every cache of the process that holds users' texts, in one registry that an erasure walks.

The write path memoises what it works out from a text (a message's identity, a statement's reading, its change
markers and measures): a bulk write asks for each many times. The manager keeps its queries' vectors, a chat judge
its answers per pair of statements, the learned judge its statements' vectors, the lab its token counts and its
embedders' vectors. All of them hold users' texts, so an erasure must not leave them there. Each registers here, and
:meth:`memory.MemoryManager.erase_user` calls :func:`forget_texts` with the erased user's texts after its deletes:

* a cache that can tell which of its entries hold a text (a :class:`TextMemo` keyed by the texts themselves) forgets
  those entries and keeps the others (other users lose nothing);
* a cache that cannot tell is emptied whole: an ``lru_cache`` (:func:`text_cache`) cannot list its keys, and a memo
  keyed by texts derived from the user's (the learned judge's lowercased changed spans) cannot match them. What the
  other users lose is a recomputation.

:func:`registered_caches` walks the registry (each cache with its name and :meth:`TextCache.holding`: how many of
its entries hold one of some texts), which the erasure's verification reports as the ``caches`` path and the tests
use to find a cache that was not registered. A memo owned by an object (a manager's query cache, a judge's answers)
is registered weakly: it leaves the registry with its owner.
"""

from __future__ import annotations

import threading
import weakref
from functools import lru_cache
from typing import Any, Callable, Generic, Iterable, Iterator, Protocol, TypeVar

from memory.core.bytesearch import NeedleSearch

F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")
_LOCK = threading.Lock()
_CACHES: list[weakref.ref["TextCache"]] = []
_KEPT: list["TextCache"] = []
"""The adapters of :func:`text_cache`'s memos: module-level functions, alive as long as the process."""


class Texts:
    """Some users' texts, compiled once for the one question every cache is asked: does this entry hold one of them?

    An entry holds a text when its own text contains it (a context holds the messages it was built from), and, for a
    cache whose entries may be pieces of a text (a query quoting part of a message), when it is part of one."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts: tuple[str, ...] = tuple(sorted({t for t in texts if isinstance(t, str) and t}))
        self._search = NeedleSearch(_utf8(t) for t in self.texts) if self.texts else None
        self._joined = "\x00".join(self.texts)

    def __bool__(self) -> bool:
        return bool(self.texts)

    def contained_in(self, held: str) -> bool:
        """Whether ``held`` contains one of the texts."""
        return self._search is not None and bool(self._search.in_bytes(_utf8(held)))

    def part_of(self, held: str) -> bool:
        """Whether ``held`` (not empty) is part of one of the texts."""
        return bool(held) and held in self._joined

    def match(self, held: Iterable[str], *, pieces: bool = False) -> bool:
        """Whether one of ``held`` (an entry's texts) holds one of the texts; with ``pieces``, also is part of one."""
        return any(self.contained_in(h) or (pieces and self.part_of(h)) for h in held)


def as_texts(texts: "Iterable[str] | Texts") -> Texts:
    return texts if isinstance(texts, Texts) else Texts(texts)


class TextCache(Protocol):
    """What the registry asks of a cache."""

    name: str
    """What the cache is, for reports (``learned judge vectors``, ``query embeddings of ws-...``)."""
    tells: bool
    """Whether it can tell which entries hold a text; one that cannot is emptied whole by an erasure."""

    def __len__(self) -> int: ...

    def holding(self, texts: Texts) -> int:
        """How many entries hold one of ``texts`` (every entry, for a cache that cannot tell)."""
        ...

    def forget(self, texts: "Iterable[str] | Texts") -> int:
        """Drop the entries holding one of ``texts`` (every entry, for a cache that cannot tell); how many."""
        ...

    def clear(self) -> int:
        """Empty the cache; how many entries it held."""
        ...


def register(cache: TextCache) -> None:
    """Put a cache in the registry (weakly: it leaves it when nothing else holds it)."""
    with _LOCK:
        _CACHES[:] = [ref for ref in _CACHES if ref() is not None]
        _CACHES.append(weakref.ref(cache))


def registered_caches() -> list[TextCache]:
    """Every live registered cache, oldest registration first."""
    with _LOCK:
        found = [ref() for ref in _CACHES]
    return [cache for cache in found if cache is not None]


def forget_texts(texts: "Iterable[str] | Texts") -> int:
    """What an erasure does: every registered cache drops the entries holding one of ``texts`` (the caches that
    cannot tell are emptied whole); how many entries went."""
    match = as_texts(texts)
    return sum(cache.forget(match) for cache in registered_caches())


def holding_texts(texts: "Iterable[str] | Texts") -> list[tuple[str, int]]:
    """(name, entries) of every registered cache that can tell and holds one of ``texts``: what an erasure's
    verification counts (a cache that cannot tell was emptied whole by the erasure; what it holds after that is
    what was computed since, and it cannot say whose)."""
    match = as_texts(texts)
    found = [(cache.name, cache.holding(match)) for cache in registered_caches() if cache.tells]
    return [(name, n) for name, n in found if n]


def clear_text_caches() -> int:
    """Empty every registered cache whole; how many entries they held (benchmarks that must start cold)."""
    return sum(cache.clear() for cache in registered_caches())


def cached_texts() -> int:
    """How many entries the registered caches hold now."""
    return sum(len(cache) for cache in registered_caches())


class _LruCache:
    """A :func:`text_cache` memo in the registry: it cannot list its keys, so it is emptied whole."""

    tells = False

    def __init__(self, memo: Any, name: str) -> None:
        self.memo = memo
        self.name = name

    def __len__(self) -> int:
        return int(self.memo.cache_info().currsize)

    def holding(self, texts: Texts) -> int:
        return len(self)

    def forget(self, texts: "Iterable[str] | Texts") -> int:
        return self.clear()

    def clear(self) -> int:
        held = len(self)
        self.memo.cache_clear()
        return held


def text_cache(maxsize: int, *, name: str | None = None) -> Callable[[F], F]:
    """``functools.lru_cache(maxsize)``, registered: an erasure empties it whole (:class:`_LruCache`)."""
    def wrap(fn: F) -> F:
        memo = lru_cache(maxsize=maxsize)(fn)
        adapter = _LruCache(memo, name or f"{fn.__module__}.{fn.__qualname__}")
        with _LOCK:
            _KEPT.append(adapter)
        register(adapter)
        return memo  # type: ignore[return-value]
    return wrap


def _own_texts(key: Any) -> tuple[str, ...]:
    """The texts of a key: the key itself, or the texts of a tuple key."""
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple):
        return tuple(k for k in key if isinstance(k, str))
    return ()


class TextMemo(Generic[V]):
    """A bounded memo keyed by text (or by a tuple holding texts), filled by its owner, in the registry.

    At most ``maxsize`` entries (0: none kept); the oldest leaves first, or, with ``lru``, the least recently read
    (a read then takes the lock). ``texts_of`` says which texts a key holds (default: the key, or the texts of a
    tuple key); ``tells=False`` registers a memo keyed by texts derived from the users' (it is emptied whole by an
    erasure); ``pieces`` forgets an entry that is part of an erased text too (a query quoting a message).
    Reads without ``lru`` take no lock (one dict lookup); writes and forgets hold one (several threads share a memo).
    """

    def __init__(self, maxsize: int, *, name: str | None = None, lru: bool = False, tells: bool = True,
                 pieces: bool = False, texts_of: Callable[[Any], tuple[str, ...]] = _own_texts) -> None:
        self.maxsize = maxsize
        self.name = name or type(self).__name__
        self.lru = lru
        self.tells = tells
        self.pieces = pieces
        self._texts_of = texts_of
        self._values: dict[Any, V] = {}
        self._lock = threading.Lock()
        register(self)

    def get(self, key: Any) -> V | None:
        if not self.lru:
            return self._values.get(key)
        with self._lock:
            value = self._values.pop(key, None)
            if value is not None:
                self._values[key] = value
            return value

    def put(self, key: Any, value: V) -> None:
        self.update([(key, value)])

    def update(self, items: Iterable[tuple[Any, V]]) -> None:
        """Remember several entries (each one moves to the newest place)."""
        if not self.maxsize:
            return
        with self._lock:
            for key, value in items:
                self._values.pop(key, None)
                self._values[key] = value
            while len(self._values) > self.maxsize:
                del self._values[next(iter(self._values))]

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[Any]:
        with self._lock:
            return iter(list(self._values))

    def _held(self, texts: Texts) -> list[Any]:
        if not self.tells:
            return list(self._values)
        if not texts:
            return []
        return [key for key in self._values if texts.match(self._texts_of(key), pieces=self.pieces)]

    def holding(self, texts: Texts) -> int:
        with self._lock:
            return len(self._held(texts))

    def forget(self, texts: "Iterable[str] | Texts") -> int:
        """Drop every entry holding one of ``texts`` (every entry if this memo cannot tell); how many were dropped.
        Another user holding the same text just computes it again."""
        match = as_texts(texts)
        with self._lock:
            gone = self._held(match)
            for key in gone:
                del self._values[key]
        return len(gone)

    def clear(self) -> int:
        with self._lock:
            held = len(self._values)
            self._values.clear()
            return held

    # the lru_cache vocabulary, for callers that treat every memo alike
    def cache_info(self) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(currsize=len(self._values))

    def cache_clear(self) -> None:
        self.clear()


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
