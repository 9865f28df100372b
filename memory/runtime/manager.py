"""MemoryManager: the three memory tracks of every (tenant, user), and the governed paths into a prompt.

* recent window: the last ``window_size`` messages, verbatim;
* summary: what left the window, compressed (bounded, with source message ids);
* long-term store: every message as a MemoryRecord in Chroma (text in the TextStore).

Every read takes ``tenant_id`` and ``user_id`` and sees only that pair's data.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import time
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from memory.core.textcaches import clear_text_caches, text_cache
from memory.core.config import MemoryConfig
from memory.core.errors import BusyError, DiskFullError, ErasedError, InputError, WriteError
from memory.embed.embedders import Embedder, make_embedder
from memory.store.journal import Plan
from memory.store.space import check_space, estimate_bytes, full_message, is_disk_full
from memory.runtime.recall import Candidates, govern
from memory.core.schema import (
    Context, EraseReport, Hit, MemoryRecord, Message, PathCheck, RecallResult, field_values, parse_time, validate_identifier,
    OwnerArgs, validate_text,
)
from memory.store.chroma import MemoryStore, Scope, StoreLocation
from memory.runtime.summary import Compressor, extractive_compressor
from memory.core.tokens import TokenCounter, count_tokens

Progress = Callable[[int, int], None]
"""progress(done, total), called as work advances (for progress bars)."""

_QUERY_CACHE_SIZE = 256
EMBED_CHUNK = 1024
"""add_many embeds this many messages per embedder call (the embedder sorts them by length before batching)."""
PLAN_MESSAGES = 4 * EMBED_CHUNK
"""add_many's default plan: at most this many messages in one journaled write (one Chroma call per owner). With many
owners the calls, not the vectors, are the cost (about 12 to 20 ms each): 100 users, 20,000 messages on disk took 7.7x
raw Chroma's add at 1,024 and 2.8x at 4,096 with owners interleaved, 1.87x with each owner's messages together
(:func:`owner_order`; ``python -m bench.bulk_write``)."""
PLAN_CHARS = 2_000_000
"""...and at most this many characters of text, so a plan of long messages stays a few megabytes in the journal."""
RETRIES = 3
"""How many times each half of a journaled write is tried before the write is rolled back and raised."""
WRITE_WAIT_ENV = "MEMORY_WRITE_WAIT_S"
DEFAULT_WRITE_WAIT_S = 120.0
"""How long a write or an erasure waits for the manager's write lock (or for an erasure of its owner to report)
before it gives up with :class:`~memory.core.errors.BusyError`: no caller waits without bound behind another."""


@text_cache(maxsize=4 * PLAN_MESSAGES)  # asked for many times per message of a plan: it holds a few plans' messages
def memory_id_for(message: Message) -> str:
    """Deterministic record id of a message: the message's identity, so a true retry is a no-op.

    The identity is (tenant, user, session, message id, content), plus the timestamp when the
    message id was derived from the content (a message built without an id):

    * a true retry (same id, same session, same content) has the same id: stored once;
    * the same message id in another session, or with other content, is another message: it is
      kept apart, never dropped, and never answered with the other message's record;
    * a message without an id that repeats an earlier turn ("budget is 300", "200", "300") is
      a new turn when its time differs (see :func:`stamped`), so a restated value is stored.

    Also the commit mark of the write path (see :meth:`MemoryManager.not_ingested`) and the base of
    fact ids (:func:`memory.write.ingest.fact_id_for`).
    """
    content = hashlib.sha1(message.content.encode("utf-8")).hexdigest()
    parts = [message.tenant_id, message.user_id, message.session_id, message.id, content]
    if _derived_id(message):
        parts.append(repr(None if message.timestamp is None else float(message.timestamp)))
    return "mem-" + hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:20]


def stamped(messages: Sequence[Message], clock: Callable[[], float]) -> list[Message]:
    """The messages, each one without an id and without a timestamp given the time it is accepted.

    Such a message is identified by its content and its time (:func:`memory_id_for`); stamping it
    when it is accepted makes saying the same thing again a new turn. Times given here increase
    strictly within one call, so two equal turns in one call are two turns. A retry of a message
    without an id is therefore a new turn too: give messages ids (or timestamps) to make retries
    idempotent.
    """
    out: list[Message] = []
    last = float("-inf")
    for m in messages:
        if m.timestamp is None and _derived_id(m):
            last = max(float(clock()), math.nextafter(last, math.inf))
            m = replace(m, timestamp=last)
        out.append(m)
    return out


def _derived_id(message: Message) -> bool:
    """Was the message's id derived from its content (schema.Message without an id)?"""
    digest = hashlib.sha1(f"{message.tenant_id}\x1f{message.user_id}\x1f{message.content}".encode()).hexdigest()
    return message.id == f"msg-{digest[:16]}"


