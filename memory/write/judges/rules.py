"""The ``rules`` judge: :func:`judge_reason`, the rules over the two statements' readings. The rules are the write
path's decision core (:mod:`memory.write.adjudicate`: the learned judge's features and its explanations ask them too),
so they stay there; this module names them as a judge beside the others."""

from __future__ import annotations

from memory.write.adjudicate import judge_reason

__all__ = ["judge_reason"]
