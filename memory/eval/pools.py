"""Scored pools in :func:`memory.runtime.recall.govern`'s composite order, so a sweep setting is a slice.

``govern`` keeps, of a question's candidates at or above the threshold, the ``top_k`` best by
(composite score, similarity, memory id), then fills the token budget in that order. Sorting a
pool once by that key, per decay rate, makes every (threshold, top_k) setting's survivors the
first ``top_k`` of the candidates at or above the threshold; ``govern`` run on those alone returns
the same governed hits as on the whole pool (tests/test_study.py checks it), so a setting costs
``top_k`` candidates a question instead of the whole pool. Only ``governed`` is the same: the
blind list and the drop reasons of a cut pool are not studied.

The composite score is computed as :func:`memory.runtime.recall.score_parts` computes it: the recency and
importance parts come from ``score_parts`` itself (once per record and query time: they do not
depend on the similarity), and ``alpha * similarity + recency_part + importance_part`` is added in
the same order in float64, so every score is the same number ``govern`` computes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from memory.core.config import MemoryConfig
from memory.runtime.recall import Candidates, score_parts
from memory.core.schema import MemoryRecord


class CompositePool:
    """One question's governed pool, sorted best first by ``govern``'s key for one decay rate."""

    def __init__(self, candidates: Candidates, pairs: list[tuple[MemoryRecord, float]], similarities: np.ndarray) -> None:
        self.candidates = candidates
        self.pairs = pairs
        """(record, similarity), best composite score first."""
        self.similarities = similarities
        """The pairs' similarities, in the same order."""

    def top(self, threshold: float, top_k: int) -> Candidates:
        """The candidates ``govern`` ranks in its top ``top_k`` at ``threshold``, in that order."""
        kept = [self.pairs[i] for i in np.flatnonzero(self.similarities >= threshold)[:top_k]]
        c = self.candidates
        return Candidates(c.query, c.tenant_id, c.user_id, c.as_of, kept, kept)


def composite_pools(pools: Sequence[Candidates], config: MemoryConfig) -> list[CompositePool]:
    """Every pool's active candidates in ``govern``'s order under ``config`` (its weights and decay rate)."""
    ids = sorted({r.memory_id for c in pools for r, _ in c.active})
    id_rank = {m: i for i, m in enumerate(ids)}
    # per record object and query time: (recency part, importance part, place in memory id order)
    cache: dict[tuple[int, float], tuple[float, float, int]] = {}
    out = []
    for c in pools:
        rows = []
        for r, _ in c.active:
            key = (id(r), c.as_of)  # the records stay referenced by ``pools`` while the cache lives
            row = cache.get(key)
            if row is None:
                p = score_parts(r, 0.0, config, c.as_of)
                row = cache[key] = (p.recency_part, p.importance_part, id_rank[r.memory_id])
            rows.append(row)
        sims = np.array([s for _, s in c.active], dtype=np.float64)
        rest = np.array(rows, dtype=np.float64).reshape(len(rows), 3)
        scores = config.alpha * sims + rest[:, 0] + rest[:, 1]
        order = np.lexsort((rest[:, 2], -sims, -scores))  # -score, then -similarity, then memory id
        out.append(CompositePool(c, [c.active[i] for i in order], sims[order]))
    return out
