"""The dedup page's pure parts: pair decisions from cached similarities, the plain rule's mistakes at any
bands, and the scripted conversation whose facts get version chains.

No Streamlit here. Similarities are computed once per pair set and embedder (:func:`similarities`,
one batched embedding call, as :func:`memory.eval.pairs.evaluate_pairs` does); moving the band sliders only
re-runs :func:`decide`, which applies the library's own rules (:func:`memory.write.adjudicate.judge` and
:func:`memory.write.adjudicate.plain_rule`) and returns the library's :class:`memory.eval.pairs.PairReport`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from memory import DEFAULT_JUDGE, Embedder, MemoryConfig, MemoryRecord, Message, iso, make_judge, parse_time
from memory.eval import (
    ERROR_KINDS,
    PairItem,
    PairReport,
    decide_pairs,
    error_kind,
    pair_similarities,
)

from .reasons import reason_in  # re-exported: the dedup page and lab.teaching call dedup.reason_in

BAND_STEP = 0.01
"""The band sliders' step: :func:`best_bands` searches this grid."""
ARTICLE_BANDS = (0.78, 0.92)
"""The A6 article's (conflict, duplicate) bands; ties in :func:`best_bands` go to the setting nearest them."""


def similarities(pairs: Sequence[PairItem], embedder: Embedder) -> list[float]:
    """Cosine similarity of every pair, as memory.eval.pairs.evaluate_pairs computes it (one embedding call)."""
    return pair_similarities(pairs, embedder)


def decide(pairs: Sequence[PairItem], sims: Sequence[float], config: MemoryConfig, *, source: str,
           embedder: str, judge: str = DEFAULT_JUDGE) -> PairReport:
    """The plain and the governed decision of every pair at the config's bands, by the named judge (the learned one
    embeds with its own model, memoised; the pairs' similarities are not computed again)."""
    return decide_pairs(pairs, sims, config=config, source=source, embedder=embedder, judge=make_judge(judge))


def wrong(report: PairReport, rule: str) -> int:
    """Labelled pairs the rule ("plain" or "governed") decides differently from the label."""
    return sum(report.errors(rule).values())


def decision_frame(report: PairReport, lang: str = "en") -> pd.DataFrame:
    """One row per pair: similarity, label, both decisions and, where a rule is wrong, what kind of wrong."""
    rows = []
    for r in report.results:
        rows.append({
            "id": r.id, "similarity": r.similarity, "expected": r.expected or "",
            "plain_rule": r.plain_rule, "plain_error": _error(r.expected, r.plain_rule),
            "governed": r.decision, "governed_error": _error(r.expected, r.decision),
            "reason": reason_in(r, lang), "existing": r.existing, "incoming": r.incoming,
        })
    return pd.DataFrame(rows, columns=["id", "similarity", "expected", "plain_rule", "plain_error", "governed",
                                       "governed_error", "reason", "existing", "incoming"])


