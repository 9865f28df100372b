"""Retrieval modes for studies: every question's candidates, scored once, for :func:`recall.govern` to re-rank.

All three modes go through the engine: the dataset is written into a
:class:`MemoryManager` on real Chroma (in memory), and each question's pool is
*every* memory of its (tenant, user), fetched once with the store's isolation and
lifecycle filters. A sweep then re-runs :func:`memory.recall.govern` on these
pools for each (threshold, top_k, decay_rate): nothing is embedded or queried twice.

Modes, and the score that ``govern`` thresholds (``Hit.similarity``):

``dense``
    Cosine similarity of the chosen embedder (``minilm`` or the seed's ``lexical``
    term-frequency embedder), from the Chroma query (higher is more similar).
``lexical``
    BM25 (the ``bm25s`` package, its defaults: Lucene variant, k1=1.5, b=0.75) over
    one index per (tenant, user). Tokens: lower-cased words of two or more
    characters minus ``bm25s``'s English stop words, plus every two-character
    fragment of each run of Chinese characters. Raw BM25 is unbounded, so each
    question's scores are divided by that question's highest score over the user's
    memories: the best match scores 1, memories sharing no word score 0. A
    threshold is therefore *relative* to the best match; when any word overlaps,
    something always scores 1 (so lexical mode rarely leaves a context empty).
``hybrid``
    ``w * cosine + (1 - w) * normalised BM25`` with ``w = HYBRID_WEIGHT = 0.5``:
    an equal-weight convex combination, chosen before measuring and not tuned on
    any data (pass ``hybrid_weight=`` to try others). A memory needs both some
    meaning similarity and some word overlap to rank first; a threshold on the
    combined score keeps part of the dense score's absolute meaning.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Literal

import numpy as np

from .config import MemoryConfig
from .datasets import Dataset, DataQuestion
from .embedders import Embedder, LexicalEmbedder, make_embedder
from .errors import InputError
from .manager import MemoryManager
from .recall import Candidates
from .schema import MemoryRecord, validate_text
from .store import StoreLocation, similarity_from_distance

Mode = Literal["dense", "lexical", "hybrid"]
MODES: tuple[str, ...] = ("dense", "lexical", "hybrid")
HYBRID_WEIGHT = 0.5
"""Weight of the dense cosine in hybrid mode (the rest goes to normalised BM25); not tuned."""
Progress = Callable[[int, int], None]

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_WORD = re.compile(r"(?u)\b\w\w+\b")


def bm25_tokens(text: str) -> list[str]:
    """The lexical mode's tokenizer (see the module docstring)."""
    stop = _stopwords()
    tokens = [t for t in _WORD.findall(_CJK_RUN.sub(" ", text.lower())) if t not in stop]
    for run in _CJK_RUN.findall(text):
        tokens += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return tokens


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@dataclass(frozen=True)
class RankedQuestion:
    """One question and its scored pool."""

    question: DataQuestion
    candidates: Candidates
    """Every memory of the question's owner, scored by the mode, highest first (``hot``: blind pool,
    ``active``: lifecycle-filtered pool); the score is in each pair's second place."""

    @property
    def ranking(self) -> list[str]:
        """Memory ids of the governed pool, best first (ties broken by memory id)."""
        return [r.message_id for r, _ in self.candidates.active]


