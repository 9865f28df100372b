"""The write path: turn -> atomic facts -> candidates -> adjudication -> versioned records, with a decision log.

``Ingestor(manager).ingest(message)`` runs synchronously and returns the decision-log
entries; ``ingest_async(message)`` enqueues and returns at once (one worker thread
drains the queue, ``flush()`` waits). Recall never waits for ingestion: the worker
holds the manager's lock only while it writes a batch, never while it extracts,
embeds or queries.

Per fact:

* candidates are the nearest stored facts of the same (tenant, user), read from the
  owner's own records (``MemoryStore.query_many`` with scope ``active``: not deprecated, not archived,
  not expired), then kept to the fact's category and to facts (raw messages stored by
  ``MemoryManager.add`` are not facts); facts accepted earlier in the same batch are
  candidates too;
* :func:`memory.adjudicate.adjudicate` decides; the decision is applied:
  ``duplicate`` bumps the stored fact's ``access_count`` and ``last_verified_at`` (no
  new vector); ``update`` deprecates the old record (``superseded_by`` = new id) and
  stores the new one with ``version = old + 1`` and ``supersedes`` = old id;
  ``coexist`` and ``new`` store the fact (with its context tag).

Ingestion is idempotent: fact ids are derived from (tenant, user, message id, fact
text), and a message whose decisions are already logged is not processed again.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .adjudicate import CandidateRef, Decision, adjudicate
from .errors import ErasedError, InputError
from .extract import Fact, extract_facts
from .journal import Plan
from .schema import MemoryRecord, Message, validate_identifier, validate_text

if TYPE_CHECKING:
    from .manager import MemoryManager

Extractor = Callable[..., list[Fact]]
Progress = Callable[[int, int], None]

CANDIDATES = 5
"""Stored facts of the same category a new fact is judged against."""
OVERFETCH = 4
"""The store query asks for CANDIDATES * OVERFETCH neighbours before keeping the fact's category."""


def fact_id_for(message: Message, fact: Fact) -> str:
    """Deterministic id of a fact of a message: the same message ingested twice gives the same ids."""
    key = f"{message.tenant_id}\x1f{message.user_id}\x1f{message.id}\x1f{fact.text}"
    return "fact-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True)
