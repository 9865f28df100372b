"""MemoryStore: the Chroma adapter (vectors + filterable metadata) joined with the TextStore (raw text).

* Embedded ``PersistentClient`` under a data folder by default, an in-memory
  client for tests, ``HttpClient`` when ``MEMORY_CHROMA_HOST``/``MEMORY_CHROMA_PORT``
  (or ``host``/``port``) are set.
* Cosine space; :func:`similarity_from_distance` is the only place a distance
  becomes a similarity (higher is more similar).
* :func:`scope_where` is the only place a read filter is built: every read is
  scoped by (tenant_id, user_id) *inside* the Chroma query, never filtered after.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .errors import MemoryLabError
from .heap import zero_fill_allocations
from .schema import MemoryRecord, validate_identifier
from .textstore import TextStore

HOST_ENV = "MEMORY_CHROMA_HOST"
PORT_ENV = "MEMORY_CHROMA_PORT"
DATA_DIR_ENV = "MEMORY_DATA_DIR"
DEFAULT_DATA_DIR = Path(".memory-data")

Scope = Literal["active", "inactive", "hot", "all"]
"""active: recallable (not deprecated, not archived, not expired). inactive: deprecated or expired,
not archived. hot: everything but the archive (what blind recall sees). all: everything, archive included."""

_META_FIELDS = (
    "session_id", "category", "security_level", "created_at", "last_accessed_at", "valid_until",
    "access_count", "last_verified_at", "importance", "version", "is_deprecated", "superseded_by", "supersedes",
    "archived", "role", "message_id",
)
_TEXT_FIELDS = ("domain_tags", "entities", "context_tags")


def similarity_from_distance(distance: float) -> float:
    """Chroma cosine distance (1 - cos) -> cosine similarity in [-1, 1]; higher is more similar."""
    return 1.0 - float(distance)


def scope_where(tenant_id: str, user_id: str, *, scope: Scope, now: float | None = None) -> dict[str, Any]:
    """The Chroma ``where`` of every read: isolation by (tenant_id, user_id) plus the lifecycle scope."""
    clauses: list[dict[str, Any]] = [
        {"tenant_id": {"$eq": validate_identifier(tenant_id, "tenant_id")}},
        {"user_id": {"$eq": validate_identifier(user_id, "user_id")}},
    ]
    if scope in ("active", "inactive"):
        if now is None:
            raise ValueError(f"scope {scope!r} needs the current time")
        clauses.append({"archived": {"$eq": False}})
        if scope == "active":
            clauses += [{"is_deprecated": {"$eq": False}}, {"valid_until": {"$gt": float(now)}}]
        else:
            clauses.append({"$or": [{"is_deprecated": {"$eq": True}}, {"valid_until": {"$lte": float(now)}}]})
    elif scope == "hot":
        clauses.append({"archived": {"$eq": False}})
    elif scope != "all":
        raise ValueError(f"unknown scope {scope!r}")
    return {"$and": clauses}


def in_scope(meta: dict[str, Any], *, scope: Scope, now: float | None = None) -> bool:
    """The lifecycle part of :func:`scope_where`, on one record's metadata.

    For a read that fetches an owner's records whole (isolation still inside the Chroma ``where``):
    Chroma evaluates an owner-only filter faster than the owner plus the lifecycle clauses (the
    write path's overhead, docs/write-path.md), and with nothing truncated the result is the same
    (tests/test_store_scope.py).
    """
    if scope in ("active", "inactive"):
        if now is None:
            raise ValueError(f"scope {scope!r} needs the current time")
        if meta["archived"]:
            return False
        live = not meta["is_deprecated"] and meta["valid_until"] > float(now)
        return live if scope == "active" else not live
    if scope == "hot":
        return not meta["archived"]
    if scope != "all":
        raise ValueError(f"unknown scope {scope!r}")
    return True


@dataclass(frozen=True)
class StoreLocation:
    """Where the store lives: in memory, in a data folder, or on a Chroma server (+ a local text folder)."""

    data_dir: Path | None = None
    """Folder for chroma/ and text.sqlite3; None keeps everything in memory."""
    host: str | None = None
    port: int | None = None

    @classmethod
    def from_env(cls, data_dir: str | Path | None = None, *, in_memory: bool = False) -> "StoreLocation":
        """Server if MEMORY_CHROMA_HOST is set; else in memory, or the data folder
        (argument, MEMORY_DATA_DIR, or ./.memory-data)."""
        host = os.environ.get(HOST_ENV) or None
        port_text = os.environ.get(PORT_ENV, "8000")
        try:
            port = int(port_text)
        except ValueError:
            raise MemoryLabError(f"{PORT_ENV} must be a port number, got {port_text!r}") from None
        folder = None if in_memory else Path(data_dir or os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)
        return cls(data_dir=folder, host=host, port=port if host else None)


_CLIENTS: dict[tuple, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def chroma_client(location: StoreLocation):
    """One Chroma client per location per process (Chroma wants a single client per path)."""
    import chromadb
    from chromadb.config import Settings

    key = (str(location.data_dir.resolve()) if location.data_dir else None, location.host, location.port)
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            settings = Settings(anonymized_telemetry=False)
            if location.host:
                _CLIENTS[key] = chromadb.HttpClient(host=location.host, port=location.port or 8000, settings=settings)
            elif location.data_dir is not None:
                zero_fill_allocations()  # before Chroma allocates the index buffers it persists (memory/heap.py)
                _CLIENTS[key] = chromadb.PersistentClient(path=str(location.data_dir / "chroma"), settings=settings)
            else:
                _CLIENTS[key] = chromadb.EphemeralClient(settings=settings)
        return _CLIENTS[key]


def collection_name(workspace: str, embedder_name: str) -> str:
    """A valid Chroma collection name for a workspace and an embedder (vectors of two embedders never mix)."""
    raw = f"mgl-{workspace}-{embedder_name}"
    safe = re.sub(r"[^a-zA-Z0-9._-]", "-", raw)[:200].strip("-._")
    return safe if len(safe) >= 3 else f"mgl-{safe}x"


class MemoryStore:
    """Long-term memory records: vectors and metadata in Chroma, raw text in a TextStore."""

    def __init__(self, *, location: StoreLocation, workspace: str, embedder_name: str, dim: int) -> None:
        self.location = location
        self.workspace = validate_identifier(workspace, "workspace")
        self.client = chroma_client(location)
        self.collection = self.client.get_or_create_collection(
            collection_name(workspace, embedder_name),
            configuration={"hnsw": {"space": "cosine", "ef_search": 200, "ef_construction": 200}},
            metadata={"embedder": embedder_name, "dim": dim},
            embedding_function=None,
        )
        text_path = None
        if location.data_dir is not None:
            text_path = location.data_dir / "text" / f"{collection_name(workspace, embedder_name)}.sqlite3"
        self.texts = TextStore(text_path)
        self.dim = dim
        self._batch = max(1, min(int(self.client.get_max_batch_size()), 5000))

    # --- writes -------------------------------------------------------------
    def add(self, records: list[MemoryRecord], embeddings: np.ndarray | None) -> None:
        """Store records (idempotent upserts); text first, so a vector never exists without its text."""
        if not records:
            return
        vectors = np.asarray(embeddings, dtype=np.float32)
        self.texts.put_texts([
            (r.memory_id, r.tenant_id, r.user_id, r.content, {f: getattr(r, f) for f in _TEXT_FIELDS})
            for r in records
        ])
        for start in range(0, len(records), self._batch):
            chunk = records[start : start + self._batch]
            self.collection.upsert(ids=[r.memory_id for r in chunk], embeddings=vectors[start : start + self._batch],
                                   metadatas=[_to_meta(r) for r in chunk])

    def update(self, records: list[MemoryRecord]) -> None:
        """Write back the metadata (and text fields) of existing records."""
        if not records:
            return
        self.texts.put_texts([
            (r.memory_id, r.tenant_id, r.user_id, r.content, {f: getattr(r, f) for f in _TEXT_FIELDS})
            for r in records
        ])
        for start in range(0, len(records), self._batch):
            chunk = records[start : start + self._batch]
            self.collection.update(ids=[r.memory_id for r in chunk], metadatas=[_to_meta(r) for r in chunk])

    def drop(self) -> None:
        """Delete this workspace entirely: its Chroma collection and its text file (best effort, never raises)."""
        try:
            self.client.delete_collection(self.collection.name)
        except Exception:  # noqa: BLE001 - already gone, or the server is down: nothing more to do
            pass
        path = self.texts.path
        self.texts.close()
        if path is not None:
            path.unlink(missing_ok=True)

    def delete_owner(self, tenant_id: str, user_id: str) -> int:
        """Delete every vector of one (tenant, user); the caller erases the text. Returns the count."""
        ids = self.collection.get(where=scope_where(tenant_id, user_id, scope="all"), include=[])["ids"]
        if ids:
            self.collection.delete(ids=ids)
        return len(ids)

    # --- reads --------------------------------------------------------------
    def query(
        self, embedding: np.ndarray, *, tenant_id: str, user_id: str, n: int, scope: Scope, now: float | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """Nearest records of one (tenant, user) within a scope, as (record, similarity), most similar first."""
        where = scope_where(tenant_id, user_id, scope=scope, now=now)
        res = self.collection.query(
            query_embeddings=np.asarray(embedding, dtype=np.float32).reshape(1, -1),
            n_results=max(int(n), 1), where=where, include=["metadatas", "distances"],
        )
        ids, metas, dists = res["ids"][0], res["metadatas"][0], res["distances"][0]
        records = self._join(ids, metas)
        return [(records[i], similarity_from_distance(d)) for i, d in zip(ids, dists) if i in records]

    def scan(
        self, embedding: np.ndarray, *, tenant_id: str, user_id: str, scope: Scope, now: float | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """Every record of one (tenant, user) within a scope, scored exactly, most similar first.

        Reads the owner's vectors (same ``where`` as :meth:`query`) and scores them with numpy, so no
        candidate is missed the way an approximate index can miss some; for pools covering all of a
        user's memories (the lab, studies). Cosine distance is computed as Chroma does (1 - dot of
        unit vectors) and converted by :func:`similarity_from_distance`, like every other score.
        """
        res = self.collection.get(where=scope_where(tenant_id, user_id, scope=scope, now=now),
                                  include=["metadatas", "embeddings"])
        if not res["ids"]:
            return []
        records = self._join(res["ids"], res["metadatas"])
        vecs = np.asarray(res["embeddings"], dtype=np.float32)
        distances = 1.0 - vecs @ np.asarray(embedding, dtype=np.float32).reshape(-1)
        scored = [(records[i], similarity_from_distance(d)) for i, d in zip(res["ids"], distances) if i in records]
        scored.sort(key=lambda rs: (-rs[1], rs[0].memory_id))
        return scored

    def records(self, tenant_id: str, user_id: str, *, scope: Scope = "all", now: float | None = None) -> list[MemoryRecord]:
        """Every record of one (tenant, user) within a scope, oldest first."""
        res = self.collection.get(where=scope_where(tenant_id, user_id, scope=scope, now=now), include=["metadatas"])
        joined = self._join(res["ids"], res["metadatas"])
        return sorted(joined.values(), key=lambda r: (r.created_at, r.memory_id))

    def get(self, memory_ids: list[str], *, tenant_id: str, user_id: str) -> dict[str, MemoryRecord]:
        """Some of one owner's records by id (ids of other owners are simply not found)."""
        if not memory_ids:
            return {}
        res = self.collection.get(
            ids=list(memory_ids), where=scope_where(tenant_id, user_id, scope="all"), include=["metadatas"]
        )
        return self._join(res["ids"], res["metadatas"])

    def embeddings(self, memory_ids: list[str], *, tenant_id: str, user_id: str) -> dict[str, np.ndarray]:
        """Stored vectors of some of one owner's records (the where keeps it within the owner)."""
        if not memory_ids:
            return {}
        res = self.collection.get(
            ids=memory_ids, where=scope_where(tenant_id, user_id, scope="all"), include=["embeddings"]
        )
        return {i: np.asarray(e, dtype=np.float32) for i, e in zip(res["ids"], res["embeddings"])}

    def count(self, tenant_id: str | None = None, user_id: str | None = None) -> int:
        """Vectors in the store: all of them, or one (tenant, user)'s."""
        if tenant_id is None:
            return self.collection.count()
        return len(self.collection.get(where=scope_where(tenant_id, user_id, scope="all"), include=[])["ids"])

    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant_id, user_id) with records (an administrative listing, not a recall path)."""
        res = self.collection.get(include=["metadatas"])
        return sorted({(m["tenant_id"], m["user_id"]) for m in res["metadatas"]})

    def _join(self, ids: list[str], metas: list[dict[str, Any]]) -> dict[str, MemoryRecord]:
        texts = self.texts.get_texts(list(ids))
        out: dict[str, MemoryRecord] = {}
        for memory_id, meta in zip(ids, metas):
            if memory_id not in texts:  # vector without text: invisible (it was being erased or never finished)
                continue
            tenant_id, user_id, content, extras = texts[memory_id]
            if (tenant_id, user_id) != (meta["tenant_id"], meta["user_id"]):
                raise MemoryLabError(f"store inconsistency: record {memory_id} has two owners")
            out[memory_id] = _from_meta(memory_id, meta, content, extras)
        return out


def _to_meta(r: MemoryRecord) -> dict[str, Any]:
    meta: dict[str, Any] = {"tenant_id": r.tenant_id, "user_id": r.user_id}
    for name in _META_FIELDS:
        meta[name] = getattr(r, name)
    meta["created_at"] = float(r.created_at)
    meta["last_accessed_at"] = float(r.last_accessed_at)
    meta["valid_until"] = float(r.valid_until)
    meta["importance"] = float(r.importance)
    meta["source_message_ids"] = json.dumps(r.source_message_ids, ensure_ascii=False)
    return meta


def _from_meta(memory_id: str, meta: dict[str, Any], content: str, extras: dict[str, Any]) -> MemoryRecord:
    kwargs = {name: meta[name] for name in _META_FIELDS if name in meta}
    return MemoryRecord(
        memory_id=memory_id, tenant_id=meta["tenant_id"], user_id=meta["user_id"], content=content,
        source_message_ids=json.loads(meta.get("source_message_ids", "[]")),
        **{f: list(extras.get(f, [])) for f in _TEXT_FIELDS}, **kwargs,
    )
