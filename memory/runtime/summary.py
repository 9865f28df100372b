"""The rolling summary: what leaves a user's recent window is folded in here.

The default compressor is deterministic and extractive (one line per folded
message, oldest lines dropped first when the summary would exceed its bound);
any callable with the same signature (an LLM summariser, say) can replace it.
"""

from __future__ import annotations

from typing import Protocol

from memory.core.schema import Message


class Compressor(Protocol):
    def __call__(self, summary: str, expired: Message, *, max_chars: int) -> str:
        """Return the new summary after folding ``expired`` into ``summary``, at most ``max_chars`` long."""
        ...


def extractive_compressor(summary: str, expired: Message, *, max_chars: int) -> str:
    """Append ``role: content`` as a line; drop the oldest lines (and truncate) to stay within ``max_chars``."""
    line = f"{expired.role}: {' '.join(expired.content.split())}"
    lines = [ln for ln in summary.split("\n") if ln] + [line]
    while len(lines) > 1 and len("\n".join(lines)) > max_chars:
        lines.pop(0)
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"
