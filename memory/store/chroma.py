"""MemoryStore: the only code that touches Chroma; vectors in one collection per owner, joined with the
TextStore (raw text, lifecycle metadata, a copy of each vector).

* Embedded ``PersistentClient`` under a data folder by default, an in-memory
  client for tests, ``HttpClient`` when ``MEMORY_CHROMA_HOST``/``MEMORY_CHROMA_PORT``
  (or ``host``/``port``) are set. On a server, a workspace's texts stay in a local data folder, one for every client:
  the server binds the workspace to it at first use and refuses another (memory/store/binding.py).
* Cosine space; :func:`similarity_from_distance` is the only place a distance
  becomes a similarity (higher is more similar).
* Isolation by (tenant_id, user_id) is physical: each owner's vectors are a collection of their own and each
  owner's rows are read by an indexed owner key; no read is filtered after the fact by owner. Every method of one
  owner takes it as one :class:`~memory.core.owner.Owner`, validated where it entered the library.
  :func:`in_scope` is the one lifecycle predicate (active / inactive / hot / all).
* Layout history and the migration from layout 1: memory/store/migrate.py.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import numpy as np

from memory.store.chroma_files import (Serialized, opening, purge_collection, rebuild, rewrite_rows_of_pages, segments, trace_pages,
                           traces)
from memory.core.errors import ErasedError, MemoryLabError
from memory.store.binding import bind, unbind
from memory.store.heap import zero_fill_allocations
from memory.core.owner import Owner
from memory.core.schema import MemoryRecord, field_values, validate_identifier
from memory.store.textstore import TextStore

HOST_ENV = "MEMORY_CHROMA_HOST"
PORT_ENV = "MEMORY_CHROMA_PORT"
DATA_DIR_ENV = "MEMORY_DATA_DIR"
DEFAULT_DATA_DIR = Path(".memory-data")
CACHE_ENV = "MEMORY_VECTOR_CACHE_MB"
DEFAULT_CACHE_MB = 256
"""Memory for owners' vectors kept for exact scans, per store (MEMORY_VECTOR_CACHE_MB overrides)."""
EXACT_SCAN_MAX = 20_000
"""Owners with at most this many records are ranked by an exact scan of their vectors (held in memory, as
Chroma holds its HNSW index); larger ones through HNSW. Measured (bench/recall_latency.py, this machine): an
exact scan of 10,000 vectors takes about 2 ms where one Chroma HNSW query on the same collection takes about
5 ms; the same rule as Qdrant's ``full_scan_threshold``."""
HNSW_BATCH = 100
"""Chroma's HNSW ``batch_size`` and ``sync_threshold`` for owners' collections (Chroma's default: 100 and 1,000).
Chroma keeps a vector in its write-ahead log (inside ``chroma.sqlite3``) until the index is synced; with the
default, an owner with fewer than 1,000 records would keep every vector there, and the log (which an erasure
rewrites: memory/store/chroma_files.py) would grow with the store."""
LAYOUT = "2"
"""The data folder layout: 1 = one collection per workspace with owner filters, 2 = one per owner."""

Scope = Literal["active", "inactive", "hot", "all"]
"""active: recallable (not deprecated, not archived, not expired). inactive: deprecated or expired,
not archived. hot: everything but the archive (what blind recall sees). all: everything, archive included."""

def similarity_from_distance(distance: float) -> float:
    """Chroma cosine distance (1 - cos) -> cosine similarity in [-1, 1]; higher is more similar."""
    return 1.0 - float(distance)


def in_scope(meta: dict[str, Any], *, scope: Scope, now: float | None = None) -> bool:
    """Whether a record (its fields as a mapping) is in a lifecycle scope at ``now``.

    Every read applies it to the owner's own records, never to anyone else's: the owner is chosen first,
    physically (the owner's collection, the owner's rows).
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

    def __post_init__(self) -> None:
        if isinstance(self.data_dir, str):  # a folder given as text is a folder all the same
            object.__setattr__(self, "data_dir", Path(self.data_dir))

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
DELETE_ATTEMPTS = 4
_AUDITED_HERE: dict[str, set[int]] = {}
"""The audit entries this process wrote, per text file (:meth:`MemoryStore.audit`): an erasure here has emptied this
process's caches of the erased texts already, so :meth:`MemoryStore.catch_up` leaves them be for those."""
_AUDITED_LOCK = threading.Lock()
_STORES: dict[tuple, int] = {}
"""How many open stores use each embedded folder's client: the last one to close (or to be garbage-collected) closes
the client, so dropped managers do not keep its files, threads and memory (60 of them held 467 MB and 719 open
files). Server and in-memory clients are shared and stay."""


def _audited_here(text_key: str, seq: int) -> None:
    with _AUDITED_LOCK:
        _AUDITED_HERE.setdefault(text_key, set()).add(seq)


def _client_key(location: StoreLocation) -> tuple:
    return (str(location.data_dir.resolve()) if location.data_dir else None, location.host, location.port)