class MemoryManager:
    """Three-track, per-(tenant, user) agent memory on Chroma.

    Args:
        config: knobs and defaults; see :class:`MemoryConfig`.
        embedder: an :class:`Embedder`; default MiniLM (offline).
        location: where the store lives; default in memory. Use
            ``StoreLocation.from_env()`` for the data folder / server.
        workspace: separates independent labs sharing one Chroma (one collection each).
        compressor: folds expired window messages into the summary.
        clock: returns POSIX seconds; injectable for deterministic tests.
        token_counter: counts tokens for the memory budget.
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        embedder: Embedder | None = None,
        location: StoreLocation | None = None,
        workspace: str | None = None,
        compressor: Compressor = extractive_compressor,
        clock: Callable[[], float] = time.time,
        token_counter: TokenCounter = count_tokens,
    ) -> None:
        self.config = config or MemoryConfig()
        self.embedder = embedder or make_embedder("minilm")
        self.location = location or StoreLocation()
        self.workspace = workspace or f"ws-{uuid.uuid4().hex[:12]}"
        self.store = MemoryStore(
            location=self.location, workspace=self.workspace, embedder_name=self.embedder.name, dim=self.embedder.dim
        )
        self.compressor = compressor
        self.clock = clock
        self.token_counter = token_counter
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.RLock()
        self._cache_lock = threading.Lock()
        """Guards the query cache alone, so a recall never waits behind a write for it."""
        self._epochs: dict[tuple[str, str], int] = {}
        self._verifying: dict[tuple[str, str], int] = {}
        """Owners whose erasure is being verified (how many erasures): their writes wait (:meth:`apply`)."""
        self._idle = threading.Condition(self._lock)
        self.recovered = self.recover()
        """How many interrupted write plans were rolled forward when this manager opened its store."""

    # --- write --------------------------------------------------------------
    def add(self, message: Message) -> MemoryRecord:
        """Add one message to the user's window and long-term store; returns its record."""
        return self.add_many([message])[0]

    def add_many(self, messages: Sequence[Message], *, progress: Progress | None = None,
                 batch_size: int | None = None) -> list[MemoryRecord]:
        """Add messages in order, embedding them in batches; returns each message's record.

        Each owner's messages are written together, in their order (:func:`owner_order`; owners in order of first
        appearance), in journaled plans of ``batch_size`` messages; by default (None) a plan is sized by the work, up
        to :data:`PLAN_MESSAGES` messages and :data:`PLAN_CHARS` characters, so a bulk write makes about one Chroma
        call per owner (one per owner per plan) rather than one per few messages. A true retry (same id, session and content: see :func:`memory_id_for`) is skipped and
        answered with the stored record; any other message is stored, as its own record. Every
        message is validated before anything is written, so bad input leaves the store as it was.
        Each batch is journaled (see :mod:`memory.store.journal`), so a crash leaves every message either
        fully stored or absent. Messages of a user erased while this call ran are dropped (the
        erasure is a barrier): every other message is stored, then ErasedError names the dropped.
        """
        for i, m in enumerate(messages):
            if not isinstance(m, Message):
                raise TypeError(f"messages[{i}] must be a Message, got {type(m).__name__}")
            validate_text(m.content, f"messages[{i}] ({m.id}) content", max_chars=self.config.max_message_chars)
        if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                       or batch_size < 1):
            raise InputError(f"batch_size must be a whole number >= 1, got {batch_size!r}")
        given = stamped(messages, self.clock)
        order = owner_order(given)  # each owner's messages together, in their order: one Chroma call per owner
        messages = [given[i] for i in order]
        epochs = self.epochs({(m.tenant_id, m.user_id) for m in messages})
        out: list[MemoryRecord] = []
        dropped: list[Message] = []
        vectors_of: dict[str, np.ndarray] = {}
        for start, end in plan_bounds(messages, batch_size):
            batch = messages[start:end]
            fresh = self.not_ingested(batch)
            records = [self.record_for(m) for m in fresh]
            if any(r.memory_id not in vectors_of for r in records):  # embed ahead, a large chunk per call
                vectors_of = self._embed_fresh(messages[start : max(end, start + EMBED_CHUNK)])
            vectors = np.stack([vectors_of[r.memory_id] for r in records]) if records else None
            applied = self.apply(Plan(add=records, vectors=vectors, window=fresh,
                                      ingested=commit_marks(fresh)), epochs=epochs)
            erased = {(t, u) for t, u, _ in commit_marks(fresh)} - {(t, u) for t, u, _ in applied.ingested}
            by_id = {r.memory_id: r for r in records}
            for m in batch:
                rid, owner = memory_id_for(m), (m.tenant_id, m.user_id)
                if owner in erased:
                    dropped.append(m)
                elif rid in by_id:
                    out.append(by_id[rid])
                else:  # a retry: its stored record, unless the user was erased meanwhile
                    found = self.store.get([rid], tenant_id=m.tenant_id, user_id=m.user_id)
                    if rid in found:
                        out.append(found[rid])
                    elif self.epochs([owner])[owner] != epochs[owner]:
                        dropped.append(m)
            if progress:
                progress(end, len(messages))
        if dropped:
            owners = sorted({(m.tenant_id, m.user_id) for m in dropped})
            names = ", ".join(repr(m.id) for m in dropped[:5]) + (", ..." if len(dropped) > 5 else "")
            raise ErasedError(
                f"{', '.join(f'({t!r}, {u!r})' for t, u in owners)} erased while add_many ran: "
                f"{len(dropped)} message(s) not stored ({names}); the other {len(out)} were stored")
        return in_given_order(out, [memory_id_for(m) for m in given])

    def _embed_fresh(self, messages: Sequence[Message]) -> dict[str, np.ndarray]:
        """memory_id -> vector of the messages not stored yet, embedded in one call (writes nothing)."""
        fresh = self.not_ingested(messages)
        if not fresh:
            return {}
        vectors = self.embedder.embed([m.content for m in fresh])
        return {memory_id_for(m): np.asarray(v, dtype=np.float32) for m, v in zip(fresh, vectors)}

    # --- the journaled write --------------------------------------------------
    def not_ingested(self, messages: Sequence[Message]) -> list[Message]:
        """The messages (first occurrence of each identity) that are not fully ingested yet.

        A message is ingested when the commit mark of its identity (:func:`memory_id_for`) is set:
        the same message id in another session, or with other content, is not taken for it.
        """
        by_owner: dict[tuple[str, str], list[str]] = {}
        for m in messages:
            by_owner.setdefault((m.tenant_id, m.user_id), []).append(memory_id_for(m))
        done = {(t, u, key) for (t, u), keys in by_owner.items() for key in self.store.texts.ingested(t, u, keys)}
        fresh, seen = [], set()
        for m in messages:
            key = (m.tenant_id, m.user_id, memory_id_for(m))
            if key not in done and key not in seen:
                fresh.append(m)
            seen.add(key)
        return fresh

    @contextmanager
    def writing(self, what: str = "the write") -> Iterator[None]:
        """Hold the manager's write lock: writes, lifecycle passes and erasures inside run one at a time.

        For code that reads records and writes them back (the lifecycle, the write path's adjudication):
        an erasure cannot fall between the read and the write. The wait for the lock is bounded
        (:data:`WRITE_WAIT_ENV`): past it, :class:`~memory.core.errors.BusyError` and nothing done.
        """
        wait = write_wait_seconds()
        if not self._lock.acquire(timeout=wait):
            raise BusyError(f"{what} waited {wait:g} s for the store's write lock, which another write or erasure "
                            "holds: nothing was done; try again")
        try:
            yield
        finally:
            self._lock.release()

    def epochs(self, owners: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """Erase counters of some owners: capture them when work is accepted, pass them to :meth:`apply`."""
        with self.writing("accepting a write"):
            return {o: self._epochs.get(o, 0) for o in owners}

    def apply(self, plan: Plan, *, epochs: dict[tuple[str, str], int] | None = None) -> Plan:
        """Journal, apply and commit one write plan; returns what was applied.

        Writes of an owner erased since ``epochs`` were captured are dropped: an erasure is a
        barrier, and what was accepted before it is not stored after it.
        """
        what = f"a write of {len(plan.ingested) // 2 or len(plan.add) + len(plan.update)} message(s)"
        with self.writing(what):
            deadline = time.monotonic() + write_wait_seconds()
            while self._verifying and set(plan.owners()) & set(self._verifying):
                # an erasure of one of these owners is being verified: let it report first
                if not self._idle.wait(timeout=max(0.0, deadline - time.monotonic())):
                    raise BusyError(f"{what} waited for an erasure of its user to finish verifying: nothing was "
                                    "written; try again")
            if epochs:
                erased = {o for o, e in epochs.items() if self._epochs.get(o, 0) != e}
                if erased:
                    plan = plan.without(erased)
            if not (plan.add or plan.update or plan.window or plan.decisions or plan.ingested):
                return plan
            folder = self.data_dir
            check_space(folder, self._bytes_of(plan), what=f"{what} was refused, nothing of it stored")
            try:
                seq = self.store.texts.journal_put(plan.to_json())
            except Exception as exc:
                if is_disk_full(exc, folder):
                    raise self._disk_full(folder, f"{what} was refused, nothing of it stored") from exc
                raise
            try:
                self._apply_journaled(seq, plan)
            except Exception as exc:
                undone = self._roll_back(seq, plan)
                if is_disk_full(exc, folder):
                    undo = ("was rolled back" if undone else "could not be rolled back whole: its journal entry stays, "
                            "and the store finishes this write when it is next opened")
                    raise self._disk_full(folder, f"{what} failed and {undo}") from exc
                raise WriteError(f"write of {len(plan.ingested)} message(s) failed and was rolled back: "
                                 f"{type(exc).__name__}: {exc}") from exc
            return plan

    def _bytes_of(self, plan: Plan) -> int:
        """What a plan may take on disk (:func:`memory.store.space.estimate_bytes`)."""
        text = sum(len(r.content.encode("utf-8", "surrogatepass")) for r in (*plan.add, *plan.update)) + \
            sum(len(m.content.encode("utf-8", "surrogatepass")) for m in plan.window)
        owners = {(r.tenant_id, r.user_id) for r in plan.add}
        new = sum(1 for owner in owners if self.store.collection_of(*owner) is None)
        return estimate_bytes(text, len(plan.add), self.store.dim, new)

    @staticmethod
    def _disk_full(folder: Path | None, what: str) -> DiskFullError:
        if folder is None:  # in memory: no disk of ours; the cause is chained
            return DiskFullError(f"{what}: out of space")
        return DiskFullError(full_message(folder, what=what), folder=str(folder))

    def _apply_journaled(self, seq: int, plan: Plan) -> None:
        """Apply a journaled plan: vectors (idempotent upserts), then every SQLite change and the journal's
        deletion in one transaction. Each half is retried (a locked file, a busy server) before it fails."""
        _retry(lambda: self.store.add_vectors(plan.add, _vectors_of(plan)))
        try:
            _retry(lambda: self._commit(seq, plan))
        except _AlreadyCommitted:  # another recoverer committed this plan first; this transaction rolled back
            missing = self._not_marked(plan)
            if missing:  # not committed by anyone: an erasure (another process) scrubbed the plan out of the journal
                raise ErasedError(f"{len(missing)} message(s) of {', '.join(sorted(missing))} were erased by another "
                                  "writer while this write ran: nothing of them is stored") from None

    def _not_marked(self, plan: Plan) -> set[str]:
        """Owners ('tenant/user') of a plan whose commit marks are not all set."""
        by_owner: dict[tuple[str, str], list[str]] = {}
        for tenant_id, user_id, key in plan.ingested:
            by_owner.setdefault((tenant_id, user_id), []).append(key)
        return {f"{t}/{u}" for (t, u), keys in by_owner.items() if len(self.store.texts.ingested(t, u, keys)) < len(set(keys))}

    def _commit(self, seq: int, plan: Plan) -> None:
        texts = self.store.texts
        with texts.transaction():
            self.store.put_records(plan.add, _vectors_of(plan))
            self.store.update(plan.update)
            self._push_windows(plan.window)
            if plan.decisions:
                texts.add_decisions(plan.decisions)
            texts.mark_ingested(plan.ingested)
            if not texts.journal_done(seq):
                raise _AlreadyCommitted(seq)

    def _roll_back(self, seq: int, plan: Plan) -> bool:
        """Undo a plan whose apply failed: nothing of it was committed on the SQLite side (one transaction),
        so remove the vectors it may have upserted and its journal row, which holds its text. False when the
        journal row could not be removed (a disk full to the last byte): it stays pending, and the next
        :meth:`recover` (the store opened again) rolls the write forward whole, as after a crash."""
        try:
            self.store.remove_vectors(plan.add)
        except Exception:  # noqa: BLE001 - the vector store is what failed; its orphans are invisible to reads
            pass
        try:
            self.store.texts.journal_done(seq)
        except Exception as exc:
            if is_disk_full(exc, self.data_dir):
                return False
            raise
        return True

    def recover(self) -> int:
        """Roll forward every write plan a crashed writer left in the journal; returns how many.

        Plans of a writer that is still running (another process on the same data folder) are left to it
        (:class:`memory.store.textstore.WriterLease`); a plan two recoverers race for is committed once.
        """
        with self.writing("recovering interrupted writes"):
            pending = self.store.texts.journal_orphans()
            for seq, data in pending:
                self._apply_journaled(seq, Plan.from_json(data))
            return len(pending)

    def record_for(self, m: Message) -> MemoryRecord:
        """The long-term record a message is stored as by :meth:`add` (a raw turn, not a distilled fact)."""
        ts = float(m.timestamp) if m.timestamp is not None else self.clock()
        return MemoryRecord(
            memory_id=memory_id_for(m), tenant_id=m.tenant_id, user_id=m.user_id, content=m.content,
            session_id=m.session_id, created_at=ts, last_accessed_at=ts,
            importance=0.5 if m.importance is None else float(m.importance),
            role=m.role, message_id=m.id, source_message_ids=[m.id],
        )

    def _push_windows(self, messages: Sequence[Message]) -> None:
        """Push messages into their owners' windows (one write per owner); what falls out goes into the summary."""
        by_owner: dict[tuple[str, str], list[Message]] = {}
        for m in messages:
            by_owner.setdefault((m.tenant_id, m.user_id), []).append(m)
        texts = self.store.texts
        for (tenant_id, user_id), mine in by_owner.items():
            pushed = [field_values(m) for m in mine]
            overflow = texts.push_window(tenant_id, user_id, pushed, keep=self.config.window_size)
            if overflow:
                text, sources = texts.summary(tenant_id, user_id)
                given = {id(d): m for d, m in zip(pushed, mine)}  # what falls out of this push is mostly its own
                for item in overflow:
                    expired = given.get(id(item)) or _message_from(item)
                    text = self.compressor(text, expired, max_chars=self.config.summary_max_chars)
                    sources.append(expired.id)
                texts.set_summary(tenant_id, user_id, text, sources)

    # --- the three tracks ----------------------------------------------------
    def recent(self, *, tenant_id: str, user_id: str) -> list[Message]:
        """The user's recent window, oldest first."""
        tenant_id, user_id = _check_owner(tenant_id, user_id)
        return [_message_from(d) for d in self.store.texts.window(tenant_id, user_id)]

    def summary(self, *, tenant_id: str, user_id: str) -> str:
        """The user's rolling summary ('' when nothing has left the window)."""
        tenant_id, user_id = _check_owner(tenant_id, user_id)
        return self.store.texts.summary(tenant_id, user_id)[0]

    def summary_sources(self, *, tenant_id: str, user_id: str) -> list[str]:
        """Ids of the messages folded into the user's summary."""
        tenant_id, user_id = _check_owner(tenant_id, user_id)
        return self.store.texts.summary(tenant_id, user_id)[1]

    def records(self, *, tenant_id: str, user_id: str, scope: Scope = "all", as_of: float | str | None = None) -> list[MemoryRecord]:
        """The user's long-term records within a scope (see store.Scope)."""
        now = self._now(as_of)
        return self.store.records(tenant_id, user_id, scope=scope, now=now)

    def get_record(self, memory_id: str, *, tenant_id: str, user_id: str) -> MemoryRecord:
        """One record of the user, by id; KeyError when that user has no such record."""
        found = self.store.get([memory_id], tenant_id=tenant_id, user_id=user_id)
        if memory_id in found:
            return found[memory_id]
        raise KeyError(f"no record {memory_id!r} for ({tenant_id!r}, {user_id!r})")

    # --- read ---------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        """Embed a query once; repeated queries come from a small cache (erasure clears it)."""
        with self._cache_lock:
            if query in self._query_cache:
                self._query_cache.move_to_end(query)
                return self._query_cache[query]
        vec = self.embedder.embed([query])[0]
        with self._cache_lock:
            self._query_cache[query] = vec
            while len(self._query_cache) > _QUERY_CACHE_SIZE:
                self._query_cache.popitem(last=False)
        return vec

    def candidates(
        self, query: str, *, tenant_id: str, user_id: str, as_of: float | str | None = None, pool: int | None = None,
        config: MemoryConfig | None = None, include_blind: bool = True, query_vector: np.ndarray | None = None,
        exact: bool = False,
    ) -> Candidates:
        """Fetch the lifecycle-filtered pool (and, with ``include_blind``, the blind pool) once;
        :func:`recall.govern` ranks them.

        ``pool`` is how many candidates to fetch from each; default ``top_k * overfetch``.
        ``query_vector`` skips embedding the query (benchmarks, or a caller that already has it).
        ``exact`` scores every record of the user (no ``pool`` cut, no approximate index): for views
        that show all candidates, like the lab's.
        """
        cfg = config or self.config
        validate_text(query, "query", max_chars=cfg.max_message_chars)
        tenant_id, user_id = _check_owner(tenant_id, user_id)
        now = self._now(as_of)
        n = pool or max(cfg.top_k * cfg.overfetch, cfg.top_k)
        vec = self.embed_query(query) if query_vector is None else query_vector
        owner: OwnerArgs = {"tenant_id": tenant_id, "user_id": user_id}
        if exact:
            hot = self.store.scan(vec, **owner, scope="hot") if include_blind else []
            active = self.store.scan(vec, **owner, scope="active", now=now)
        else:
            hot = self.store.query(vec, **owner, n=n, scope="hot") if include_blind else []
            active = self.store.query(vec, **owner, n=n, scope="active", now=now)
        return Candidates(query=query, tenant_id=tenant_id, user_id=user_id, as_of=now, hot=hot, active=active)

    def retrieve(
        self, query: str, *, tenant_id: str, user_id: str, as_of: float | str | None = None,
        config: MemoryConfig | None = None, reinforce: bool = True, include_blind: bool = True,
    ) -> RecallResult:
        """Blind and governed recall for one user, with the stage that dropped each candidate.

        With ``reinforce`` (default), the memories governed recall returns get
        ``access_count + 1`` and ``last_accessed_at = as_of`` (the "heat rebound").
        Without ``include_blind``, only the governed query runs (``blind`` is empty and
        lifecycle drops are not listed): the production path.
        """
        cfg = config or self.config
        cands = self.candidates(query, tenant_id=tenant_id, user_id=user_id, as_of=as_of, config=cfg,
                                include_blind=include_blind)
        result = govern(cands, cfg, token_counter=self.token_counter)
        if reinforce and result.governed:
            self.reinforce(result.governed, at=result.as_of)
        return result

    def reinforce(self, hits: Iterable[Hit], *, at: float) -> None:
        """Count a use of each hit's record and move its last access to ``at``."""
        hits = list(hits)
        owners = {(h.record.tenant_id, h.record.user_id) for h in hits}
        with self.writing("reinforcing recalled memories"):
            for tenant_id, user_id in owners:
                ids = [h.record.memory_id for h in hits if (h.record.tenant_id, h.record.user_id) == (tenant_id, user_id)]
                records = list(self.store.get(ids, tenant_id=tenant_id, user_id=user_id).values())
                for rec in records:
                    rec.access_count += 1
                    rec.last_accessed_at = max(rec.last_accessed_at, at)
                self.store.update(records)

    def build_context(
        self, query: str, *, tenant_id: str, user_id: str, as_of: float | str | None = None,
        config: MemoryConfig | None = None, reinforce: bool = True,
    ) -> Context:
        """Summary + recent window + governed memories (within the token budget), all of this user only."""
        result = self.retrieve(query, tenant_id=tenant_id, user_id=user_id, as_of=as_of, config=config, reinforce=reinforce)
        summary = self.summary(tenant_id=tenant_id, user_id=user_id)
        recent = self.recent(tenant_id=tenant_id, user_id=user_id)
        text = format_context(summary, recent, result.governed)
        return Context(
            text=text, summary=summary, recent=recent, memories=result.governed,
            tokens=self.token_counter(text), memory_tokens=result.governed_tokens,
            token_budget=(config or self.config).token_budget,
        )

    # --- erase --------------------------------------------------------------
    def erase_user(self, *, tenant_id: str, user_id: str, actor: str = "system", disk_scan: bool = False) -> EraseReport:
        """Remove the user from every path (window, summary, long-term, journal, caches, disk) and verify each.

        ``disk_scan=True`` also searches every file of the data folder for the user's texts, vector ids and
        vectors: an independent check whose cost is the folder's size, off by default (everything else costs
        what the user owns, but for one linear read of Chroma's database file: memory/runtime/erase.py).
        """
        from memory.runtime.erase import delete_everywhere, verify_deletion

        tenant_id, user_id = _check_owner(tenant_id, user_id)
        owner = (tenant_id, user_id)
        with self.writing(f"the erasure of {tenant_id}/{user_id}"):
            self._epochs[owner] = self._epochs.get(owner, 0) + 1
            self._verifying[owner] = self._verifying.get(owner, 0) + 1
            try:
                erased = delete_everywhere(self, tenant_id=tenant_id, user_id=user_id, actor=actor)
                erased.removed["text_memos"] = clear_text_caches()  # the write path's memos hold texts too
            except BaseException as exc:
                self._done_verifying(owner)
                if isinstance(exc, Exception) and is_disk_full(exc, self.data_dir):
                    raise self._disk_full(self.data_dir, f"the erasure of {tenant_id}/{user_id} could not finish "
                                          "(audit_user lists what is still stored)") from exc
                raise
        try:  # other owners' writers go on; this owner's wait (apply) until the report is made
            return verify_deletion(self, erased, disk_scan=disk_scan)
        finally:
            self._done_verifying(owner)

    def _done_verifying(self, owner: tuple[str, str]) -> None:
        with self._idle:
            self._verifying[owner] -= 1
            if not self._verifying[owner]:
                del self._verifying[owner]
            self._idle.notify_all()

    def audit_user(self, *, tenant_id: str, user_id: str, disk_scan: bool = False) -> list[PathCheck]:
        """What every path holds of one user now: the erasure's own verification, run without erasing."""
        from memory.runtime.erase import Evidence, verify_erased

        tenant_id, user_id = _check_owner(tenant_id, user_id)
        evidence = Evidence.collect(self, tenant_id, user_id)
        return verify_erased(self, tenant_id=tenant_id, user_id=user_id, evidence=evidence, disk_scan=disk_scan)

    def clear_caches(self) -> int:
        """Drop every cached query embedding; returns how many were dropped."""
        with self._cache_lock:
            n = len(self._query_cache)
            self._query_cache.clear()
            return n

    def cached_queries(self) -> list[str]:
        with self._cache_lock:
            return list(self._query_cache)

    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant, user) this workspace holds anything of: long-term records, a recent window or a summary."""
        return sorted(set(self.store.owners()) | set(self.store.text_owners()))

    def count(self, *, tenant_id: str, user_id: str) -> int:
        """The user's long-term records (the archive included), counted by the store."""
        return self.store.count(tenant_id, user_id)

    def embeddings(self, memory_ids: list[str], *, tenant_id: str, user_id: str) -> dict[str, np.ndarray]:
        """The stored vectors of the user's records ``memory_ids`` (memory_id -> unit vector)."""
        return self.store.embeddings(memory_ids, tenant_id=tenant_id, user_id=user_id)

    def audit_log(self) -> list[dict[str, Any]]:
        """The workspace's audit trail (erasures, forgetting passes, ...), oldest first."""
        return self.store.audit_log()

    def decisions(self, *, tenant_id: str, user_id: str, message_id: str | None = None) -> list[dict[str, Any]]:
        """The user's logged write-path decisions, oldest first (only one message's with ``message_id``)."""
        tenant_id, user_id = _check_owner(tenant_id, user_id)
        return self.store.decisions(tenant_id, user_id, message_id=message_id)

    def pending_plans(self) -> list[tuple[int, dict[str, Any]]]:
        """Journaled write plans not committed yet (a crashed writer's, or one being applied now)."""
        return self.store.pending_plans()

    def close(self) -> None:
        """Close the workspace's text file; the manager is not usable afterwards."""
        self.store.close()

    def drop(self) -> None:
        """Delete the whole workspace: every owner's collection and the text file (the lab releasing a lab)."""
        self.store.drop()

    @property
    def data_dir(self) -> Path | None:
        return self.location.data_dir

    def _now(self, as_of: float | str | None) -> float:
        return self.clock() if as_of is None else parse_time(as_of, "as_of")


