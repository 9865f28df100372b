"""The ``bands`` judge: the A6 article's two cosine bands (:func:`memory.write.adjudicate.plain_rule`) as a judge, for
comparisons and teaching: what the write path would do without the rules."""

from __future__ import annotations

from memory.core.config import MemoryConfig
from memory.core.reasons import Reason
from memory.write.adjudicate import Verdict, plain_rule


def plain_judge(existing: str, incoming: str, similarity: float, *, config: MemoryConfig) -> tuple[Verdict, Reason]:
    """The A6 article's two cosine bands as a judge: what the write path would do without the rules."""
    verdict = plain_rule(similarity, config)
    return verdict, Reason("plain.bands", {"similarity": f"{similarity:.2f}", "verdict": verdict})
