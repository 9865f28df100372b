"""Values computed from texts, memoised process-wide: the library's :class:`memory.TextMemo`, under the lab's name.

Two memos of the lab use it: the token counts of the texts a page shows (:data:`lab.views.cached_count_tokens`) and
the vectors of the texts an embedder has embedded (:class:`lab.models.RememberingEmbedder`). Both hold participants'
texts, so they are in the library's one registry of caches that hold user text (``memory/core/textcaches.py``):
:meth:`memory.MemoryManager.erase_user` takes the erased user's texts out of them, as it does out of every other
registered cache, and :meth:`TextMemo.forget` does it for a caller that holds texts the store no longer has.
"""

from __future__ import annotations

from memory import TextMemo

__all__ = ["TextMemo"]