class _AlreadyCommitted(Exception):
    """A plan's journal row was gone at commit time: someone else committed it (the transaction rolls back)."""


def owner_order(messages: Sequence[Message]) -> list[int]:
    """Indexes of ``messages`` with each owner's together (owners in order of first appearance), each owner's in
    their given order. Owners' windows, ids and commit marks are their own, so this order writes what the given one
    would; the plans it is cut into then hold few owners each, and a bulk write of many users makes about one
    Chroma call per owner instead of one per owner per plan."""
    by_owner: dict[tuple[str, str], list[int]] = {}
    for i, m in enumerate(messages):
        by_owner.setdefault((m.tenant_id, m.user_id), []).append(i)
    return [i for idx in by_owner.values() for i in idx]


def in_given_order(records: list[MemoryRecord], ids: list[str]) -> list[MemoryRecord]:
    """``records`` (one per stored message, in the order written) in the order of the messages given (``ids``: each
    given message's record id); a message given twice gets the same record twice, a dropped one none."""
    by_id = {r.memory_id: r for r in records}
    return [by_id[i] for i in ids if i in by_id]


def plan_bounds(messages: Sequence[Message], batch_size: int | None) -> Iterator[tuple[int, int]]:
    """(start, end) of each plan of :meth:`MemoryManager.add_many`: ``batch_size`` messages each, or by default as
    many as fit :data:`PLAN_MESSAGES` and :data:`PLAN_CHARS` (a plan holds at least one message)."""
    start = 0
    while start < len(messages):
        if batch_size is not None:
            end = min(start + batch_size, len(messages))
        else:
            end, chars = start, 0
            while end < len(messages) and end - start < PLAN_MESSAGES and \
                    (end == start or chars + len(messages[end].content) <= PLAN_CHARS):
                chars += len(messages[end].content)
                end += 1
        yield start, end
        start = end


