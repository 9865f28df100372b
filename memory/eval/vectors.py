"""Every text of a study encoded once, and exact cosines per owner from those vectors.

A study needs one vector per distinct text (memories and questions). Encoding them in one
length-sorted pass, instead of as each write batch and each question group arrives, is what
keeps a study close to the cost of the model itself: a batch is padded to its longest text,
so batches of texts in dataset order process about twice the tokens of length-sorted ones
(bench/study_speed.py measures it).

Typical use::

    vectors = encode_once(texts, embedder)           # text -> unit vector
    manager = MemoryManager(..., embedder=KnownVectors(embedder, vectors))
    sims = cosines(vectors, [q.text for q in questions], [r.content for r in records])
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np

from memory.embed.embedders import Embedder

Progress = Callable[[int, int], None]
CHUNK = 512
"""Texts per embed call: long enough that each call's batches are length-sorted, short enough to report progress."""


def encode_once(
    texts: Iterable[str], embedder: Embedder, *, chunk: int = CHUNK, progress: Progress | None = None,
) -> dict[str, np.ndarray]:
    """Text -> vector for every distinct text, encoded longest first in chunks of ``chunk`` texts.

    The texts are sorted by length (characters, a proxy every embedder understands) across the
    whole set before chunking, so every embed call, and every batch inside it, holds texts of
    similar length. ``progress(done, total)`` counts distinct texts encoded.
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    unique = list(dict.fromkeys(texts))
    order = sorted(range(len(unique)), key=lambda i: -len(unique[i]))
    out: dict[str, np.ndarray] = {}
    for start in range(0, len(order), chunk):
        part = [unique[i] for i in order[start : start + chunk]]
        out.update(zip(part, np.asarray(embedder.embed(part), dtype=np.float32)))
        if progress:
            progress(len(out), len(unique))
    return {t: out[t] for t in unique}


class KnownVectors:
    """An embedder that answers from vectors already computed (same ``name`` and ``dim`` as ``inner``).

    Texts it does not know go to ``inner`` (and are remembered), so it is always correct; ``misses``
    counts them, so a caller can check nothing was encoded twice.
    """

    def __init__(self, inner: Embedder, vectors: dict[str, np.ndarray]) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.vectors = vectors
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        if missing:
            self.misses += len(missing)
            self.vectors.update(zip(missing, np.asarray(self.inner.embed(missing), dtype=np.float32)))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


def cosines(vectors: dict[str, np.ndarray], queries: Sequence[str], texts: Sequence[str]) -> np.ndarray:
    """(len(queries), len(texts)) cosine similarities (higher is more similar), float32.

    Rows are unit vectors (the :class:`Embedder` contract), so the dot product is the cosine;
    exact, unlike an approximate index, and one matrix product per owner.
    """
    if not len(queries) or not len(texts):
        return np.zeros((len(queries), len(texts)), dtype=np.float32)
    q = np.stack([vectors[t] for t in queries])
    m = np.stack([vectors[t] for t in texts])
    return q @ m.T
