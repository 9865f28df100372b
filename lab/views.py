"""Pure transforms from library results to what the pages show (tables, counts, the context).

No Streamlit here: the pages render these, the tests and the benchmark call them directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from memory import Candidates, Hit, MemoryManager, MemoryRecord, Message, RecallResult, count_tokens, format_context

from .memo import TextMemo
from .pollution import POLLUTION_KINDS

KindsOf = Callable[[MemoryRecord], tuple[str, ...]]
"""record -> its pollution kinds for the current query (see lab.pollution.kinds_of)."""
KEPT = "governed"
"""The ``stage`` of a candidate that governed recall kept."""

class TokenCounts(TextMemo[int]):
    """memory.core.tokens.count_tokens memoised by text, process-wide, bounded (the oldest text leaves first), and
    able to :meth:`forget` texts: an erasure must not leave a user's texts in the lab's memory (it is in the
    library's registry of text caches, which ``erase_user`` walks)."""

    def __call__(self, text: str) -> int:
        n = self.get(text)
        if n is None:
            n = count_tokens(text)
            self.put(text, n)
        return n


cached_count_tokens = TokenCounts(maxsize=200_000, name="lab token counts")
"""The lab's token counter: a slider rerun re-counts every candidate's tokens, and the texts do not change
(about a quarter of govern's time at 10,000 candidates without the memo)."""


@dataclass(frozen=True)
class RecallCounts:
    """The numbers the recall page shows as metrics."""

    governed: int
    """Memories governed recall injects."""
    blind: int
    """Memories blind top-k injects."""
    polluted_blind: int
    """Blind hits with any pollution kind."""
    polluted_governed: int
    """Governed hits with any pollution kind."""
    candidates: int
    """Candidates seen (the user's whole pool)."""
    governed_tokens: int
    """Tokens of the governed memories (against the token budget)."""


def counts(result: RecallResult, kinds: KindsOf) -> RecallCounts:
    return RecallCounts(
        governed=len(result.governed), blind=len(result.blind),
        polluted_blind=sum(1 for h in result.blind if kinds(h.record)),
        polluted_governed=sum(1 for h in result.governed if kinds(h.record)),
        candidates=len(result.governed) + len(result.dropped), governed_tokens=result.governed_tokens,
    )


def hits_frame(hits: list[Hit], kinds: KindsOf) -> pd.DataFrame:
    """One row per hit, in rank order (blind or governed side); the memory's text first (what a room reads)."""
    return pd.DataFrame([
        {"content": h.record.content, "rank": i, "id": _id(h.record), "similarity": round(h.similarity, 3),
         "score": round(h.score, 3), "pollution": ", ".join(kinds(h.record))}
        for i, h in enumerate(hits, 1)
    ], columns=["content", "rank", "id", "similarity", "score", "pollution"])


def candidate_frame(result: RecallResult, kinds: KindsOf,
                    explain: Callable[[str, str, dict], str] | None = None) -> pd.DataFrame:
    """Every candidate: its text, the stage that dropped it (or ``governed``), why, and its score term by term.

    ``explain(stage, reason, params)`` words the reason (the page's language); default: the library's English."""
    say = explain or (lambda stage, reason, params: reason)
    blind_ids = {h.record.memory_id for h in result.blind}
    rows = [(h, KEPT, "") for h in result.governed] + [(d.hit, d.stage, say(d.stage, d.reason, d.params))
                                                        for d in result.dropped]
    records = []
    for hit, stage, reason in rows:
        parts = hit.parts
        records.append({
            "id": _id(hit.record), "stage": stage, "reason": reason, "similarity": hit.similarity,
            "recency": parts.recency if parts else None, "importance": parts.importance if parts else None,
            "similarity_part": parts.similarity_part if parts else None,
            "recency_part": parts.recency_part if parts else None,
            "importance_part": parts.importance_part if parts else None,
            "score": parts.score if parts else None, "tokens": hit.tokens,
            "in_blind": hit.record.memory_id in blind_ids, "pollution": ", ".join(kinds(hit.record)),
            "content": hit.record.content, "memory_id": hit.record.memory_id,
        })
    frame = pd.DataFrame(records, columns=[
        "content", "stage", "reason", "similarity", "pollution", "id", "recency", "importance", "similarity_part",
        "recency_part", "importance_part", "score", "tokens", "in_blind", "memory_id",
    ])
    return frame.sort_values("similarity", ascending=False, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class ContextView:
    """The context that would be injected for one user, built from the governed hits."""

    text: str
    summary: str
    recent: list[Message]
    tokens: int
    """Tokens of the whole context."""
    memory_tokens: int
    """Tokens of the injected long-term memories (what the budget bounds)."""
    token_budget: int


def window_view(manager: MemoryManager, *, tenant_id: str, user_id: str, window_size: int) -> tuple[str, list[Message]]:
    """(summary, recent window) as a manager with ``window_size`` would hold them.

    The lab's managers keep a larger window (lab.WINDOW_CAPACITY); the messages beyond
    ``window_size`` are folded into the summary with the manager's own compressor, in
    order, which is exactly what the manager does as messages leave its window.
    """
    recent = manager.recent(tenant_id=tenant_id, user_id=user_id)
    summary = manager.summary(tenant_id=tenant_id, user_id=user_id)
    cut = max(len(recent) - window_size, 0)
    for message in recent[:cut]:
        summary = manager.compressor(summary, message, max_chars=manager.config.summary_max_chars)
    return summary, recent[cut:]


def context_view(manager: MemoryManager, result: RecallResult, *, window_size: int, token_budget: int) -> ContextView:
    """Summary + recent window (re-sliced to the slider's size) + governed memories, as build_context lays them out."""
    summary, recent = window_view(manager, tenant_id=result.tenant_id, user_id=result.user_id, window_size=window_size)
    text = format_context(summary, recent, result.governed)
    return ContextView(text, summary, recent, manager.token_counter(text), result.governed_tokens, token_budget)


def without(candidates: Candidates, message_ids: set[str] | dict[str, str]) -> Candidates:
    """The same candidates minus the records of some messages: exactly what the store returned before
    those were written, because the lab fetches every memory of the user (pool = all)."""
    return Candidates(
        query=candidates.query, tenant_id=candidates.tenant_id, user_id=candidates.user_id, as_of=candidates.as_of,
        hot=[(r, s) for r, s in candidates.hot if r.message_id not in message_ids],
        active=[(r, s) for r, s in candidates.active if r.message_id not in message_ids],
    )


def pollution_table(before: RecallResult, after: RecallResult, kinds: KindsOf,
                    sandbox_before: list[MemoryRecord] = (), sandbox_after: list[MemoryRecord] = ()) -> pd.DataFrame:
    """Polluted memories by kind: blind and governed (both isolated) and the unisolated sandbox, before and after."""
    columns = {
        "blind_before": [h.record for h in before.blind], "governed_before": [h.record for h in before.governed],
        "blind_after": [h.record for h in after.blind], "governed_after": [h.record for h in after.governed],
        "sandbox_before": list(sandbox_before), "sandbox_after": list(sandbox_after),
    }
    rows = []
    for kind in POLLUTION_KINDS:
        row = {"kind": kind}
        for name, records in columns.items():
            row[name] = sum(1 for r in records if kind in kinds(r))
        rows.append(row)
    return pd.DataFrame(rows, columns=["kind", *columns])


def polluted_token_share(hits: list[Hit], kinds: KindsOf) -> float:
    """Share of the injected memory tokens that are polluted (0 when nothing is injected)."""
    total = sum(h.tokens for h in hits)
    return sum(h.tokens for h in hits if kinds(h.record)) / total if total else 0.0


def records_frame(records: list[MemoryRecord], labels: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """Every stored record with all its metadata (the A6 contract) and its labels."""
    rows = []
    for r in records:
        row = r.to_dict()
        for key in ("domain_tags", "entities", "context_tags", "source_message_ids"):
            row[key] = ", ".join(row[key])
        row["labels"] = ", ".join(labels.get(r.message_id, ()))
        rows.append(row)
    return pd.DataFrame(rows)


def _id(record: MemoryRecord) -> str:
    return record.message_id or record.memory_id


def leaked_kinds(result: RecallResult, kinds: KindsOf) -> list[str]:
    """The pollution kinds that governed recall still holds, most frequent first (what the page must explain)."""
    seen: dict[str, int] = {}
    for hit in result.governed:
        for kind in kinds(hit.record):
            seen[kind] = seen.get(kind, 0) + 1
    return sorted(seen, key=lambda k: (-seen[k], k))
