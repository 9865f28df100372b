"""Retrieval modes for studies: every question's candidates, scored once, for :func:`recall.govern` to re-rank.

All three modes go through the engine: the dataset is written into a
:class:`MemoryManager` on real Chroma (in memory), and each question's pool is
*every* memory of its (tenant, user), fetched once with the store's isolation and
lifecycle filters. A sweep then re-runs :func:`memory.runtime.recall.govern` on these
pools for each (threshold, top_k, decay_rate): nothing is embedded or queried twice.

Modes, and the score that ``govern`` thresholds (``Hit.similarity``):

``dense``
    Cosine similarity of the chosen embedder (``minilm`` or the seed's ``lexical``
    term-frequency embedder), higher is more similar: exact, from the vectors written
    to the store (every text is encoded once, :mod:`memory.eval.vectors`).
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
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Literal, cast

import numpy as np

from memory.core.config import MemoryConfig
from memory.eval.datasets import Dataset, DataQuestion
from memory.embed.embedders import Embedder, LexicalEmbedder, make_embedder
from memory.core.errors import InputError
from memory.runtime.manager import MemoryManager
from memory.runtime.recall import Candidates
from memory.core.schema import MemoryRecord, validate_text
from memory.store.chroma import StoreLocation
from memory.eval.vectors import KnownVectors, cosines, encode_once

Mode = Literal["dense", "lexical", "hybrid"]
MODES: tuple[str, ...] = ("dense", "lexical", "hybrid")
HYBRID_WEIGHT = 0.5
"""Weight of the dense cosine in hybrid mode (the rest goes to normalised BM25); not tuned."""
Progress = Callable[[int, int], None]
WRITE_BATCH = 512
"""Memories per write into the study's store: fewer, larger Chroma upserts (the vectors are already known)."""

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
    mode: Mode
    """dense, lexical or hybrid."""
    embedder: str | None
    """The dense embedder's name; None in lexical mode."""
    scorer: str
    """What ``similarity`` means in the candidates, in words."""
    questions: tuple[RankedQuestion, ...]
    pool_missing: int = 0
    """(question, memory) pairs left out of a pool; always 0, since pools are scored exactly (kept in
    the study JSON, which reported the approximate index's misses before)."""
    encoded: int = 0
    """Distinct texts (memories and questions) encoded, once each; 0 in lexical mode."""
    encoded_again: int = 0
    """Texts the embedder was asked for after the single pass (0: nothing was encoded twice)."""


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise InputError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return cast(Mode, mode)


