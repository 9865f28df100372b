"""A workspace's whole state in memory, and a new workspace started from it without running the write path again.

:func:`snapshot` reads everything a workspace holds of its owners: the long-term records with their vectors, the
recent windows, the summaries, the ingestion marks (so a replayed message is known as ingested) and the write path's
decision log. :func:`restore` writes a snapshot into an **empty** workspace: one Chroma upsert per owner, then every
text-store row in one transaction, so the copy is the source's state (records, version chains, decisions, windows)
without extracting, judging or embedding anything again.

The lab builds its starting state (a shipped scenario, a model, a write path) once per server process and starts
every participant's lab from it (``lab.engine.bases``): a room of 30 arrivals then costs 30 copies, not 30 ingests. A
snapshot is read-only (its arrays are frozen), so labs share it safely; a lab's own writes and erasures go to its
own workspace only. The audit trail is not copied: the copy's trail starts with one ``restore`` entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from memory.core.errors import InputError
from memory.core.owner import Owner
from memory.core.schema import MemoryRecord

if TYPE_CHECKING:
    from memory.runtime.manager import MemoryManager

COPIED_TABLES = ("window", "summaries", "ingested", "decisions")
"""Text-store tables a snapshot carries row for row (records and vectors go through the store's own writes)."""


@dataclass(frozen=True)
class Snapshot:
    """What :func:`snapshot` read: records with their vectors (row i of ``vectors`` is ``records[i]``'s), and the rows
    of :data:`COPIED_TABLES`."""

    embedder: str
    dim: int
    records: tuple[MemoryRecord, ...]
    vectors: np.ndarray
    tables: dict[str, tuple[tuple, ...]] = field(default_factory=dict)

    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant, user) the snapshot holds anything of."""
        found = {(r.tenant_id, r.user_id) for r in self.records}
        for name in ("window", "summaries"):  # tables led by (tenant_id, user_id), as the store's owners() reads them
            found |= {(row[0], row[1]) for row in self.tables.get(name, ())}
        return sorted(found)

    def count(self) -> dict[str, int]:
        """Records and rows per table."""
        return {"records": len(self.records), **{name: len(rows) for name, rows in self.tables.items()}}


def snapshot(manager: MemoryManager) -> Snapshot:
    """Everything ``manager``'s workspace holds of its owners (taken under its write lock: no write falls between two
    reads)."""
    store = manager.store
    records: list[MemoryRecord] = []
    blobs: list[bytes] = []
    with manager.writing():
        for key in store.owners():
            owner = Owner(*key)
            ids, raw = store.owner_vector_bytes(owner)
            found = store.get(ids, owner=owner)
            for memory_id, blob in zip(ids, raw):
                if memory_id in found and blob is not None:
                    records.append(found[memory_id])
                    blobs.append(blob)
        tables = {name: tuple(store.table_rows(name)) for name in COPIED_TABLES}
    vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, store.dim).copy()
    vectors.setflags(write=False)
    return Snapshot(store.embedder_name, store.dim, tuple(records), vectors, tables)


def restore(manager: MemoryManager, snap: Snapshot, *, actor: str = "system") -> dict[str, int]:
    """Write ``snap`` into ``manager``'s workspace, which must be empty and use the snapshot's embedder; what was
    written (records and rows per table). Vectors first (idempotent upserts), then every text-store row in one
    transaction: a failure leaves no readable half (a vector without its row is invisible to every read)."""
    store = manager.store
    if (snap.embedder, snap.dim) != (store.embedder_name, store.dim):
        raise InputError(f"a snapshot of embedder {snap.embedder!r} ({snap.dim} dimensions) cannot start a workspace "
                         f"of {store.embedder_name!r} ({store.dim})")
    records = list(snap.records)
    with manager.writing():
        if manager.owners():
            raise InputError(f"workspace {manager.workspace!r} is not empty: a snapshot starts an empty workspace only")
        store.add_vectors(records, snap.vectors)
        with store.transaction():
            store.put_records(records, snap.vectors)
            for name in COPIED_TABLES:
                store.copy_rows(name, list(snap.tables.get(name, ())))
            store.audit("restore", None, actor=actor, detail={"owners": len(snap.owners()), **snap.count()})
    return snap.count()
