"""The read path's governance, as pure functions over candidates fetched once.

Pipeline (each stage names what it drops):

1. the store query itself is isolated by (tenant, user) and, for governed recall,
   excludes deprecated, expired and archived records (``deprecated`` / ``expired``
   are reported by comparing with the blind pool, which only excludes the archive);
2. ``threshold``: cosine similarity below ``config.threshold``;
3. composite score ``alpha*sim + beta*exp(-decay_rate*age_days) + gamma*max(importance, frequency)``,
   sorted, cut to ``top_k`` (``top_k``);
4. ``budget``: filled in rank order; a memory whose tokens do not fit in what is left
   of ``config.token_budget`` is dropped and smaller ones after it may still fit.

Because candidates carry their similarity, moving a slider re-runs :func:`govern`
only: nothing is embedded or queried again.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memory.core.config import MemoryConfig
from memory.core.schema import Dropped, Hit, MemoryRecord, RecallResult, ScoreParts
from memory.core.tokens import TokenCounter, count_tokens

DAY = 86400.0
FREQUENCY_SATURATION = 20
"""access_count at which the frequency term reaches 1."""


@dataclass(frozen=True)
class Candidates:
    """What the store returned for one query; input to :func:`govern`."""

    query: str
    tenant_id: str
    user_id: str
    as_of: float
    """POSIX seconds the query is evaluated at (ages and expiry are relative to it)."""
    hot: list[tuple[MemoryRecord, float]]
    """Isolated, archive excluded, most similar first: the blind pool (empty when blind recall was not asked for)."""
    active: list[tuple[MemoryRecord, float]]
    """Isolated and lifecycle-filtered inside the store query: the governed pool."""


def score_parts(record: MemoryRecord, similarity: float, config: MemoryConfig, now: float) -> ScoreParts:
    """The composite score of one candidate, term by term."""
    age_days = max(0.0, (now - max(record.last_accessed_at, record.created_at)) / DAY)
    recency = math.exp(-config.decay_rate * age_days)
    frequency = min(1.0, math.log1p(record.access_count) / math.log1p(FREQUENCY_SATURATION))
    importance = max(record.importance, frequency)
    return ScoreParts(
        similarity=similarity, recency=recency, importance=importance,
        similarity_part=config.alpha * similarity, recency_part=config.beta * recency,
        importance_part=config.gamma * importance,
    )


def blind(c: Candidates, top_k: int, *, token_counter: TokenCounter = count_tokens) -> list[Hit]:
    """Top-k by similarity: no threshold, no lifecycle, no rescoring (still isolated)."""
    return [Hit(r, s, s, None, token_counter(r.content)) for r, s in c.hot[:top_k]]


def govern(c: Candidates, config: MemoryConfig, *, token_counter: TokenCounter = count_tokens) -> RecallResult:
    """Blind and governed recall over the same candidates, with the stage that dropped each one."""
    dropped: list[Dropped] = []
    active_ids = {r.memory_id for r, _ in c.active}
    for record, sim in c.hot:
        if record.memory_id in active_ids:
            continue
        hit = Hit(record, sim, sim, None, token_counter(record.content))
        if record.is_deprecated:
            why = f"superseded by {record.superseded_by}" if record.superseded_by else "deprecated"
            dropped.append(Dropped(hit, "deprecated", why, {"superseded_by": record.superseded_by}))
        else:
            dropped.append(Dropped(hit, "expired", "valid_until is before the query time",
                                   {"valid_until": record.valid_until}))

    ranked: list[Hit] = []
    for record, sim in c.active:
        parts = score_parts(record, sim, config, c.as_of)
        hit = Hit(record, sim, parts.score, parts, token_counter(record.content))
        if sim < config.threshold:
            dropped.append(Dropped(hit, "threshold", f"similarity {sim:.3f} < threshold {config.threshold:.3f}",
                                   {"similarity": sim, "threshold": config.threshold}))
        else:
            ranked.append(hit)
    ranked.sort(key=lambda h: (-h.score, -h.similarity, h.record.memory_id))
    for hit in ranked[config.top_k :]:
        dropped.append(Dropped(hit, "top_k", f"rank beyond top_k={config.top_k} by composite score {hit.score:.3f}",
                               {"top_k": config.top_k, "score": hit.score}))

    governed: list[Hit] = []
    left = config.token_budget
    for hit in ranked[: config.top_k]:
        if hit.tokens <= left:
            governed.append(hit)
            left -= hit.tokens
        else:
            dropped.append(Dropped(hit, "budget", f"{hit.tokens} tokens > {left} left of budget {config.token_budget}",
                                   {"tokens": hit.tokens, "left": left, "budget": config.token_budget}))
    return RecallResult(
        query=c.query, tenant_id=c.tenant_id, user_id=c.user_id,
        blind=blind(c, config.top_k, token_counter=token_counter), governed=governed, dropped=dropped, as_of=c.as_of,
    )