def _use_client(key: tuple) -> None:
    with _CLIENTS_LOCK:
        _STORES[key] = _STORES.get(key, 0) + 1


_UNUSED: collections.deque = collections.deque()
"""Keys let go of by stores, not yet counted: a store's finalizer may run inside any allocation, also in a thread that
holds _CLIENTS_LOCK (creating a client), so it only appends here (atomic, no lock) and :func:`_drain_unused` counts."""


def _let_go_later(key: tuple) -> None:
    _UNUSED.append(key)


def _drain_unused() -> None:
    """Count the stores let go of since the last call (never from a finalizer, never under _CLIENTS_LOCK)."""
    while True:
        try:
            key = _UNUSED.popleft()
        except IndexError:
            return
        _unuse_client(key)


def _unuse_client(key: tuple) -> None:
    """One store of an embedded folder is done with its client; the last one closes it."""
    with _CLIENTS_LOCK:
        left = _STORES.get(key, 0) - 1
        if left > 0:
            _STORES[key] = left
            return
        _STORES.pop(key, None)
        client = _CLIENTS.pop(key, None) if key[0] is not None and key[1] is None else None
    if client is not None:
        client.close()


def chroma_client(location: StoreLocation):
    """One Chroma client per location per process (Chroma wants a single client per path)."""
    import chromadb
    from chromadb.config import Settings

    key = _client_key(location)
    _drain_unused()
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            settings = Settings(anonymized_telemetry=False)
            if location.host:
                _CLIENTS[key] = chromadb.HttpClient(host=location.host, port=location.port or 8000, settings=settings)
            elif location.data_dir is not None:
                zero_fill_allocations()  # before Chroma allocates the index buffers it persists (memory/store/heap.py)
                folder = location.data_dir / "chroma"
                with opening(folder):  # auto_vacuum first; one process at a time runs Chroma's migrations
                    _CLIENTS[key] = Serialized(chromadb.PersistentClient(path=str(folder), settings=settings))
            else:
                _CLIENTS[key] = chromadb.EphemeralClient(settings=settings)
        return _CLIENTS[key]


def release_client(data_dir: Path) -> bool:
    """Close and forget the embedded Chroma client of ``data_dir`` (its files and threads are let go), so the
    folder can be deleted; False when this process holds none. The caller guarantees no store of the folder is
    used any more (the lab: after dropping a released lab's workspaces)."""
    key = (str(Path(data_dir).resolve()), None, None)
    with _CLIENTS_LOCK:
        client = _CLIENTS.pop(key, None)
    if client is None:
        return False
    client.close()
    return True


def _server(location: StoreLocation) -> str:
    """host:port of a server location, as its one-line errors name it."""
    return f"{location.host}:{location.port or 8000}"