class LogEntry:
    """One decision of the write path, as persisted in the decision log."""

    tenant_id: str
    user_id: str
    message_id: str
    """The message the fact came from."""
    memory_id: str
    """The record that holds the fact afterwards: the new record, or the stored one for a duplicate."""
    category: str
    """The fact's category (candidates were drawn from this category only)."""
    context: str
    """The fact's context qualifier ('' when none)."""
    decision: Decision
    """Fact, candidate, similarity, plain rule, governed decision and reason."""
    at: float
    """When the decision was taken (the message's time), POSIX seconds."""
    superseded: str = ""
    """For an update: the id of the record it retired."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id, "user_id": self.user_id, "message_id": self.message_id,
            "memory_id": self.memory_id, "category": self.category, "context": self.context,
            "superseded": self.superseded, "at": self.at, **self.decision.to_dict(),
        }


@dataclass
class _Pending:
    """A fact on its way through a batch."""

    message: Message
    fact: Fact
    memory_id: str
    vector: np.ndarray


class Ingestor:
    """The governed write path of a :class:`MemoryManager` (uses its store, embedder and config).

    Args:
        manager: where facts are stored.
        extractor: ``extractor(text, max_chars=...) -> [Fact]``; the deterministic
            :func:`memory.extract.extract_facts` by default (injectable for tests).
        candidates: stored facts each fact is judged against.
        roles: message roles facts are extracted from (assistant and tool turns speak
            about themselves, not about the user).
        batch_size: messages per batch (one embedding call and one store query per owner).
    """

    def __init__(
        self, manager: "MemoryManager", *, extractor: Extractor = extract_facts, candidates: int = CANDIDATES,
        roles: Sequence[str] = ("user",), batch_size: int = 256,
    ) -> None:
        if candidates < 1:
            raise InputError(f"candidates must be >= 1, got {candidates}")
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        self.manager = manager
        self.extractor = extractor
        self.candidates = candidates
        self.roles = tuple(roles)
        self.batch_size = batch_size
        self._write_lock = threading.Lock()  # one batch at a time through adjudication and writing
        self._queue: queue.Queue[tuple[Message, Future, dict] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()

    # --- synchronous ------------------------------------------------------------------------
    def ingest(self, message: Message) -> list[LogEntry]:
        """Extract, adjudicate and store one message's facts; returns its decision-log entries."""
        return self.ingest_many([message])

    def ingest_many(self, messages: Sequence[Message], *, progress: Progress | None = None) -> list[LogEntry]:
        """Ingest messages in order, in batches. Every message is validated first: bad input changes nothing."""
        for i, m in enumerate(messages):
            self._validate(m, f"messages[{i}]")
        epochs = self.manager.epochs({(m.tenant_id, m.user_id) for m in messages})
        out: list[LogEntry] = []
        for start in range(0, len(messages), self.batch_size):
            out += self._ingest_batch(list(messages[start : start + self.batch_size]), epochs)
            if progress:
                progress(min(start + self.batch_size, len(messages)), len(messages))
        return out

    # --- asynchronous -----------------------------------------------------------------------
    def ingest_async(self, message: Message) -> "Future[list[LogEntry]]":
        """Validate, enqueue and return at once; the future resolves to the message's log entries."""
        self._validate(message, "message")
        future: Future[list[LogEntry]] = Future()
        self._ensure_worker()
        epoch = self.manager.epochs([(message.tenant_id, message.user_id)])
        self._queue.put((message, future, epoch))
        return future

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every enqueued message has been ingested (or failed: see each future)."""
        if timeout is None:
            self._queue.join()
            return
        done = threading.Event()
        threading.Thread(target=lambda: (self._queue.join(), done.set()), daemon=True).start()
        if not done.wait(timeout):
            raise TimeoutError(f"ingestion queue not drained after {timeout} s ({self.pending} pending)")

    @property
    def pending(self) -> int:
        """Messages enqueued and not yet ingested."""
        return self._queue.unfinished_tasks

    def close(self) -> None:
        """Drain the queue and stop the worker."""
        with self._worker_lock:
            worker = self._worker
            if worker is None:
                return
            self._queue.put(None)
            self._worker = None
        worker.join()

    def _ensure_worker(self) -> None:
        with self._worker_lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._drain, name="memory-ingest", daemon=True)
                self._worker.start()

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            batch = [item]
            while item is not None and len(batch) < self.batch_size:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                batch.append(item)
            work = [b for b in batch if b is not None]
            try:
                if work:
                    self._run_async_batch(work)
            finally:
                for _ in batch:
                    self._queue.task_done()
            if any(b is None for b in batch):
                return

    def _run_async_batch(self, work: list[tuple[Message, Future, dict[tuple[str, str], int]]]) -> None:
        """Ingest a drained batch; a message whose user was erased after it was queued is dropped (ErasedError)."""
        epochs: dict[tuple[str, str], int] = {}
        for _, _, epoch in work:
            epochs.update(epoch)  # one owner's queued messages share an epoch unless an erase came between
        try:
            entries = self._ingest_batch([m for m, _, e in work if e == {k: epochs[k] for k in e}], epochs)
        except BaseException as exc:  # every waiting caller learns of the failure
            for _, fut, _ in work:
                fut.set_exception(exc)
            return
        now = self.manager.epochs(epochs)
        for message, fut, epoch in work:
            owner = (message.tenant_id, message.user_id)
            if epoch[owner] != now[owner] or epoch[owner] != epochs[owner]:
                fut.set_exception(ErasedError(
                    f"({message.tenant_id!r}, {message.user_id!r}) was erased while message {message.id!r} "
                    "was queued; it was not stored"))
            else:
                fut.set_result([e for e in entries if (e.tenant_id, e.user_id, e.message_id)
                                == (message.tenant_id, message.user_id, message.id)])

    # --- inspection -------------------------------------------------------------------------
    def decisions(self, *, tenant_id: str, user_id: str, message_id: str | None = None) -> list[dict[str, Any]]:
        """The persisted decision log of one (tenant, user), oldest first."""
        validate_identifier(tenant_id, "tenant_id")
        validate_identifier(user_id, "user_id")
        return self.manager.store.texts.decisions(tenant_id, user_id, message_id=message_id)

    def version_chain(self, memory_id: str, *, tenant_id: str, user_id: str) -> list[MemoryRecord]:
        """Every version of a fact, oldest first (see :func:`memory.lifecycle.version_chain`)."""
        from .lifecycle import version_chain

        return version_chain(self.manager, memory_id, tenant_id=tenant_id, user_id=user_id)

    # --- the batch ----------------------------------------------------------------------------
    def _validate(self, message: Any, where: str) -> None:
        if not isinstance(message, Message):
            raise InputError(f"{where} must be a Message, got {type(message).__name__}")
        validate_text(message.content, f"{where} ({message.id}) content", max_chars=self.manager.config.max_message_chars)

    def _ingest_batch(self, messages: list[Message], epochs: dict[tuple[str, str], int] | None = None) -> list[LogEntry]:
        manager = self.manager
        if epochs is None:
            epochs = manager.epochs({(m.tenant_id, m.user_id) for m in messages})
        with self._write_lock:
            fresh, replayed = self._split_done(messages)
            pending = self._extract(fresh)
            if pending:
                vectors = manager.embedder.embed([p.fact.text for p in pending])
                for p, v in zip(pending, vectors):
                    p.vector = v
            entries, added, changed = self._decide(pending)
            with manager._lock:  # short: the writes only (journaled: see memory.journal)
                plan = Plan(
                    add=[r for r, _ in added], vectors=np.stack([v for _, v in added]) if added else None,
                    update=_rebase(manager.store, changed), window=fresh,
                    decisions=[(e.tenant_id, e.user_id, e.message_id, e.at, e.to_dict()) for e in entries],
                    ingested=[(m.tenant_id, m.user_id, m.id) for m in fresh],
                )
                applied = manager.apply(plan, epochs=epochs)
        kept = {(t, u) for t, u, _ in applied.ingested}
        return replayed + [e for e in entries if (e.tenant_id, e.user_id) in kept]

    def _split_done(self, messages: list[Message]) -> tuple[list[Message], list[LogEntry]]:
        """Messages not ingested yet (each once), and the logged entries of those that were."""
        texts = self.manager.store.texts
        fresh = self.manager.not_ingested(messages)
        fresh_keys = {(m.tenant_id, m.user_id, m.id) for m in fresh}
        replayed, seen = [], set()
        for m in messages:
            key = (m.tenant_id, m.user_id, m.id)
            if key not in fresh_keys and key not in seen:
                replayed += [_entry_from_log(d) for d in texts.decisions(m.tenant_id, m.user_id, message_id=m.id)]
            seen.add(key)
        return fresh, replayed

    def _extract(self, messages: list[Message]) -> list[_Pending]:
        out: list[_Pending] = []
        for m in messages:
            if m.role not in self.roles:
                continue
            ids: set[str] = set()
            for fact in self.extractor(m.content, max_chars=self.manager.config.max_message_chars):
                fid = fact_id_for(m, fact)
                if fid not in ids:
                    ids.add(fid)
                    out.append(_Pending(m, fact, fid, np.zeros(0, dtype=np.float32)))
        return out

    def _decide(self, pending: list[_Pending]
                ) -> tuple[list[LogEntry], list[tuple[MemoryRecord, np.ndarray]], list[tuple[MemoryRecord, MemoryRecord]]]:
        """Adjudicate every fact in order; returns log entries, records to add and (as read, as changed) stored records."""
        cfg = self.manager.config
        stored = self._stored_candidates(pending)
        entries: list[LogEntry] = []
        added: dict[str, tuple[MemoryRecord, np.ndarray]] = {}
        changed: dict[str, MemoryRecord] = {}
        shelf: dict[tuple[str, str, str], list[str]] = {}  # (tenant, user, category) -> ids added in this batch
        for i, p in enumerate(pending):
            owner = (p.message.tenant_id, p.message.user_id)
            pool = [(changed.get(r.memory_id, r), s) for r, s in stored[i]
                    if r.category == p.fact.category and r.memory_id.startswith("fact-")]
            for mid in shelf.get((*owner, p.fact.category), ()):
                r, v = added[mid]
                pool.append((r, float(v @ p.vector)))
            pool = [(r, s) for r, s in pool if not r.is_deprecated and r.memory_id != p.memory_id]
            pool.sort(key=lambda rs: (-rs[1], rs[0].memory_id))
            pool = pool[: self.candidates]
            by_id = {r.memory_id: r for r, _ in pool}
            decision = adjudicate(p.fact.text, [(CandidateRef(r.memory_id, r.content), s) for r, s in pool], config=cfg)
            at = p.message.timestamp if p.message.timestamp is not None else self.manager.clock()
            target = by_id.get(decision.candidate.id) if decision.candidate else None
            memory_id, superseded = p.memory_id, ""
            if decision.decision == "duplicate" and target is not None:
                bumped = replace(target, access_count=target.access_count + 1,
                                 last_verified_at=max(target.last_verified_at, at),
                                 source_message_ids=_with(target.source_message_ids, p.message.id))
                self._keep(bumped, added, changed)
                memory_id = target.memory_id
            else:
                record = self._record(p, at)
                if decision.decision == "update" and target is not None:
                    record.version, record.supersedes = target.version + 1, target.memory_id
                    self._keep(replace(target, is_deprecated=True, superseded_by=record.memory_id), added, changed)
                    superseded = target.memory_id
                added[record.memory_id] = (record, p.vector)
                shelf.setdefault((*owner, p.fact.category), []).append(record.memory_id)
            entries.append(LogEntry(owner[0], owner[1], p.message.id, memory_id, p.fact.category, p.fact.context,
                                    decision, at, superseded))
        read = {r.memory_id: r for row in stored for r, _ in row}
        return entries, list(added.values()), [(read[i], c) for i, c in changed.items()]

    @staticmethod
    def _keep(record: MemoryRecord, added: dict, changed: dict) -> None:
        """A changed record: still in this batch's additions (rewrite it there) or already stored (update it)."""
        if record.memory_id in added:
            added[record.memory_id] = (record, added[record.memory_id][1])
        else:
            changed[record.memory_id] = record

    def _record(self, p: _Pending, at: float) -> MemoryRecord:
        m, f = p.message, p.fact
        return MemoryRecord(
            memory_id=p.memory_id, tenant_id=m.tenant_id, user_id=m.user_id, content=f.text, session_id=m.session_id,
            category=f.category, created_at=at, last_accessed_at=at, last_verified_at=at,
            importance=0.5 if m.importance is None else float(m.importance), role=m.role, message_id=m.id,
            domain_tags=list(f.domain_tags), entities=list(f.entities),
            context_tags=[f.context] if f.context else [], source_message_ids=[m.id],
        )

    def _stored_candidates(self, pending: list[_Pending]) -> list[list[tuple[MemoryRecord, float]]]:
        """Nearest active stored facts of each fact's owner: one read of that owner's records per batch
        (:meth:`MemoryStore.query_many`), never anyone else's."""
        out: list[list[tuple[MemoryRecord, float]]] = [[] for _ in pending]
        groups: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(pending):
            groups.setdefault((p.message.tenant_id, p.message.user_id), []).append(i)
        store, k = self.manager.store, self.candidates * OVERFETCH
        for (tenant_id, user_id), idx in groups.items():
            now = max((pending[i].message.timestamp or self.manager.clock()) for i in idx)
            vecs = np.stack([pending[i].vector for i in idx]).astype(np.float32)
            found = store.query_many(vecs, tenant_id=tenant_id, user_id=user_id, n=k, scope="active", now=now)
            for i, pairs in zip(idx, found):
                out[i] = pairs
        return out