def errors_frame(report: PairReport, text: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Mistakes by kind for both rules (every kind listed, zero when it never happens)."""
    plain, governed = report.errors("plain"), report.errors("governed")
    text = dict(text or {})
    return pd.DataFrame([
        {"kind": kind, "what_it_does": text.get(kind, meaning), "plain_rule": plain[kind], "governed": governed[kind]}
        for kind, meaning in ERROR_KINDS.items()
    ])


def _error(expected: str | None, got: str) -> str:
    return "" if expected is None or expected == got else error_kind(expected, got)


@dataclass(frozen=True)
class BandFit:
    """The band setting under which the plain rule gets the fewest labelled pairs wrong."""

    conflict_band: float
    duplicate_band: float
    wrong: int
    """Labelled pairs the plain rule still gets wrong there."""
    labelled: int


def plain_wrong_grid(sims: Sequence[float], expected: Sequence[str | None], grid: np.ndarray) -> np.ndarray:
    """wrong[c, d]: labelled pairs the plain rule gets wrong with conflict band grid[c] and duplicate band grid[d]
    (entries with grid[c] > grid[d] are not valid settings; they are left as they come out)."""
    labelled = [(s, e) for s, e in zip(sims, expected) if e is not None]
    if not labelled:
        return np.zeros((len(grid), len(grid)), dtype=int)
    s = np.array([x for x, _ in labelled], dtype=np.float64)
    e = np.array([y for _, y in labelled])
    is_new = s[None, :] < grid[:, None]                       # plain_rule: below the conflict band
    is_dup = s[None, :] >= grid[:, None]                      # plain_rule: at or above the duplicate band
    rest = (~is_new).astype(np.int64)                         # [c, pair]: at or above the conflict band
    right_new = (is_new & (e == "new")[None, :]).sum(axis=1)  # [c]
    right_dup = rest @ (is_dup & (e == "duplicate")[None, :]).astype(np.int64).T
    right_upd = (rest * (e == "update")[None, :]) @ (~is_dup).astype(np.int64).T
    return len(labelled) - (right_new[:, None] + right_dup + right_upd)


def best_bands(sims: Sequence[float], expected: Sequence[str | None], *, step: float = BAND_STEP) -> BandFit | None:
    """The (conflict, duplicate) bands on the sliders' grid with the fewest plain-rule mistakes; None without labels.

    Ties go to the setting nearest the article's bands (0.78, 0.92).
    """
    labelled = sum(e is not None for e in expected)
    if not labelled:
        return None
    grid = np.round(np.arange(0.0, 1.0 + step / 2, step), 10)
    counts = plain_wrong_grid(sims, expected, grid)
    valid = grid[:, None] <= grid[None, :]
    distance = np.abs(grid[:, None] - ARTICLE_BANDS[0]) + np.abs(grid[None, :] - ARTICLE_BANDS[1])
    order = np.lexsort((distance[valid], counts[valid]))
    c_idx, d_idx = np.nonzero(valid)
    best = order[0]
    return BandFit(float(grid[c_idx[best]]), float(grid[d_idx[best]]), int(counts[valid][best]), labelled)


# --- the scripted conversation of the version-chain timeline ------------------------------------------

CHAT_OWNER = ("lab", "demo")
CHAT_START = parse_time("2026-05-04T09:00:00Z", "chat start")
CHAT_STEP_DAYS = 3
CHAT: dict[str, tuple[str, ...]] = {
    # a budget cut twice (a three-version chain), a move (two versions), a restatement (a duplicate: no new
    # version) and a qualified habit that coexists with the weekday one
    "en": ("The campaign budget is 500,000 yuan.", "The user lives in Hangzhou.",
           "On weekdays the user wakes up at 6:30.", "The campaign budget was cut to 300,000 yuan.",
           "The campaign budget is 300,000 yuan.", "The user lives in Shanghai now.",
           "On weekends the user wakes up at 9:00.", "The campaign budget is 250,000 yuan now."),
    "zh": ("活动预算是50万元。", "用户住在杭州。", "工作日用户6点半起床。", "活动预算削减到30万元。",
           "活动预算是30万元。", "用户现在住在上海。", "周末用户9点起床。", "活动预算现在是25万元。"),
}


def chat_messages(language: str) -> list[Message]:
    """The scripted conversation, one user message every few days."""
    texts = CHAT["zh" if language.startswith("zh") else "en"]
    tenant_id, user_id = CHAT_OWNER
    return [Message(tenant_id=tenant_id, user_id=user_id, content=text, id=f"c{i + 1}", session_id="chat",
                    timestamp=CHAT_START + i * CHAT_STEP_DAYS * 86400.0)
            for i, text in enumerate(texts)]


def log_frame(entries: Sequence[Mapping], lang: str = "en") -> pd.DataFrame:
    """The write path's decision log (``LogEntry.to_dict()`` / ``Ingestor.decisions`` rows), one row per fact."""
    return pd.DataFrame([{
        "message": e["message_id"], "fact": e["fact"], "decision": e["decision"], "plain_rule": e["plain_rule"],
        "similarity": e["similarity"], "candidate": (e["candidate"] or {}).get("text", ""), "reason": reason_in(e, lang),
    } for e in entries], columns=["message", "fact", "decision", "plain_rule", "similarity", "candidate", "reason"])


def fact_choices(records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Facts to pick from, the latest version of the longest chains first (then by time)."""
    facts = [r for r in records if r.memory_id.startswith("fact-")]
    return sorted(facts, key=lambda r: (-r.version, r.is_deprecated, r.created_at, r.memory_id))


def chain_frame(chain: Sequence[MemoryRecord]) -> pd.DataFrame:
    """One row per version of a fact, oldest first."""
    return pd.DataFrame([{
        "version": r.version, "created_at": iso(r.created_at), "content": r.content, "is_deprecated": r.is_deprecated,
        "superseded_by": r.superseded_by, "supersedes": r.supersedes, "access_count": r.access_count,
        "source_message_ids": ", ".join(r.source_message_ids), "memory_id": r.memory_id,
    } for r in chain], columns=["version", "created_at", "content", "is_deprecated", "superseded_by", "supersedes",
                                "access_count", "source_message_ids", "memory_id"])