def rank(
    dataset: Dataset,
    *,
    mode: Mode = "dense",
    embedder: str | Embedder = "minilm",
    hybrid_weight: float = HYBRID_WEIGHT,
    progress: Progress | None = None,
) -> Rankings:
    """Encode every distinct text once, write the dataset into a fresh in-memory MemoryManager
    and score every question's pool once (exact cosines per owner, no per-question store query).

    ``progress(done, total)`` counts memories (encoded with the questions, or written in lexical
    mode), then questions scored.
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
    config = MemoryConfig()
    messages = [m.to_message() for m in dataset.memories]
    _validate_texts(messages, dataset.questions if mode != "lexical" else (), config.max_message_chars)
    n_mem, total = len(messages), len(messages) + len(dataset.questions)
    report = progress or (lambda done, total: None)
    vectors: dict[str, np.ndarray] = {}
    if mode != "lexical":  # every memory and question text, encoded once, longest first
        texts = [m.content for m in messages] + [q.text for q in dataset.questions]
        vectors = encode_once(texts, emb, progress=lambda done, n: report(n_mem * done // n, total))
    known = KnownVectors(emb, vectors)
    manager = MemoryManager(config, embedder=emb if mode == "lexical" else known, location=StoreLocation(),
                            workspace=f"study-{uuid.uuid4().hex[:12]}")
    try:
        manager.add_many(messages, progress=(lambda done, _t: report(done, total)) if mode == "lexical" else None,
                         batch_size=WRITE_BATCH)
        report(n_mem, total)
        pools = _Pools(manager, vectors)
        lexical = _LexicalIndex(pools) if mode != "dense" else None
        out: dict[str, RankedQuestion] = {}
        for owner, questions in _by_owner(dataset.questions).items():
            records = pools.hot(owner)
            dense = pools.dense(owner, questions) if mode != "lexical" else np.zeros((len(questions), len(records)))
            order_key = _tie_break(records)
            for q, cos in zip(questions, dense):
                if lexical is None:
                    scores = cos.astype(np.float64)
                else:
                    weight = 0.0 if mode == "lexical" else hybrid_weight
                    scores = weight * cos.astype(np.float64) + (1.0 - weight) * lexical.scores(q)
                active = pools.active_ids(owner, q.as_of)
                hot = [(records[i], float(scores[i])) for i in np.lexsort((order_key, -scores))]
                c = Candidates(q.text, q.tenant_id, q.user_id, q.as_of, hot, [p for p in hot if p[0].memory_id in active])
                out[q.id] = RankedQuestion(q, c)
                report(n_mem + len(out), total)
    finally:
        _drop(manager)
    ranked = tuple(out[q.id] for q in dataset.questions)
    scorer = describe_scorer(mode, emb_name, hybrid_weight)
    return Rankings(dataset, mode, emb_name, scorer, ranked, encoded=len(vectors), encoded_again=known.misses)


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
    """Each owner's records, read once from the store, and every question's exact cosine over all of them.

    Records come from :meth:`MemoryManager.records` (isolation and lifecycle filters inside the
    store query); cosines are one numpy product per owner over the vectors the study encoded once
    (the very vectors written to the store), so no per-question store query and no approximate
    index: a test checks the pools equal ``MemoryManager.candidates``.
    """

    def __init__(self, manager: MemoryManager, vectors: dict[str, np.ndarray]) -> None:
        self.manager = manager
        self.vectors = vectors
        self._hot: dict[tuple[str, str], list[MemoryRecord]] = {}
        self._active: dict[tuple[str, str, float], frozenset[str]] = {}

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

    def dense(self, owner: tuple[str, str], questions: list[DataQuestion]) -> np.ndarray:
        """(questions, hot records) cosine of each question with each of the owner's records, in :meth:`hot` order."""
        return cosines(self.vectors, [q.text for q in questions], [r.content for r in self.hot(owner)])


def _validate_texts(messages: list, questions: tuple[DataQuestion, ...], max_chars: int) -> None:
    """Reject a bad memory or question text before anything is encoded or written (labels as the engine's)."""
    for i, m in enumerate(messages):
        validate_text(m.content, f"messages[{i}] ({m.id}) content", max_chars=max_chars)
    for q in questions:
        validate_text(q.text, f"question {q.id!r}", max_chars=max_chars)


def _tie_break(records: list[MemoryRecord]) -> np.ndarray:
    """Each record's place in (message_id, memory_id) order: how equal scores are ranked, every run the same."""
    order = sorted(range(len(records)), key=lambda i: (records[i].message_id, records[i].memory_id))
    rank = np.empty(len(records), dtype=np.int64)
    rank[order] = np.arange(len(records))
    return rank


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

    def scores(self, q: DataQuestion) -> np.ndarray:
        """BM25 / the best BM25 for this question, in [0, 1], per record in :meth:`_Pools.hot` order;
        all 0 when nothing overlaps."""
        retriever, ids = self._index(q.owner)
        tokens = bm25_tokens(q.text)
        raw = np.asarray(retriever.get_scores(tokens), dtype=np.float64) if tokens and ids else np.zeros(len(ids))
        raw = np.maximum(raw, 0.0)  # BM25 is never negative; guard the [0, 1] contract anyway
        best = float(raw.max()) if len(raw) else 0.0
        return raw / best if best > 0 else np.zeros_like(raw)


def _drop(manager: MemoryManager) -> None:
    """Delete the study's workspace (best effort: a leftover in-memory collection is harmless)."""
    manager.drop()
