"""The write path's judges, one module each, and by name: one place that says which judge a name means, so the
library, the CLI, an operating point and the lab decide the same pair the same way.

- ``learned`` (the default): :class:`memory.write.judges.learned.LearnedJudge`, the reading, the statements' vectors
  (English on MiniLM, Chinese on e5: the lab's store models, so the write path hands them over) and the changed
  wording weighed by a model trained on labelled pairs (0.949 / 0.914 outcome / 4-verdict accuracy on 1,577 held-out
  pairs against the rules' 0.749 / 0.594: bench/results/judge_independent.md; about 0.3 ms a decision on the
  write path: bench/results/write_phases.md);
- ``rules``: :func:`memory.write.judges.rules.judge_reason`, the rules over the reading (the decision core,
  :mod:`memory.write.adjudicate`: the learned judge's features and its explanations; by name, for comparison and
  teaching);
- ``bands``: the A6 article's two cosine bands (:func:`memory.write.judges.bands.plain_judge`), for comparisons.

A chat model (:class:`memory.ChatJudge`, :mod:`memory.write.judges.chat`, its prompt in ``chat_prompt.md`` beside it) is
passed as an object: it needs an endpoint, not a name.
"""

from __future__ import annotations

import threading

from memory.core.errors import ConfigError
from memory.write.adjudicate import Judge
from memory.write.judges.bands import plain_judge
from memory.write.judges.rules import judge_reason

JUDGE_NAMES = ("rules", "learned", "bands")
DEFAULT_JUDGE = "learned"
DEFAULT_WRITE_PATH = "facts"
"""How a library entry point writes a message unless told otherwise: distilled into facts and judged (``raw``: as-is)."""
_LEARNED: list[Judge] = []
_LOCK = threading.Lock()


def make_judge(name: str = DEFAULT_JUDGE) -> Judge:
    """The judge a name means (one learned judge per process: its weights and vector memo are shared)."""
    if name == "rules":
        return judge_reason
    if name == "bands":
        return plain_judge
    if name == "learned":
        with _LOCK:
            if not _LEARNED:
                from memory.write.judges.learned import LearnedJudge

                _LEARNED.append(LearnedJudge())
            return _LEARNED[0]
    raise ConfigError(f"judge must be one of {', '.join(JUDGE_NAMES)}, got {name!r}")
