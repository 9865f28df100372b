"""Write plans: everything one batch of ingestion changes, journaled before it is applied.

A batch touches two stores (Chroma for vectors and metadata, SQLite for text, the window,
the decision log). To survive a crash (even SIGKILL) between the two, the write path:

1. records the whole plan in the journal (one SQLite transaction);
2. applies the store side (text rows, vectors, metadata updates): idempotent upserts;
3. commits the SQLite side (window pushes, decision log, "ingested" marks) and deletes the
   journal row, in one SQLite transaction.

On start-up, :meth:`MemoryManager.recover` re-applies every plan still in the journal (roll
forward). So a message is either fully stored (records, vectors, metadata, window, log, mark)
or absent (its plan never reached the journal) and re-ingestable; a retry of a stored message
is skipped by its "ingested" mark, so nothing is stored twice.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memory.core.schema import MemoryRecord, Message, field_values


@dataclass
class Plan:
    """One batch's writes."""

    add: list[MemoryRecord] = field(default_factory=list)
    """New records (text + vector)."""
    vectors: np.ndarray | None = None
    """Vectors of ``add``, row by row."""
    update: list[MemoryRecord] = field(default_factory=list)
    """Existing records whose metadata changes (deprecations, duplicate bumps)."""
    window: list[Message] = field(default_factory=list)
    """Messages to push into their owners' recent windows."""
    decisions: list[tuple[str, str, str, float, dict[str, Any]]] = field(default_factory=list)
    """Decision-log rows (tenant_id, user_id, message_id, at, entry)."""
    ingested: list[tuple[str, str, str]] = field(default_factory=list)
    """(tenant_id, user_id, message_id) of every message this batch completes."""

    def owners(self) -> set[tuple[str, str]]:
        return ({(r.tenant_id, r.user_id) for r in self.add + self.update}
                | {(m.tenant_id, m.user_id) for m in self.window} | {(t, u) for t, u, _ in self.ingested})

    def without(self, owners: set[tuple[str, str]]) -> "Plan":
        """The same plan minus everything of some owners (erased while the batch was in flight)."""
        keep = [i for i, r in enumerate(self.add) if (r.tenant_id, r.user_id) not in owners]
        return Plan(
            add=[self.add[i] for i in keep],
            vectors=None if self.vectors is None else self.vectors[keep],
            update=[r for r in self.update if (r.tenant_id, r.user_id) not in owners],
            window=[m for m in self.window if (m.tenant_id, m.user_id) not in owners],
            decisions=[d for d in self.decisions if (d[0], d[1]) not in owners],
            ingested=[i for i in self.ingested if (i[0], i[1]) not in owners],
        )

    def to_json(self) -> dict[str, Any]:
        vecs = np.zeros((0, 0), dtype=np.float32) if self.vectors is None else np.asarray(self.vectors, np.float32)
        return {
            "add": [field_values(r) for r in self.add],
            "vectors": base64.b64encode(vecs.tobytes()).decode("ascii"),
            "dim": int(vecs.shape[1]) if vecs.ndim == 2 and len(vecs) else 0,
            "update": [field_values(r) for r in self.update],
            "window": [field_values(m) for m in self.window],
            "decisions": [list(d) for d in self.decisions],
            "ingested": [list(i) for i in self.ingested],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Plan":
        dim = data["dim"]
        raw = np.frombuffer(base64.b64decode(data["vectors"]), dtype=np.float32)
        return cls(
            add=[MemoryRecord(**r) for r in data["add"]],
            vectors=raw.reshape(-1, dim) if dim else None,
            update=[MemoryRecord(**r) for r in data["update"]],
            window=[Message(**{**m, "labels": tuple(m["labels"])}) for m in data["window"]],
            decisions=[tuple(d) for d in data["decisions"]],
            ingested=[tuple(i) for i in data["ingested"]],
        )