def write_wait_seconds() -> float:
    """The bounded wait for the write lock (:data:`WRITE_WAIT_ENV`, default :data:`DEFAULT_WRITE_WAIT_S`)."""
    text = os.environ.get(WRITE_WAIT_ENV, "").strip()
    if not text:
        return DEFAULT_WRITE_WAIT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < math.inf:
        raise InputError(f"{WRITE_WAIT_ENV} must be a number of seconds > 0, got {text!r}")
    return value


def _retry(step: Callable[[], None], *, attempts: int = RETRIES, pause: float = 0.05) -> None:
    """Run ``step``; on an error, run it again (it must be idempotent) up to ``attempts`` times in all."""
    for attempt in range(attempts):
        try:
            step()
            return
        except (_AlreadyCommitted, ErasedError):  # not a passing failure: the owner is gone
            raise
        except Exception:
            if attempt == attempts - 1:
                raise
            time.sleep(pause * (2**attempt))


def commit_marks(messages: Sequence[Message]) -> list[tuple[str, str, str]]:
    """Commit marks of messages: their identity (what :meth:`MemoryManager.not_ingested` reads) and their id
    (for readers that look a message up by the id the caller gave it)."""
    return [mark for m in messages for mark in ((m.tenant_id, m.user_id, memory_id_for(m)),
                                                (m.tenant_id, m.user_id, m.id))]


def format_context(summary: str, recent: Sequence[Message], memories: Sequence[Hit]) -> str:
    """The prompt text of a context: the summary, then the recent window, then the governed memories."""
    parts = ["summary:\n" + summary] if summary else []
    parts += [f"recent: {m.role}: {m.content}" for m in recent]
    parts += [f"memory ({h.similarity:.2f}): {h.record.content}" for h in memories]
    return "\n".join(parts)


def _vectors_of(plan: Plan) -> np.ndarray:
    """The vectors of ``plan.add``. Only a plan that adds no record has None (the store then reads no row)."""
    if plan.vectors is None:
        assert not plan.add  # every Plan built or read back with records to add carries their vectors
        return np.empty((0, 0), dtype=np.float32)
    return plan.vectors


def _check_owner(tenant_id: str, user_id: str) -> tuple[str, str]:
    """The owner's identifiers, validated and in the form they are stored in (NFC: see validate_identifier)."""
    return validate_identifier(tenant_id, "tenant_id"), validate_identifier(user_id, "user_id")


def _message_from(data: dict) -> Message:
    data = dict(data)
    data["labels"] = tuple(data.get("labels", ()))
    return Message(**data)
