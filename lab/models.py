"""The lab's embedders, each loaded once per process in a background thread.

``start(name)`` begins loading (at most once per process and name) and returns at once;
``app.py`` calls it for the default embedder on every run, so the model loads while the
first page draws instead of blocking it. ``ready(name)`` says whether it has loaded and
``get(name)`` waits for it. A load that fails keeps its error (``get`` raises it), so a
missing model is reported, not retried on every rerun.

This module never imports streamlit: the page-side waiting (a status element and a poll)
is in :mod:`lab.engine`.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Callable

from memory import Embedder, make_embedder

log = logging.getLogger(__name__)

Loader = Callable[[str], Embedder]

loader: Loader = make_embedder
"""How a name becomes an embedder. Tests of the loading page swap in a gated stand-in here (and say so)."""

_LOADS: dict[str, Future[Embedder]] = {}
_LOCK = threading.Lock()


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
        embedder = load(name)
    except BaseException as exc:  # kept in the future; get() raises it where a page can show it
        log.exception("embedder %s failed to load", name)
        future.set_exception(exc)
    else:
        log.info("embedder %s ready", name)
        future.set_result(embedder)


def ready(name: str) -> bool:
    """Whether ``name`` has finished loading (successfully or not); starts the load if needed."""
    return start(name).done()


def get(name: str, timeout: float | None = None) -> Embedder:
    """The embedder, waiting for its load (started here if needed); re-raises a failed load's error."""
    return start(name).result(timeout)


def forget() -> None:
    """Drop every load (tests only: the next ``start`` loads again through the current ``loader``)."""
    with _LOCK:
        _LOADS.clear()