@dataclass(frozen=True)
class Rankings:
    """Every question of a dataset, scored once by one retrieval mode."""

    dataset: Dataset
    mode: str
    """dense, lexical or hybrid."""
    embedder: str | None
    """The dense embedder's name; None in lexical mode."""
    scorer: str
    """What ``similarity`` means in the candidates, in words."""
    questions: tuple[RankedQuestion, ...]
    pool_missing: int = 0
    """(question, memory) pairs Chroma's approximate index left out of a full-pool query (0 means
    every pool is complete); such memories cannot be recalled, by the study or by the engine."""


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def rank(
    dataset: Dataset,
    *,
    mode: str = "dense",
    embedder: str | Embedder = "minilm",
    hybrid_weight: float = HYBRID_WEIGHT,
    progress: Progress | None = None,
) -> Rankings:
    """Write the dataset into a fresh in-memory MemoryManager and score every question's pool once.

    ``progress(done, total)`` counts memories written, then questions scored.
    """
    check_mode(mode)
    if not 0.0 <= hybrid_weight <= 1.0:
        raise InputError(f"hybrid_weight must be in [0, 1], got {hybrid_weight!r}")
    if not dataset.questions:
        raise InputError(f"{dataset.source}: the dataset has no questions to study")
    if mode == "lexical":
        emb: Embedder = LexicalEmbedder(dim=16)  # vectors unused: the store only holds the records
        emb_name = None
    else:
        emb = make_embedder(embedder) if isinstance(embedder, str) else embedder
        emb_name = embedder if isinstance(embedder, str) else emb.name
    manager = MemoryManager(
        MemoryConfig(), embedder=emb, location=StoreLocation(), workspace=f"study-{uuid.uuid4().hex[:12]}"
    )
    messages = [m.to_message() for m in dataset.memories]
    total = len(messages) + len(dataset.questions)
    report = progress or (lambda done, total: None)
    try:
        manager.add_many(messages, progress=lambda done, _t: report(done, total))
        pools = _Pools(manager)
        lexical = _LexicalIndex(pools) if mode != "dense" else None
        out: dict[str, RankedQuestion] = {}
        for owner, questions in _by_owner(dataset.questions).items():
            if mode == "lexical":
                scored = [[(r, 0.0) for r in pools.hot(owner)] for _ in questions]
            else:
                scored = pools.dense(owner, questions)
            for q, hot in zip(questions, scored):
                if lexical is not None:
                    hot = _mix(hot, lexical.scores(q), 0.0 if mode == "lexical" else hybrid_weight)
                active = pools.active_ids(owner, q.as_of)
                c = Candidates(q.text, q.tenant_id, q.user_id, q.as_of, hot, [p for p in hot if p[0].memory_id in active])
                out[q.id] = RankedQuestion(q, _sorted(c))
                report(len(messages) + len(out), total)
    finally:
        _drop(manager)
    ranked = tuple(out[q.id] for q in dataset.questions)
    scorer = describe_scorer(mode, emb_name, hybrid_weight)
    return Rankings(dataset, mode, emb_name, scorer, ranked, pool_missing=pools.missing)


def describe_scorer(mode: str, embedder: str | None, hybrid_weight: float = HYBRID_WEIGHT) -> str:
    """The score a mode thresholds, in words (for reports)."""
    if mode == "dense":
        return f"cosine similarity ({embedder})"
    if mode == "lexical":
        return "BM25 (bm25s, k1=1.5, b=0.75) / the question's best BM25"
    return f"{hybrid_weight:g} * cosine ({embedder}) + {1 - hybrid_weight:g} * normalised BM25"


def _by_owner(questions) -> dict[tuple[str, str], list[DataQuestion]]:
    groups: dict[tuple[str, str], list[DataQuestion]] = {}
    for q in questions:
        groups.setdefault(q.owner, []).append(q)
    return groups