def _rebase(store, changed: list[tuple[MemoryRecord, MemoryRecord]]) -> list[MemoryRecord]:
    """Re-read changed records and apply only this batch's changes to them.

    Recall may have reinforced a record (access_count, last_accessed_at) since the batch read it;
    writing back the stale copy would undo that. Records gone meanwhile (erased) are skipped.
    """
    out: list[MemoryRecord] = []
    owners: dict[tuple[str, str], list[tuple[MemoryRecord, MemoryRecord]]] = {}
    for read, ours in changed:
        owners.setdefault((read.tenant_id, read.user_id), []).append((read, ours))
    for (tenant_id, user_id), pairs in owners.items():
        now = store.get([r.memory_id for r, _ in pairs], tenant_id=tenant_id, user_id=user_id)
        for read, ours in pairs:
            fresh = now.get(read.memory_id)
            if fresh is None:
                continue
            out.append(replace(
                fresh, access_count=fresh.access_count + ours.access_count - read.access_count,
                last_verified_at=max(fresh.last_verified_at, ours.last_verified_at),
                source_message_ids=fresh.source_message_ids + [m for m in ours.source_message_ids
                                                               if m not in fresh.source_message_ids],
                is_deprecated=fresh.is_deprecated or ours.is_deprecated,
                superseded_by=ours.superseded_by or fresh.superseded_by,
            ))
    return out


def _with(ids: list[str], new_id: str) -> list[str]:
    return list(ids) if new_id in ids else [*ids, new_id]


def _entry_from_log(d: dict[str, Any]) -> LogEntry:
    cand = d.get("candidate")
    decision = Decision(d["fact"], CandidateRef(cand["id"], cand["text"]) if cand else None, d.get("similarity"),
                        d["plain_rule"], d["decision"], d["reason"], d.get("reason_zh", ""))
    return LogEntry(d["tenant_id"], d["user_id"], d["message_id"], d["memory_id"], d["category"], d["context"],
                    decision, d["at"], d.get("superseded", ""))
