"""The lab's embedders, each loaded once per process in a background thread.

``start(name)`` begins loading (at most once per process and name) and returns at once;
``app.py`` calls it for the default embedder on every run, so the model loads while the
first page draws instead of blocking it. ``ready(name)`` says whether it has loaded and
``get(name)`` waits for it. A load that fails keeps its error (``get`` raises it), so a
missing model is reported, not retried on every rerun. Each loaded embedder remembers the vectors of
the texts it has embedded (:class:`RememberingEmbedder`), so a room of labs built from one scenario runs
the model once per text.

Once a model has loaded, everything alive in the process is frozen out of the garbage collector's reach
(``gc.freeze``): Streamlit runs a full collection after every script run (``runner.postScriptGC``), and with
a model's half a million objects in the heap each one cost about 0.3 s of CPU, for every rerun of every
participant (measured: ``gc.collect(2)`` 0.29 s before, under 1 ms after). Frozen objects are never
collected, so a reference cycle alive at that moment and dropped later stays in memory; objects without
cycles are freed by their reference counts as before, and everything made after the freeze is collected.

This module never imports streamlit: the page-side waiting (a status element and a poll)
is in :mod:`lab.engine`.
"""

from __future__ import annotations

import gc
import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from memory import Embedder, make_embedder

from .memo import TextMemo

log = logging.getLogger(__name__)

Loader = Callable[[str], Embedder]

loader: Loader = make_embedder
"""How a name becomes an embedder. Tests of the loading page swap in a gated stand-in here (and say so)."""

_LOADS: dict[str, Future[Embedder]] = {}
_LOCK = threading.Lock()

MEMO_TEXTS = 20_000
"""Texts whose vectors each embedder remembers (about 1.5 kB each at 384 dimensions: 30 MB at most per model)."""


class RememberingEmbedder:
    """An embedder that remembers the vector of every text it has embedded (:class:`lab.memo.TextMemo`).

    Every lab of a room starts from the same scenario, the Dedup page embeds the same pairs and participants ask
    the lesson's queries: the model runs once per text per process, not once per participant. The memo holds
    participants' texts, so an erasure takes them out (the memo is in the library's registry of text caches, which
    ``erase_user`` walks; :func:`forget_texts` for texts the store no longer holds). A text is embedded alone or in a
    batch by the wrapped embedder; its vector is the same up to float rounding either way."""

    def __init__(self, inner: Embedder, maxsize: int = MEMO_TEXTS) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.memo: TextMemo[np.ndarray] = TextMemo(maxsize, name=f"lab embedder vectors ({inner.name})")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self.memo.get(text) for text in texts]
        missing = list(dict.fromkeys(text for text, row in zip(texts, rows) if row is None))
        if not missing:
            return np.stack(rows) if rows else self.inner.embed([])  # type: ignore[arg-type]
        fresh = dict(zip(missing, np.array(self.inner.embed(missing), dtype=np.float32)))
        self.memo.update(fresh.items())
        return np.stack([fresh[text] if row is None else row for text, row in zip(texts, rows)])

    def __getattr__(self, name: str) -> Any:  # anything else the wrapped embedder offers
        return getattr(self.inner, name)


def start(name: str) -> Future[Embedder]:
    """Start loading ``name`` in a daemon thread unless it is loading or loaded; the load's future."""
    with _LOCK:
        future = _LOADS.get(name)
        if future is not None:
            return future
        future = _LOADS[name] = Future()
        load = loader
    threading.Thread(target=_load, args=(name, load, future), name=f"lab-model-{name}", daemon=True).start()
    return future


def _load(name: str, load: Loader, future: Future[Embedder]) -> None:
    log.info("loading embedder %s in the background", name)
    try:
        embedder: Embedder = RememberingEmbedder(load(name))
    except BaseException as exc:  # kept in the future; get() raises it where a page can show it
        log.exception("embedder %s failed to load", name)
        future.set_exception(exc)
    else:
        log.info("embedder %s ready", name)
        gc.freeze()
        future.set_result(embedder)


def ready(name: str) -> bool:
    """Whether ``name`` has finished loading (successfully or not); starts the load if needed."""
    return start(name).done()


def get(name: str, timeout: float | None = None) -> Embedder:
    """The embedder, waiting for its load (started here if needed); re-raises a failed load's error."""
    return start(name).result(timeout)


def forget_texts(texts: Iterable[str]) -> int:
    """Take every text containing one of ``texts`` out of the loaded embedders' memos (an erasure); how many."""
    with _LOCK:
        loads = list(_LOADS.values())
    texts = list(texts)
    loaded = [future.result() for future in loads if future.done() and future.exception() is None]
    return sum(embedder.memo.forget(texts) for embedder in loaded if isinstance(embedder, RememberingEmbedder))


def forget() -> None:
    """Drop every load (tests only: the next ``start`` loads again through the current ``loader``)."""
    with _LOCK:
        _LOADS.clear()