def workspace_key(workspace: str, embedder_name: str) -> str:
    """The file name stem of a workspace's text store: a hash of (workspace, embedder), so two different
    names never share a file (``团队一`` and ``团队二``, ``a/b`` and ``a:b``, long names differing at the end);
    the file also records the names it belongs to (:meth:`TextStore.claim`)."""
    digest = hashlib.sha256(f"{workspace}\x1f{embedder_name}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"ws-{digest[:40]}"


class MemoryStore:
    """Long-term memory records of one workspace: one Chroma collection per (tenant, user) for the vectors,
    a TextStore for text, lifecycle metadata and a copy of each vector.

    * Isolation is physical: an owner's vectors live in the owner's own collection (a random name the
      TextStore registers), and every record read is an indexed SQLite read of that owner's rows. No read
      takes a metadata filter, so a recall costs what the owner holds, not what the Chroma instance holds.
    * Recall ranks an owner with at most ``exact_max`` records by an exact scan of the owner's vectors
      (cached in memory per owner and version, bounded by ``cache_mb``), larger owners through the owner's
      HNSW index in Chroma; the lifecycle (:func:`in_scope`) is applied to candidates in rank order, and the
      search widens until ``n`` in-scope records are found or the owner has no more.
    * Erasure drops the owner's collection; on an embedded store, with no byte left (memory/store/chroma_files.py).
    """

    def __init__(self, *, location: StoreLocation, workspace: str, embedder_name: str, dim: int,
                 exact_max: int = EXACT_SCAN_MAX, cache_mb: float | None = None) -> None:
        self.location = location
        self.workspace = validate_identifier(workspace, "workspace")
        self.embedder_name = embedder_name
        self.dim = int(dim)
        self.exact_max = int(exact_max)
        self.key = workspace_key(workspace, embedder_name)
        if location.host and location.data_dir is None:
            raise MemoryLabError(f"the Chroma server at {_server(location)} needs a data folder for the texts of "
                                 f"workspace {self.workspace!r}, one its clients share: texts kept in memory would be "
                                 "this process's alone, and no other client's erasure would reach them")
        self.client = chroma_client(location)
        self.folder_id: str | None = None
        """On a server: the id of the text folder the workspace is bound to (memory/store/binding.py), else None."""
        if location.host and location.data_dir is not None:  # before the text file is made: a refusal writes nothing
            self.folder_id = bind(self.client, key=self.key, workspace=self.workspace, folder=location.data_dir,
                                  server=_server(location))
        key = _client_key(location)
        _use_client(key)
        self._release = weakref.finalize(self, _let_go_later, key)
        """Lets go of the client once: at :meth:`close`, :meth:`drop`, or when the store is garbage-collected."""
        text_path = None if location.data_dir is None else location.data_dir / "text" / f"{self.key}.sqlite3"
        self.texts = TextStore(text_path)
        self.texts.claim(workspace=workspace, embedder=embedder_name, dim=str(self.dim), layout=LAYOUT)
        self._handles: dict[str, Any] = {}
        self._cache = VectorCache(cache_mb if cache_mb is not None else _cache_mb_from_env())
        self._audit_seen = self.texts.audit_head()
        """The last audit entry this store has acted on (:meth:`catch_up`)."""
        self._text_key = None if text_path is None else str(text_path.resolve())
        self._seen_lock = threading.Lock()
        self._batch = max(1, min(int(self.client.get_max_batch_size()), 5000))

    @property
    def chroma_dir(self) -> Path | None:
        """The embedded Chroma folder (None in memory and on a server)."""
        if self.location.host or self.location.data_dir is None:
            return None
        return self.location.data_dir / "chroma"

    # --- writes -------------------------------------------------------------
    def add(self, records: list[MemoryRecord], embeddings: np.ndarray) -> None:
        """Store records (idempotent upserts): vectors into the owners' collections, then text, metadata and
        a vector copy in one TextStore transaction (a vector without its row is invisible to every read)."""
        self.add_vectors(records, embeddings)
        self.put_records(records, embeddings)

    def add_vectors(self, records: list[MemoryRecord], embeddings: np.ndarray) -> None:
        """The vector-store half of :meth:`add`: upsert each record's vector into its owner's collection."""
        if not records:
            return
        vectors = _matrix(embeddings, len(records))
        for owner, idx in _by_owner(records).items():
            name = self.texts.collection_of(owner, create=True)
            assert name is not None  # create=True registers the owner's collection, so there is a name
            for start in range(0, len(idx), self._batch):
                part = idx[start : start + self._batch]
                self._upsert(name, [self.texts.vector_id(records[i].memory_id) for i in part], vectors[part])
            if self.texts.collection_of(owner) != name:
                # Another writer (another process on this folder) erased the owner while these vectors went in: the
                # upsert may have made the erased collection again, unregistered, where no erasure would reach it.
                self._delete_collection(name)
                raise ErasedError(f"({owner.tenant_id!r}, {owner.user_id!r}) was erased by another writer while this "
                                  "write ran: its vectors were removed and nothing of the write is stored")

    def put_records(self, records: list[MemoryRecord], embeddings: np.ndarray) -> None:
        """The TextStore half of :meth:`add` (joins the caller's TextStore transaction, if any)."""
        if not records:
            return
        vectors = _matrix(embeddings, len(records))
        owners = _by_owner(records)
        with self.texts.transaction():
            for owner in owners:
                self.texts.collection_of(owner, create=True)
            before = {owner: self.texts.version(owner) for owner in owners}
            self.texts.put_records([
                (r.memory_id, r.tenant_id, r.user_id, r.content, _fields(r), vectors[i].tobytes())
                for i, r in enumerate(records)
            ])
            for owner, idx in owners.items():  # the write has the vectors: the cached matrix follows it
                step = functools.partial(self._cache.extend, owner.key, before[owner], self.texts.version(owner),
                                         [records[i].memory_id for i in idx], vectors[idx], limit=self.exact_max)
                self.texts.after_commit(step)

    def remove_vectors(self, records: list[MemoryRecord]) -> None:
        """Delete these records' vectors from their owners' collections (the rollback of :meth:`add_vectors`)."""
        for owner, idx in _by_owner(records).items():
            name = self.texts.collection_of(owner)
            handle = self._handle(name, create=False) if name else None
            if handle is not None:
                handle.delete(ids=[self.texts.vector_id(records[i].memory_id) for i in idx])

    def delete_vectors(self, owner: Owner, memory_ids: list[str]) -> int:
        """Remove these records' vectors from the owner's collection (for :meth:`MemoryManager.delete_records`,
        after their text-store rows are gone, under the manager's write lock). On an embedded store no file of
        Chroma's may keep them, and a deleted vector stays in Chroma's log and HNSW files: the collection is purged
        (:func:`purge_collection`) and made again under its registered name from the vectors of the owner's records
        that remain (the text store's copies), so the cost is the owner's vectors. On a server (its files are not
        this process's) or in memory: Chroma's delete. Returns how many vectors went."""
        name = self.texts.collection_of(owner)
        self._cache.pop(owner.key)
        if name is None or not memory_ids:
            return 0
        if self.chroma_dir is None:
            handle = self._handle(name, create=False)
            if handle is None:
                return 0
            before = handle.count()
            handle.delete(ids=[self.texts.vector_id(m) for m in memory_ids])
            return int(before - handle.count())
        before = self._delete_collection(name)
        ids, blobs = self.texts.vectors(owner)
        keep = [(i, b) for i, b in zip(ids, blobs) if b is not None]
        if keep:
            vectors = np.frombuffer(b"".join(b for _, b in keep), dtype=np.float32).reshape(-1, self.dim)
            vids = [self.texts.vector_id(i) for i, _ in keep]
            for start in range(0, len(vids), self._batch):
                self._upsert(name, vids[start : start + self._batch], vectors[start : start + self._batch])
        return max(before - len(keep), 0)

    def update(self, records: list[MemoryRecord]) -> int:
        """Write back the metadata (and text fields) of existing records; a record that is gone (erased)
        is not written back. Returns how many were updated."""
        if not records:
            return 0
        return self.texts.update_records([
            (r.memory_id, r.tenant_id, r.user_id, r.content, _fields(r)) for r in records
        ])

    def delete_owner(self, owner: Owner) -> dict[str, int]:
        """Delete the owner's collection (on an embedded store: its rows and index files, overwritten); the
        caller erases the TextStore rows. Returns how many vectors it held (``long_term_vectors``). What
        Chroma's own page reuse may have left in its file is :meth:`chroma_traces`' to find."""
        name = self.texts.collection_of(owner)
        self._cache.pop(owner.key)
        if name is None:
            return {"long_term_vectors": 0}
        return {"long_term_vectors": self._delete_collection(name)}

    def erase_owner_texts(self, owner: Owner, *,
                          scrub_plan: Callable[[dict[str, Any]], dict[str, Any] | None]) -> dict[str, int]:
        """Delete every text-store row of the owner (records, window, summary, decision log, ingestion marks,
        registry entry) and scrub its part out of pending write plans; counts per path, and ``others_touched``."""
        name = self.texts.collection_of(owner)
        counts = self.texts.erase_owner(owner, scrub_plan=scrub_plan)
        if name is not None:  # a writer of another process may have made the collection again since delete_owner:
            counts["long_term_vectors_late"] = self._delete_collection(name)  # with the registry gone, none can now
        return counts

    def catch_up(self) -> bool:
        """Act on what other clients of the text file (other processes; other stores in this process) entered in its
        audit trail since this store last looked: erasures above all, which emptied *their* caches, not this store's.
        Each such owner's cached vectors are dropped (every owner's, for an entry of no owner: a snapshot's restore).
        True when an entry came from another process, so the caller empties this process's caches of texts too (an
        erasure in this process has: memory/core/textcaches.py). Costs one indexed read when nothing is new (none in
        memory, where no other client can reach the texts): :class:`memory.runtime.manager.MemoryManager` calls it
        before serving a read."""
        if self._text_key is None:
            return False
        with self._seen_lock:
            entries = self.texts.audit_after(self._audit_seen)
            if not entries:
                return False
            self._audit_seen = entries[-1][0]
        for _, tenant_id, user_id in entries:
            if tenant_id or user_id:
                self._cache.pop((tenant_id, user_id))
            else:
                self._cache.clear()
        with _AUDITED_LOCK:
            here = _AUDITED_HERE.get(self._text_key, set())
            return any(seq not in here for seq, _, _ in entries)

    def registered_collections(self) -> set[str]:
        """The collection names this workspace's registry holds (one per owner with vectors): a Chroma collection of
        the folder that is none of these, nor another workspace's, is one no erasure would reach."""
        return {name for *_, name in self.texts.collections()}

    def owner_rows(self, owner: Owner) -> dict[str, int]:
        """How many rows the owner has left in each text-store table (what an erasure's verification counts)."""
        return self.texts.count_owner_rows(owner)

    def owner_vector_ids(self, owner: Owner) -> list[str]:
        """The ids under which the owner's vectors were given to Chroma (random, see TextStore.put_records)."""
        return self.texts.vector_ids(owner)

    def owner_vector_bytes(self, owner: Owner) -> tuple[list[str], list[bytes]]:
        """(memory ids, raw float32 vector bytes) of the owner's records, as the text store keeps them."""
        return self.texts.vectors(owner)

    def collection_of(self, owner: Owner) -> str | None:
        """The name of the owner's Chroma collection (None: the owner has none)."""
        return self.texts.collection_of(owner)

    def text_owners(self) -> list[tuple[str, str]]:
        """Every (tenant, user) with any text-store row (records, window, summary, ...)."""
        return self.texts.owners()

    def decisions(self, owner: Owner, *, message_id: str | None = None) -> list[dict[str, Any]]:
        """The owner's logged write-path decisions, oldest first (of one message with ``message_id``)."""
        return self.texts.decisions(owner, message_id=message_id)

    def window(self, owner: Owner) -> list[dict[str, Any]]:
        """The owner's recent window as stored (message fields), oldest first: what an erasure or an audit reads, also
        while the owner's erasure is pending (the manager's reads refuse the owner then)."""
        return self.texts.window(owner)

    def summary(self, owner: Owner) -> str:
        """The owner's rolling summary as stored ('' for none), read as :meth:`window` is."""
        return self.texts.summary(owner)[0]

    def pending_plans(self) -> list[tuple[int, dict[str, Any]]]:
        """Write plans journaled and not committed yet, as (sequence, plan)."""
        return self.texts.journal_pending()

    def table_rows(self, table: str) -> list[tuple]:
        """Every row of one text-store table that carries no file-specific value (window, summaries, ingestion marks,
        decisions, audit, journal): what a snapshot copies."""
        return self.texts.table_rows(table)

    def copy_rows(self, table: str, rows: list[tuple]) -> None:
        """Insert rows of such a table read from another workspace (joins the caller's :meth:`transaction`)."""
        self.texts.copy_rows(table, rows)

    def transaction(self):
        """One text-store transaction around everything inside (re-entrant)."""
        return self.texts.transaction()

    def audit(self, action: str, owner: Owner | None, *, actor: str, detail: dict[str, Any]) -> None:
        """Append one entry to the workspace's audit trail (known, once committed, as this process's own): of one
        owner, or of the whole workspace with None (a snapshot's restore)."""
        with self.texts.transaction():
            self.texts.audit(action, owner, actor=actor, detail=detail)
            if self._text_key is not None:
                self.texts.after_commit(functools.partial(_audited_here, self._text_key, self.texts.audit_head()))

    def audit_log(self) -> list[dict[str, Any]]:
        """The workspace's audit trail, oldest first."""
        return self.texts.audit_log()

    def close(self) -> None:
        """Close the text file and let go of the Chroma client (shared per folder: the last store closes it)."""
        self.texts.close()
        self._release()
        _drain_unused()

    def chroma_traces(self, needles: list[bytes]) -> list[tuple[bytes, int]] | None:
        """Where Chroma's database file still holds one of ``needles`` (vector ids, raw vectors), live or in
        unused space, as (needle, offset) (None when the store is not embedded). A linear read, no lock."""
        folder = self.chroma_dir
        return None if folder is None else traces(folder, needles)

    def chroma_segments(self, name: str) -> list[str] | None:
        """The segment ids of a collection in an embedded Chroma (None when not embedded or not there)."""
        folder = self.chroma_dir
        if folder is None:
            return None
        handle = self._handle(name, create=False)
        return None if handle is None else [s for s, _ in segments(folder, str(handle.id))]

    def chroma_trace_pages(self, needles: list[bytes], found: list[tuple[bytes, int]] | None = None
                           ) -> dict[int, bytes]:
        """The pages of Chroma's database file that hold one of ``needles`` (empty when not embedded); no lock.
        ``found``: what :meth:`chroma_traces` just returned (the file is then not searched again)."""
        folder = self.chroma_dir
        return {} if folder is None else trace_pages(folder, needles, found)

    def rewrite_chroma_pages(self, pages: dict[int, bytes], *, skip: set[bytes]) -> int:
        """Rewrite the Chroma rows those pages hold (not the ``skip`` ids), so the pages keep no stale bytes; the
        pages' cost, not the file's. Call it while no write of this store runs (:meth:`MemoryManager.writing`)."""
        return 0 if self.chroma_dir is None else rewrite_rows_of_pages(self.chroma_dir, pages, skip=skip)

    @property
    def text_file(self) -> Path | None:
        """The text store's SQLite file (None in memory)."""
        return self.texts.path

    def rebuild_text_file(self) -> None:
        """Rebuild the text store's file (VACUUM): clears a trace an erasure's disk scan found there. Call it while
        no write of this store runs (:meth:`MemoryManager.writing`)."""
        self.texts.rebuild()

    def rebuild_chroma_file(self) -> None:
        """Rebuild Chroma's database file (VACUUM, the file's cost): clears a trace :meth:`chroma_traces` found.
        Call it while no write of this store runs (:meth:`MemoryManager.writing`)."""
        if self.chroma_dir is not None:
            rebuild(self.chroma_dir)

    def drop(self) -> None:
        """Delete this workspace entirely: every owner's collection and the text file (best effort, never raises)."""
        try:
            names = [name for _, _, name in self.texts.collections()]
        except Exception:  # noqa: BLE001 - the text file is already closed or gone
            names = []
        for name in names:
            try:
                self._delete_collection(name)
            except Exception:  # noqa: BLE001 - already gone, or the server is down: nothing more to do
                pass
        if self.folder_id is not None:
            try:
                unbind(self.client, key=self.key, folder_id=self.folder_id)
            except Exception:  # noqa: BLE001 - the server is down: the name stays bound to this folder
                pass
        self._handles.clear()
        self._cache.clear()
        path = self.texts.path
        self.texts.close()
        self._release()
        _drain_unused()
        if path is not None:
            path.unlink(missing_ok=True)

    # --- reads --------------------------------------------------------------
    def query(
        self, embedding: np.ndarray, *, owner: Owner, n: int, scope: Scope, now: float | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """The ``n`` most similar records of one (tenant, user) within a scope, as (record, similarity)."""
        return self.query_many(np.asarray(embedding, dtype=np.float32).reshape(1, -1), owner=owner, n=n, scope=scope,
                               now=now)[0]

    def query_many(
        self, embeddings: np.ndarray, *, owner: Owner, n: int, scope: Scope, now: float | None = None
    ) -> list[list[tuple[MemoryRecord, float]]]:
        """:meth:`query` for several query vectors of one owner at once (one read of the owner's vectors)."""
        in_scope(_PROBE, scope=scope, now=now)  # a bad scope or a missing time fails before any read
        queries = np.asarray(embeddings, dtype=np.float32).reshape(-1, self.dim)
        n = max(int(n), 1)
        owned = self._owner_matrix(owner)
        if owned is None:
            return [self._ann(q, owner, n, scope, now) for q in queries]
        ids, matrix = owned
        if not ids:
            return [[] for _ in queries]
        sims = queries @ matrix.T
        return [self._take(ids, row, owner, n, scope, now) for row in sims]

    def scan(
        self, embedding: np.ndarray, *, owner: Owner, scope: Scope, now: float | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """Every record of one (tenant, user) within a scope, scored exactly, most similar first (ties by id).

        For pools covering all of a user's memories (the lab, studies): no approximate index, no cut.
        """
        records, matrix = self.owner_vectors(owner, scope=scope, now=now)
        if not records:
            return []
        distances = 1.0 - matrix @ np.asarray(embedding, dtype=np.float32).reshape(-1)
        scored = [(r, similarity_from_distance(d)) for r, d in zip(records, distances)]
        scored.sort(key=lambda rs: (-rs[1], rs[0].memory_id))
        return scored

    def owner_vectors(self, owner: Owner, *, scope: Scope = "all", now: float | None = None
                      ) -> tuple[list[MemoryRecord], np.ndarray]:
        """One owner's records within a scope and their vectors, row by row (for exact scoring by the caller)."""
        records = self.records(owner, scope=scope, now=now)
        vectors = self.embeddings([r.memory_id for r in records], owner=owner)
        records = [r for r in records if r.memory_id in vectors]
        matrix = np.stack([vectors[r.memory_id] for r in records]) if records else np.zeros((0, self.dim), np.float32)
        return records, matrix

    def records(self, owner: Owner, *, scope: Scope = "all", now: float | None = None) -> list[MemoryRecord]:
        """Every record of one (tenant, user) within a scope, oldest first."""
        found = [_record(owner, *row) for row in self.texts.records(owner)]
        kept = [r for r in found if in_scope(r.__dict__, scope=scope, now=now)]
        return sorted(kept, key=lambda r: (r.created_at, r.memory_id))

    def get(self, memory_ids: list[str], *, owner: Owner) -> dict[str, MemoryRecord]:
        """Some of one owner's records by id (ids of other owners are simply not found)."""
        if not memory_ids:
            return {}
        rows = self.texts.records(owner, list(memory_ids))
        return {row[0]: _record(owner, *row) for row in rows}

    def embeddings(self, memory_ids: list[str], *, owner: Owner) -> dict[str, np.ndarray]:
        """Stored vectors of some of one owner's records."""
        if not memory_ids:
            return {}
        ids, blobs = self.texts.vectors(owner, list(memory_ids))
        return {i: np.frombuffer(b, dtype=np.float32) for i, b in zip(ids, blobs) if b is not None}

    def count(self, owner: Owner | None = None) -> int:
        """Records in the workspace: all of them, or one (tenant, user)'s."""
        return self.texts.count_texts(owner)

    def vector_count(self, owner: Owner) -> int:
        """Vectors in the owner's Chroma collection (0 when it has none): what the vector store itself says."""
        name = self.texts.collection_of(owner)
        handle = self._handle(name, create=False) if name else None
        return handle.count() if handle is not None else 0

    def collection_exists(self, name: str) -> bool:
        """Whether Chroma still has a collection of this name (the erasure check)."""
        try:
            self.client.get_collection(name)
        except Exception:  # noqa: BLE001 - NotFoundError and its relatives
            return False
        return True

    def consistency(self) -> dict[str, int]:
        """Compare every owner's collection with the owner's records (an administrative check that reads the
        whole workspace): vectors without a record, records without a vector, ids held twice."""
        vectors: list[str] = []
        records: set[str] = set()
        for tenant_id, user_id, name in self.texts.collections():
            handle = self._handle(name, create=False)
            vectors += handle.get(include=[])["ids"] if handle is not None else []
            records |= set(self.texts.vector_ids(Owner(tenant_id, user_id)))
        held = set(vectors)
        return {"vectors": len(vectors), "records": len(records), "vectors_without_record": len(held - records),
                "records_without_vector": len(records - held), "duplicates": len(vectors) - len(held)}

    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant_id, user_id) with records (an administrative listing, not a recall path)."""
        return self.texts.record_owners()

    # --- internals ----------------------------------------------------------
    def _owner_matrix(self, owner: Owner) -> tuple[list[str], np.ndarray] | None:
        """The owner's ids and vectors for an exact scan (cached by version); None when the owner has more
        than ``exact_max`` records (ranked by the HNSW index instead)."""
        version = self.texts.version(owner)
        if version is None:
            return [], np.zeros((0, self.dim), np.float32)
        key = owner.key
        hit = self._cache.get(key, version)
        if hit is not None:
            return hit.value
        if self.texts.count_texts(owner) > self.exact_max:
            self._cache.put(key, version, None, 0)
            return None
        ids, blobs = self.texts.vectors(owner)
        keep = [i for i, b in enumerate(blobs) if b is not None]
        matrix = np.frombuffer(b"".join(blobs[i] for i in keep), dtype=np.float32).reshape(-1, self.dim)
        value = ([ids[i] for i in keep], matrix)
        self._cache.put(key, version, value, matrix.nbytes)
        return value

    def _take(self, ids: list[str], sims: np.ndarray, owner: Owner, n: int, scope: Scope, now: float | None
              ) -> list[tuple[MemoryRecord, float]]:
        """The best ``n`` in-scope records by exact similarity: records are read in rank order, a widening
        chunk at a time, until ``n`` are in scope or none is left."""
        out: list[tuple[MemoryRecord, float]] = []
        start, chunk = 0, n + 4
        while start < len(sims) and len(out) < n:
            order = top_order(sims, start + chunk)[start:]
            part = [ids[j] for j in order]
            found = self.get(part, owner=owner)
            for j, memory_id in zip(order, part):
                record = found.get(memory_id)
                if record is not None and in_scope(record.__dict__, scope=scope, now=now):
                    out.append((record, similarity_from_distance(1.0 - float(sims[j]))))
            start, chunk = start + chunk, chunk * 4
        return out[:n]

    def _ann(self, query: np.ndarray, owner: Owner, n: int, scope: Scope, now: float | None
             ) -> list[tuple[MemoryRecord, float]]:
        """The best ``n`` in-scope records through the owner's HNSW index, widening ``n_results`` until enough
        are in scope or the whole collection was returned."""
        name = self.texts.collection_of(owner)
        handle = self._handle(name, create=False) if name else None
        if handle is None:
            return []
        total, k = self.texts.count_texts(owner), 2 * n
        while True:
            k = min(k, total)
            res = handle.query(query_embeddings=query.reshape(1, -1), n_results=max(k, 1), include=["distances"])
            vids, dists = res["ids"][0], res["distances"][0]
            to_memory = self.texts.memory_ids_of(owner, vids)
            found = self.get(list(to_memory.values()), owner=owner)
            out = []
            for vid, d in zip(vids, dists):
                record = found.get(to_memory.get(vid, ""))
                if record is not None and in_scope(record.__dict__, scope=scope, now=now):
                    out.append((record, similarity_from_distance(d)))
            if len(out) >= n or k >= total:
                return out[:n]
            k *= 4

    def _handle(self, name: str, *, create: bool) -> Any:
        """A Chroma collection by name (cached); None when it does not exist and ``create`` is off."""
        handle = self._handles.get(name)
        if handle is not None:
            return handle
        if create:
            handle = self.client.get_or_create_collection(
                name, configuration={"hnsw": {"space": "cosine", "ef_search": 200, "ef_construction": 200,
                                          "batch_size": HNSW_BATCH, "sync_threshold": HNSW_BATCH}},
                metadata={"embedder": self.embedder_name, "dim": self.dim}, embedding_function=None,
            )
        else:
            try:
                handle = self.client.get_collection(name)
            except Exception:  # noqa: BLE001 - NotFoundError: the owner has no vectors in Chroma
                return None
        self._handles[name] = handle
        return handle

    def _upsert(self, name: str, ids: list[str], vectors: np.ndarray) -> None:
        try:
            self._handle(name, create=True).upsert(ids=ids, embeddings=vectors)
        except Exception:  # noqa: BLE001 - a handle another manager's erasure made stale: reopen once
            self._handles.pop(name, None)
            self._handle(name, create=True).upsert(ids=ids, embeddings=vectors)

    def _delete_collection(self, name: str) -> int:
        """Delete a collection; 0 when it is gone, also when another writer of the folder deleted it meanwhile. Chroma
        answers a collection another process is deleting at that moment with an InternalError ("Missing metadata
        segment"): that is tried again, a few times, before it is raised."""
        self._handles.pop(name, None)
        for attempt in range(DELETE_ATTEMPTS):
            try:
                return self._delete_collection_once(name)
            except Exception as exc:
                if type(exc).__name__ == "NotFoundError":  # another process's erasure (or write's undo) was first
                    return 0
                if type(exc).__name__ != "InternalError" or attempt == DELETE_ATTEMPTS - 1:
                    raise
                time.sleep(0.05 * 2 ** attempt)
        return 0  # not reached: the last attempt returns or raises

    def _delete_collection_once(self, name: str) -> int:
        folder = self.chroma_dir
        if folder is not None:
            return purge_collection(self.client, folder, name)
        try:
            handle = self.client.get_collection(name)
        except Exception:  # noqa: BLE001 - already gone
            return 0
        count = handle.count()
        self.client.delete_collection(name)
        return count


class VectorCache:
    """Owners' vectors in memory for exact scans, keyed by the owner's version, least recently used out first."""

    def __init__(self, budget_mb: float) -> None:
        self.budget = int(budget_mb * 1024 * 1024)
        self.used = 0
        self._items: OrderedDict[tuple[str, str], _Cached] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str], version: int) -> "_Cached | None":
        with self._lock:
            hit = self._items.get(key)
            if hit is None or hit.version != version:
                return None
            self._items.move_to_end(key)
            return hit

    def put(self, key: tuple[str, str], version: int, value: Any, nbytes: int) -> None:
        with self._lock:
            self._drop(key)
            self._insert(key, version, value, nbytes)

    def extend(self, key: tuple[str, str], version: int | None, new_version: int | None, ids: list[str],
               vectors: np.ndarray, *, limit: int) -> None:
        """Keep an owner's cached matrix current after a committed write that took it from ``version`` to
        ``new_version``: the written rows replace their ids' rows and go to the end, as the text store orders them
        (an INSERT OR REPLACE is a new row). A cache holding another version (another writer's, or none) is left
        alone, and an owner grown past ``limit`` rows (ranked by its HNSW index from now on) is dropped: the next
        read loads the owner again."""
        with self._lock:
            hit = self._items.get(key)
            if hit is None or hit.version != version or new_version is None or hit.value is None:
                return
            old_ids, matrix = hit.value
            rows = dict(zip(old_ids, range(len(old_ids))))
            for memory_id in ids:
                rows.pop(memory_id, None)
            keep = list(rows.values())
            order = list(rows) + list(dict.fromkeys(reversed(ids)))[::-1]
            latest = {memory_id: i for i, memory_id in enumerate(ids)}  # the last write of an id wins
            self._drop(key)
            if len(order) > limit:
                return
            stacked = np.concatenate([matrix[keep], vectors[[latest[m] for m in order[len(keep):]]]])
            self._insert(key, new_version, (order, stacked), stacked.nbytes)

    def pop(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._drop(key)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.used = 0

    def _insert(self, key: tuple[str, str], version: int, value: Any, nbytes: int) -> None:
        """Under the lock, ``key`` absent: keep the value if it fits the budget, least recently used out first."""
        if nbytes > self.budget:
            return
        self._items[key] = _Cached(version, value, nbytes)
        self.used += nbytes
        while self.used > self.budget:
            self._drop(next(iter(self._items)))

    def _drop(self, key: tuple[str, str]) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.used -= old.nbytes


@dataclass(frozen=True)
class _Cached:
    version: int
    value: Any
    nbytes: int


def _cache_mb_from_env() -> float:
    text = os.environ.get(CACHE_ENV, str(DEFAULT_CACHE_MB))
    try:
        value = float(text)
    except ValueError:
        raise MemoryLabError(f"{CACHE_ENV} must be a number of megabytes, got {text!r}") from None
    if not value >= 0:
        raise MemoryLabError(f"{CACHE_ENV} must be 0 or more, got {text!r}")
    return value


def top_order(sims: np.ndarray, k: int) -> np.ndarray:
    """The indices of the ``k`` highest values, highest first, ties by index: the first ``k`` of a stable
    descending argsort, without sorting the rest (a partition, then a sort of the few kept)."""
    if k >= len(sims):
        return np.argsort(-sims, kind="stable")
    kth = np.partition(sims, len(sims) - k)[len(sims) - k]
    top = np.flatnonzero(sims >= kth)  # every tie of the k-th value, so the index order decides as argsort would
    return top[np.lexsort((top, -sims[top]))][:k]


def _matrix(embeddings: np.ndarray, rows: int) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32).reshape(rows, -1))


def _by_owner(records: list[MemoryRecord]) -> dict[Owner, list[int]]:
    """The records' indexes by owner (each owner made once, from its records' identifiers)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(records):
        groups.setdefault((r.tenant_id, r.user_id), []).append(i)
    return {Owner(*key): idx for key, idx in groups.items()}


def _fields(r: MemoryRecord) -> dict[str, Any]:
    """A record's fields other than its id, owner and content (what the TextStore keeps as JSON)."""
    out = field_values(r)
    for name in ("memory_id", "tenant_id", "user_id", "content"):
        del out[name]
    return out


def _record(owner: Owner, memory_id: str, content: str, fields: dict[str, Any]) -> MemoryRecord:
    return MemoryRecord(memory_id=memory_id, tenant_id=owner.tenant_id, user_id=owner.user_id, content=content, **fields)


_PROBE = {"archived": False, "is_deprecated": False, "valid_until": 0.0}