class _Pools:
    """Each owner's records, read once from the store, and every question's cosine over all of them.

    The dense scores are one matrix product per owner (all of that owner's question vectors against
    the owner's vectors, read once with :meth:`MemoryStore.owner_vectors`): exact, so no candidate is
    missed. Isolation (the owner's own records) and the distance conversion
    (:func:`store.similarity_from_distance`) are the store's own; a test checks the pools equal
    ``MemoryManager.candidates``.
    """

    def __init__(self, manager: MemoryManager) -> None:
        self.manager = manager
        self._hot: dict[tuple[str, str], list[MemoryRecord]] = {}
        self._active: dict[tuple[str, str, float], frozenset[str]] = {}
        self.missing = 0
        """(question, memory) pairs the approximate (HNSW) query did not return; they cannot be recalled."""

    def hot(self, owner: tuple[str, str]) -> list[MemoryRecord]:
        """The owner's records, archive excluded (the blind pool), oldest first."""
        if owner not in self._hot:
            self._hot[owner] = self.manager.records(tenant_id=owner[0], user_id=owner[1], scope="hot")
        return self._hot[owner]

    def active_ids(self, owner: tuple[str, str], as_of: float) -> frozenset[str]:
        """Ids of the owner's recallable records at ``as_of``."""
        key = (*owner, as_of)
        if key not in self._active:
            records = self.manager.records(tenant_id=owner[0], user_id=owner[1], scope="active", as_of=as_of)
            self._active[key] = frozenset(r.memory_id for r in records)
        return self._active[key]

    def dense(self, owner: tuple[str, str], questions: list[DataQuestion]) -> list[list[tuple[MemoryRecord, float]]]:
        """(record, cosine) for every hot record of the owner, per question."""
        records = {r.memory_id: r for r in self.hot(owner)}
        if not records:
            return [[] for _ in questions]
        for q in questions:
            validate_text(q.text, f"question {q.id!r}", max_chars=self.manager.config.max_message_chars)
        vectors = np.asarray(self.manager.embedder.embed([q.text for q in questions]), dtype=np.float32)
        hot, matrix = self.manager.store.owner_vectors(owner[0], owner[1], scope="hot")
        sims = vectors @ matrix.T
        pools = []
        for row in sims:
            order = np.argsort(-row, kind="stable")
            pools.append([(records[hot[j].memory_id], similarity_from_distance(1.0 - float(row[j])))
                          for j in order if hot[j].memory_id in records])
        self.missing += sum(len(records) - len(p) for p in pools)
        return pools


class _LexicalIndex:
    """One BM25 index per (tenant, user), over that user's records in the store (archive excluded)."""

    def __init__(self, pools: _Pools) -> None:
        self.pools = pools
        self._indexes: dict[tuple[str, str], tuple[object, list[str]]] = {}

    def _index(self, owner: tuple[str, str]):
        if owner not in self._indexes:
            import bm25s

            records = self.pools.hot(owner)
            retriever = None
            if records:  # an owner with questions but no memories has nothing to index
                retriever = bm25s.BM25()
                retriever.index([bm25_tokens(r.content) for r in records], show_progress=False)
            self._indexes[owner] = (retriever, [r.memory_id for r in records])
        return self._indexes[owner]

    def scores(self, q: DataQuestion) -> dict[str, float]:
        """memory_id -> BM25 / the best BM25 for this question, in [0, 1]; all 0 when nothing overlaps."""
        retriever, ids = self._index(q.owner)
        tokens = bm25_tokens(q.text)
        raw = np.asarray(retriever.get_scores(tokens), dtype=np.float64) if tokens and ids else np.zeros(len(ids))
        raw = np.maximum(raw, 0.0)  # BM25 is never negative; guard the [0, 1] contract anyway
        best = float(raw.max()) if len(raw) else 0.0
        norm = raw / best if best > 0 else np.zeros_like(raw)
        return {i: float(s) for i, s in zip(ids, norm)}


def _mix(pairs: list[tuple[MemoryRecord, float]], lexical: dict[str, float], weight: float) -> list[tuple[MemoryRecord, float]]:
    """weight * the pair's score + (1 - weight) * the record's normalised BM25."""
    return [(r, weight * s + (1.0 - weight) * lexical.get(r.memory_id, 0.0)) for r, s in pairs]


def _sorted(c: Candidates) -> Candidates:
    """Highest score first, ties by message id, so every run ranks the same way."""
    def key(pair: tuple[MemoryRecord, float]):
        return (-pair[1], pair[0].message_id, pair[0].memory_id)

    return replace(c, hot=sorted(c.hot, key=key), active=sorted(c.active, key=key))


def _drop(manager: MemoryManager) -> None:
    """Delete the study's workspace (best effort: a leftover in-memory collection is harmless)."""
    manager.store.drop()
