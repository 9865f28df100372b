"""Helpers every embedder shares, in a module of their own so the embedders (memory/embed/embedders.py) and the
endpoint and precomputed embedders (memory/embed/endpoint.py) both import them and neither imports the other for
them."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def dedupe(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts (first-seen order) and, for each input, the row of its distinct text."""
    index: dict[str, int] = {}
    where = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64, count=len(texts))
    return list(index), where
