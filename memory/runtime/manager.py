"""MemoryManager: the three memory tracks of every (tenant, user), and the governed paths into a prompt.

* recent window: the last ``window_size`` messages, verbatim;
* summary: what left the window, compressed (bounded, with source message ids);
* long-term store: every message as a MemoryRecord in Chroma (text in the TextStore).

Every read takes ``tenant_id`` and ``user_id`` and sees only that pair's data. Each public call turns them into one
:class:`~memory.core.owner.Owner` (:meth:`Owner.of`, the one check) and passes that value on: the private methods below
them, the erasure, the lifecycle helpers and the store take an ``Owner``, never the two strings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from memory.core.bytesearch import NeedleSearch
from memory.core.textcaches import TextMemo, clear_text_caches, forget_texts, text_cache
from memory.core.config import MemoryConfig
from memory.core.owner import Owner
from memory.core.errors import BusyError, DiskFullError, ErasedError, ErasurePendingError, InputError, WriteError
from memory.embed.embedders import Embedder, make_embedder
from memory.store.journal import Plan
from memory.store.space import check_space, estimate_bytes, full_message, is_disk_full
from memory.runtime.recall import Candidates, govern
from memory.runtime.erase import (
    MIN_CANARY_BYTES, Evidence, chroma_file_check, clear_chroma_traces, delete_everywhere, user_texts, verify_deletion,
    verify_erased,
)
from memory.runtime.lifecycle import chain_of
from memory.runtime.versions import Change, Retire, Supersede, check_changes, revised, touched
from memory.core.schema import (
    Context, EraseReport, Hit, MemoryRecord, Message, PathCheck, RecallResult, field_values, parse_time, validate_identifier,
    validate_text,
)
from memory.store.chroma import MemoryStore, Scope, StoreLocation
from memory.store.textstore import PendingErasure
from memory.runtime.summary import Compressor, extractive_compressor
from memory.core.tokens import TokenCounter, count_tokens

log = logging.getLogger(__name__)

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
        self._query_cache: TextMemo[np.ndarray] = TextMemo(
            _QUERY_CACHE_SIZE, name=f"query embeddings ({self.workspace})", lru=True, pieces=True)
        """query -> vector, in the registry of caches that hold user text (a query may quote a user's message).
        Its own lock: a recall never waits behind a write for it."""
        self._lock = threading.RLock()
        self._epochs: dict[tuple[str, str], int] = {}
        self._verifying: dict[tuple[str, str], int] = {}
        """Owners whose erasure is being verified (how many erasures): their writes wait (:meth:`apply`)."""
        self._idle = threading.Condition(self._lock)
        self.completed_erasures: list[EraseReport] = []
        """Interrupted erasures this manager finished when it opened its store (their reports): see :meth:`recover`."""
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
        fully stored or absent. Messages of a user erased while this call ran, in this process or by another writer
        of the folder, are dropped (the erasure is a barrier): every other message is stored, other users' in the same
        plan too, then ErasedError names the dropped (each message once).
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
                else:  # a retry: its stored record, unless the user was erased meanwhile (or is owed an erasure)
                    owed = bool(self._owed_erasures({owner}))
                    found = {} if owed else self.store.get([rid], owner=Owner(*owner))
                    if rid in found:
                        out.append(found[rid])
                    elif owed or self.epochs([owner])[owner] != epochs[owner]:
                        dropped.append(m)
            if progress:
                progress(end, len(messages))
        if dropped:
            raise ErasedError(erased_message(dropped, stored=len({r.memory_id for r in out}), during="add_many"))
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
        done = {(t, u, key) for (t, u), keys in by_owner.items() for key in self.store.texts.ingested(Owner(t, u), keys)}
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
        barrier, and what was accepted before it is not stored after it. So are those of an owner that another
        writer of the folder (another process) erases while the plan is applied (:meth:`_apply_journaled`): the
        other owners' writes of the plan are stored, and the plan returned is without the erased owners.
        """
        what = f"a write of {_messages_in(plan)} message(s)"
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
            owed = self._owed_erasures(plan.owners())
            if owed:  # an interrupted erasure of these owners is not finished: what they write now would go with it
                plan = plan.without(owed)
            if not (plan.add or plan.update or plan.window or plan.decisions or plan.ingested):
                return plan
            folder = self.data_dir
            check_space(folder, self._bytes_of(plan), what=f"{what} was refused, nothing of it stored")
            seen = self.store.texts.data_version()  # before the plan is journaled: see _apply_journaled
            try:
                seq = self.store.texts.journal_put(plan.to_json())
            except Exception as exc:
                if is_disk_full(exc, folder):
                    raise self._disk_full(folder, f"{what} was refused, nothing of it stored") from exc
                raise
            try:
                applied = self._apply_journaled(seq, plan, seen=seen)
            except Exception as exc:
                undone = self._roll_back(seq, plan)
                if is_disk_full(exc, folder):
                    undo = ("was rolled back" if undone else "could not be rolled back whole: its journal entry stays, "
                            "and the store finishes this write when it is next opened")
                    raise self._disk_full(folder, f"{what} failed and {undo}") from exc
                raise WriteError(f"{what} failed and was rolled back: {type(exc).__name__}: {exc}") from exc
            return applied

    def _bytes_of(self, plan: Plan) -> int:
        """What a plan may take on disk (:func:`memory.store.space.estimate_bytes`)."""
        text = sum(len(r.content.encode("utf-8", "surrogatepass")) for r in (*plan.add, *plan.update)) + \
            sum(len(m.content.encode("utf-8", "surrogatepass")) for m in plan.window)
        owners = {(r.tenant_id, r.user_id) for r in plan.add}
        new = sum(1 for owner in owners if self.store.collection_of(Owner(*owner)) is None)
        return estimate_bytes(text, len(plan.add), self.store.dim, new)

    @staticmethod
    def _disk_full(folder: Path | None, what: str) -> DiskFullError:
        if folder is None:  # in memory: no disk of ours; the cause is chained
            return DiskFullError(f"{what}: out of space")
        return DiskFullError(full_message(folder, what=what), folder=str(folder))

    def _apply_journaled(self, seq: int, plan: Plan, *, seen: int | None = None) -> Plan:
        """Apply a journaled plan: vectors (idempotent upserts), then every SQLite change and the journal's
        deletion in one transaction. Each half is retried (a locked file, a busy server) before it fails.

        Returns what was applied: the plan without the owners that another writer (another process on the folder)
        erased meanwhile. Such an erasure scrubs its owner out of every journaled plan in the transaction that
        deletes the owner (memory.runtime.erase), deleting a plan it leaves empty, so the journal row says at commit
        time whose writes may land: the erased owners' vectors are removed, nothing else of theirs is written, and
        the other owners' writes are applied again without them. Each pass drops at least one owner. ``seen``: the
        text file's data version (:meth:`memory.store.textstore.TextStore.data_version`) when the plan was journaled;
        while nobody else has committed since, the row is not read (None: always read)."""
        while True:
            try:
                _retry(lambda: self.store.add_vectors(plan.add, _vectors_of(plan)))
                _retry(lambda: self._commit(seq, plan, seen))
                return plan
            except (_AlreadyCommitted, ErasedError) as exc:  # the commit's transaction, if any, rolled back
                erased = self._erased_meanwhile(seq, plan)
                if not erased:
                    if isinstance(exc, _AlreadyCommitted) and not isinstance(exc, _Scrubbed):
                        return plan  # another recoverer committed this plan first
                    raise
                try:  # what add_vectors upserted for them (it may have registered a collection again)
                    self.store.remove_vectors([r for r in plan.add if (r.tenant_id, r.user_id) in erased])
                except Exception:  # noqa: BLE001 - as in _roll_back: an orphan vector is invisible to reads
                    pass
                plan = plan.without(erased)

    def _erased_meanwhile(self, seq: int, plan: Plan) -> set[tuple[str, str]]:
        """Owners of a plan that an erasure by another writer took out of its journal row: the owners of its commit
        marks that the row no longer holds or, when the row is gone, those whose marks are not all set (nobody
        committed them: the erasure deleted the plan it left empty)."""
        left = self.store.texts.journal_marks(seq)
        if left is None:
            return self._not_marked(plan)
        return _marked_owners(plan) - {(t, u) for t, u, _ in left}

    def _not_marked(self, plan: Plan) -> set[tuple[str, str]]:
        """Owners of a plan whose commit marks are not all set."""
        by_owner: dict[tuple[str, str], list[str]] = {}
        for tenant_id, user_id, key in plan.ingested:
            by_owner.setdefault((tenant_id, user_id), []).append(key)
        return {(t, u) for (t, u), keys in by_owner.items()
                if len(self.store.texts.ingested(Owner(t, u), keys)) < len(set(keys))}

    def _commit(self, seq: int, plan: Plan, seen: int | None = None) -> None:
        texts = self.store.texts
        owners = _marked_owners(plan)
        with texts.transaction():
            # An erasure by another writer rewrites a plan of several owners without its owner: read the row (a plan
            # of one owner it deletes: journal_done below finds it gone). Reading a plan of a few thousand messages
            # costs about 0.3 s, so only when another writer has committed since the plan was journaled.
            if len(owners) > 1 and (seen is None or texts.data_version() != seen):
                left = texts.journal_marks(seq)
                if left is None:
                    raise _AlreadyCommitted(seq)
                if owners - {(t, u) for t, u, _ in left}:
                    raise _Scrubbed(seq)
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
        """Finish every interrupted erasure (:meth:`complete_erasures`, reports in :attr:`completed_erasures`), then
        roll forward every write plan a crashed writer left in the journal; returns how many plans.

        Plans of a writer that is still running (another process on the same data folder) are left to it
        (:class:`memory.store.textstore.WriterLease`); a plan two recoverers race for is committed once. The part of
        a plan that belongs to an owner whose erasure is still owed (it could not be finished) is not rolled forward:
        it was accepted before that erasure, which deletes it. Run when the store is opened; run it again once the
        disk has room, to finish an erasure a full disk stopped.
        """
        self.completed_erasures = self.complete_erasures()
        with self.writing("recovering interrupted writes"):
            pending = self.store.texts.journal_orphans()
            owed = self._owed_erasures({o for _, data in pending for o in Plan.from_json(data).owners()})
            for seq, data in pending:
                plan = Plan.from_json(data)
                self._apply_journaled(seq, plan.without(owed) if owed & plan.owners() else plan)
            return len(pending)

    def complete_erasures(self) -> list[EraseReport]:
        """Finish every interrupted erasure: one whose pending-erasure record was left by a store that is gone (a
        process killed or crashed) or by this manager (its erasure failed, on a full disk say). Each is done as
        :meth:`erase_user` does it, with the disk scan if that erasure asked for one, and audited as
        ``erase.completed_on_open`` by the actor ``recovery``. One that fails again stays pending (logged, not
        raised: the store opens all the same), and its owner's reads are refused until it is finished. Returns the
        reports of those finished."""
        reports = []
        for pending in self.store.texts.pending_erasures():
            if self._erasure_state(pending) != "owed":
                continue
            try:
                reports.append(self._erase(Owner(*pending.owner), actor="recovery", disk_scan=pending.disk_scan,
                                           action="erase.completed_on_open"))
            except Exception as exc:  # noqa: BLE001 - the store opens all the same; the owner stays refused
                log.warning("the interrupted erasure of %s/%s is still not finished: %s", *pending.owner, exc)
        return reports

    def _erasure_state(self, pending: PendingErasure) -> str:
        """Of a pending-erasure record: ``here`` (this manager is erasing the owner now), ``running`` (another store
        of the folder is: its process lives), or ``owed`` (interrupted: its store is gone, or it is this manager's
        and failed)."""
        if pending.writer == self.store.texts.writer_token:
            return "here" if pending.owner in self._verifying else "owed"
        return "running" if self.store.texts.writer_alive(pending.writer) else "owed"

    def _owed_erasures(self, owners: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of ``owners`` have an interrupted erasure not finished (a write of theirs is not stored: it would be
        erased with them). One read of the (usually empty) table of pending erasures."""
        if not owners:
            return set()
        return {p.owner for p in self.store.texts.pending_erasures()
                if p.owner in owners and self._erasure_state(p) == "owed"}

    def _refuse_if_erasing(self, owner: Owner) -> None:
        """Before a read of one owner: raise :class:`ErasurePendingError` if an erasure of the owner began and has
        not finished, unless this manager is running it (one indexed read of the pending-erasure table)."""
        pending = self.store.texts.pending_erasure(owner)
        if pending is None:
            return
        state = self._erasure_state(pending)
        if state == "running":
            raise ErasurePendingError(f"{owner} is being erased by another store of this data folder "
                                      "(another process or manager): nothing of the user is served until that "
                                      "erasure has finished; try again")
        if state == "owed":
            raise ErasurePendingError(f"the erasure of {owner} was interrupted and has not finished: "
                                      "nothing of the user is served until it has, which the store does when it is "
                                      "next opened (MemoryManager.recover) or when the user is erased again")

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
        for key, mine in by_owner.items():
            owner = Owner(*key)
            pushed = [field_values(m) for m in mine]
            overflow = texts.push_window(owner, pushed, keep=self.config.window_size)
            if overflow:
                text, sources = texts.summary(owner)
                given = {id(d): m for d, m in zip(pushed, mine)}  # what falls out of this push is mostly its own
                for item in overflow:
                    expired = given.get(id(item)) or _message_from(item)
                    text = self.compressor(text, expired, max_chars=self.config.summary_max_chars)
                    sources.append(expired.id)
                texts.set_summary(owner, text, sources)

    # --- the three tracks ----------------------------------------------------
    def recent(self, *, tenant_id: str, user_id: str) -> list[Message]:
        """The user's recent window, oldest first."""
        return self._recent(Owner.of(tenant_id, user_id))

    def _recent(self, owner: Owner) -> list[Message]:
        self._catch_up()
        self._refuse_if_erasing(owner)
        return [_message_from(d) for d in self.store.texts.window(owner)]

    def summary(self, *, tenant_id: str, user_id: str) -> str:
        """The user's rolling summary ('' when nothing has left the window)."""
        return self._summary(Owner.of(tenant_id, user_id))

    def _summary(self, owner: Owner) -> str:
        self._catch_up()
        self._refuse_if_erasing(owner)
        return self.store.texts.summary(owner)[0]

    def summary_sources(self, *, tenant_id: str, user_id: str) -> list[str]:
        """Ids of the messages folded into the user's summary."""
        owner = Owner.of(tenant_id, user_id)
        self._refuse_if_erasing(owner)
        return self.store.texts.summary(owner)[1]

    def records(self, *, tenant_id: str, user_id: str, scope: Scope = "all", as_of: float | str | None = None) -> list[MemoryRecord]:
        """The user's long-term records within a scope (see store.Scope)."""
        self._catch_up()
        now = self._now(as_of)
        owner = Owner.of(tenant_id, user_id)
        self._refuse_if_erasing(owner)
        return self.store.records(owner, scope=scope, now=now)

    def get_record(self, memory_id: str, *, tenant_id: str, user_id: str) -> MemoryRecord:
        """One record of the user, by id; KeyError when that user has no such record."""
        record = self._find_record(memory_id, Owner.of(tenant_id, user_id))
        if record is None:
            raise KeyError(f"no record {memory_id!r} for ({tenant_id!r}, {user_id!r})")
        return record

    def _find_record(self, memory_id: str, owner: Owner) -> MemoryRecord | None:
        self._refuse_if_erasing(owner)
        return self.store.get([memory_id], owner=owner).get(memory_id)

    # --- version chains and retirements (memory/runtime/versions.py) ------------
    def revise(self, changes: Iterable[Change], *, tenant_id: str, user_id: str,
               log: Iterable[tuple[str, float, dict[str, Any]]] = (),
               epochs: dict[tuple[str, str], int] | None = None) -> list[MemoryRecord]:
        """Apply lifecycle changes to some records of one user (:class:`~memory.runtime.versions.Retire`,
        :class:`~memory.runtime.versions.Supersede`, in order) and append ``log`` entries (message id, time, entry)
        to the user's decision log, in one journaled write (:meth:`apply`: both land, or neither). Returns the
        records changed, as stored. A change naming a record the user does not have is skipped.

        Runs under the write lock (the records are read and written back: an erasure cannot fall between). With
        ``epochs`` (:meth:`epochs`, captured when the work was accepted), nothing is written for a user erased since.
        """
        return self._revise(changes, Owner.of(tenant_id, user_id), log=log, epochs=epochs)

    def _revise(self, changes: Iterable[Change], owner: Owner, *, log: Iterable[tuple[str, float, dict[str, Any]]] = (),
                epochs: dict[tuple[str, str], int] | None = None) -> list[MemoryRecord]:
        changes = check_changes(changes)
        rows = [(owner.tenant_id, owner.user_id, validate_identifier(mid, "log message id"), float(at), dict(entry))
                for mid, at, entry in log]
        with self.writing(f"revising {len(changes)} record(s) of {owner}"):
            self._refuse_if_erasing(owner)
            stored = self.store.get(touched(changes), owner=owner)
            changed = list(revised(stored, changes).values())
            applied = self.apply(Plan(update=changed, decisions=rows), epochs=epochs)
        return applied.update

    def supersede(self, old_id: str, new_id: str, *, tenant_id: str, user_id: str, link: bool = True
                  ) -> list[MemoryRecord]:
        """Replace the user's record ``old_id`` by the record ``new_id`` (:class:`~memory.runtime.versions.Supersede`:
        the old one deprecated, the new one at version + 1, linked both ways unless ``link=False``). Returns the
        records changed; KeyError when the user has no such record."""
        owner = Owner.of(tenant_id, user_id)
        self._must_hold([old_id, new_id], owner)
        return self._revise([Supersede(old_id, new_id, link=link)], owner)

    def retire(self, memory_id: str, *, tenant_id: str, user_id: str, archive: bool = False) -> MemoryRecord:
        """Take the user's record out of recall (:class:`~memory.runtime.versions.Retire`: deprecated, and archived
        with ``archive``); returns it as stored. KeyError when the user has no such record."""
        owner = Owner.of(tenant_id, user_id)
        self._must_hold([memory_id], owner)
        changed = self._revise([Retire(memory_id, archive=archive)], owner)
        if not changed:  # erased meanwhile
            raise KeyError(f"no record {memory_id!r} for ({tenant_id!r}, {user_id!r})")
        return changed[0]

    def history(self, memory_id: str, *, tenant_id: str, user_id: str) -> list[MemoryRecord]:
        """Every version of the user's record ``memory_id``, oldest first (its chain of ``supersedes`` /
        ``superseded_by``: :func:`memory.runtime.lifecycle.chain_of`); KeyError when the user has no such record."""
        owner = Owner.of(tenant_id, user_id)
        record = self._find_record(memory_id, owner)
        if record is None:
            raise KeyError(f"no record {memory_id!r} for ({owner.tenant_id!r}, {owner.user_id!r})")
        return chain_of(self, record, owner)

    def _must_hold(self, memory_ids: Sequence[str], owner: Owner) -> None:
        """KeyError naming the first of ``memory_ids`` the user has no record of."""
        ids = [validate_identifier(m, "memory_id") for m in memory_ids]
        self._refuse_if_erasing(owner)
        found = self.store.get(ids, owner=owner)
        for mid in ids:
            if mid not in found:
                raise KeyError(f"no record {mid!r} for ({owner.tenant_id!r}, {owner.user_id!r})")

    # --- delete some records of a user (erase_user deletes all of one) ----------
    def delete_record(self, memory_id: str, *, tenant_id: str, user_id: str, actor: str = "system") -> dict[str, int]:
        """Remove one record of the user completely, leaving no copy of its text on disk: :meth:`delete_records`."""
        return self.delete_records([memory_id], tenant_id=tenant_id, user_id=user_id, actor=actor)

    def delete_records(self, memory_ids: Sequence[str], *, tenant_id: str, user_id: str,
                       messages: Sequence[Message] = (), entries: Callable[[dict[str, Any]], bool] | None = None,
                       actor: str = "system") -> dict[str, int]:
        """Remove some records of one user completely, as :meth:`erase_user` removes all of a user:

        * the records' text-store rows (text, metadata, the vector copy) and their vectors: on an embedded store the
          owner's collection is made again without them (:meth:`MemoryStore.delete_vectors`), and a trace Chroma's
          page reuse left in its database file is cleared as an erasure clears one (memory/runtime/erase.py);
        * the messages they were read from (by message id and session) and ``messages``: out of the recent window,
          their ``role: content`` lines out of the summary (with their source ids), their write-path decisions out
          of the log (by the message's identity, :func:`memory_id_for`);
        * the records' own decision-log entries; an entry that names one as the stored fact it was judged against
          keeps its decision, without that fact's text or the values its reason quoted;
        * ``entries``: the log entries it is true for (a caller's own log about the records: the LangGraph store's);
        * the process's text caches' entries holding the removed texts (memory/core/textcaches.py).

        Then the text file is searched for the removed texts (the records', the messages') and rebuilt if one is
        found that no row still holds (SQLite's page rebalancing can leave a copy in a page's unused area). Ids of
        another user's records or of none are left alone. Runs under the write lock; costs the owner's vectors
        (embedded), window and log, and one read of the text file and of Chroma's. Audited as ``delete_records``
        (ids and counts, no text). Returns what went, per path.
        """
        owner = Owner.of(tenant_id, user_id)
        ids = list(dict.fromkeys(validate_identifier(m, "memory_id") for m in memory_ids))
        with self.writing(f"deleting {len(ids)} record(s) of {owner}"):
            self._refuse_if_erasing(owner)
            records = list(self.store.get(ids, owner=owner).values())
            gone = {r.memory_id for r in records}
            vector_of = dict(zip(*self.store.texts.vectors(owner, sorted(gone))))
            sources = {(r.message_id, r.session_id) for r in records if r.message_id}
            sources |= {(m.id, m.session_id) for m in messages}
            keys = {memory_id_for(m) for m in messages}
            texts = sorted({r.content for r in records} | {m.content for m in messages})

            def rewrite(entry: dict[str, Any]) -> dict[str, Any] | None:
                if entry.get("memory_id") in gone or entry.get("message_key") in keys or (entries and entries(entry)):
                    return None
                candidate = entry.get("candidate") or {}
                if candidate.get("id") in gone:  # judged against a record now deleted: the decision without its text
                    said = f"{entry.get('decision', 'decided')} against a stored fact that was deleted since"
                    return {**entry, "candidate": {"id": candidate["id"], "text": ""}, "code": "legacy",
                            "params": {"text": said}, "reason": said, "plain": None}
                return entry

            with self.store.transaction():
                removed = self.store.texts.forget(
                    owner, memory_ids=sorted(gone), rewrite_entry=rewrite,
                    drop_message=lambda m: (m.get("id"), m.get("session_id")) in sources)
                text, kept = self.store.texts.summary(owner)
                lines = text.split("\n") if text else []
                flat = [" ".join(t.split()) for t in texts]
                left = [ln for ln in lines if not any(f and f in ln for f in flat)]
                if len(left) < len(lines):
                    dropped_ids = {i for i, _ in sources}
                    self.store.texts.set_summary(owner, "\n".join(left),
                                                 [i for i in kept if i not in dropped_ids])
                removed["summary_lines"] = len(lines) - len(left)
            removed["long_term_vectors"] = self.store.delete_vectors(owner, sorted(gone))
            removed["cache"] = forget_texts(texts)  # query embeddings included: every registered text cache
            vectors = [(r.content, vector_of[r.memory_id]) for r in records if vector_of.get(r.memory_id)]
            evidence = Evidence(texts, self.store.collection_of(owner),
                                [self.store.texts.vector_id(m) for m in sorted(gone)], vectors)
            removed.update(chroma_pages_rewritten=0, chroma_rebuilt=0, text_file_rebuilt=0)
            if self.store.chroma_dir is not None and gone:
                paths = [chroma_file_check(self.store, evidence)]
                if paths[0].remaining:
                    clear_chroma_traces(self, evidence, paths, 0, removed)
                removed["chroma_traces_left"] = paths[0].remaining
            removed["text_file_traces_left"] = self._clear_text_traces(texts, removed, owner)
            self.store.audit("delete_records", owner, actor=actor,
                             detail={"memory_ids": sorted(gone), "messages": len(messages), "removed": removed})
        return removed

    def _clear_text_traces(self, texts: list[str], removed: dict[str, int], owner: Owner) -> int:
        """After :meth:`delete_records`: how many of ``texts`` the text file still holds that none of the owner's
        rows holds; if any, the file is rebuilt (VACUUM) first and searched again. 0 in memory. (A text another
        owner also holds is counted: what it costs to tell is every owner's texts, as the erasure's disk scan reads.)"""
        path = self.store.text_file
        needles = [t.encode("utf-8", "surrogatepass") for t in texts]
        needles = [n for n in needles if len(n) >= MIN_CANARY_BYTES]
        if path is None or not needles:
            return 0
        found = NeedleSearch(needles).in_file(path)
        if found:  # the same text in a row the owner keeps (another record, message or entry) is no trace
            held = "\n".join(user_texts(self, owner)).encode("utf-8", "surrogatepass")
            held += json.dumps([e.get("value") for e in self.store.decisions(owner)],
                               ensure_ascii=False).encode("utf-8", "surrogatepass")
            found = {n for n in found if n not in held}
        if found:  # a copy SQLite's page rebalancing left in a page's unused area: rebuild the file
            self.store.rebuild_text_file()
            removed["text_file_rebuilt"] = 1
            found = NeedleSearch(found).in_file(path)
        return len(found)

    # --- read ---------------------------------------------------------------
    def embed_query(self, query: str) -> np.ndarray:
        """Embed a query once; repeated queries come from a small cache (an erasure clears this manager's, and takes
        the queries holding the erased user's texts out of every other manager's: memory/core/textcaches.py)."""
        vec = self._query_cache.get(query)
        if vec is None:
            vec = self.embedder.embed([query])[0]
            self._query_cache.put(query, vec)
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
        return self._candidates(query, Owner.of(tenant_id, user_id), as_of=as_of, pool=pool, config=cfg,
                                include_blind=include_blind, query_vector=query_vector, exact=exact)

    def _candidates(self, query: str, owner: Owner, *, as_of: float | str | None, config: MemoryConfig,
                    pool: int | None = None, include_blind: bool = True, query_vector: np.ndarray | None = None,
                    exact: bool = False) -> Candidates:
        """:meth:`candidates` of a query already checked against ``config``."""
        self._catch_up()
        self._refuse_if_erasing(owner)
        now = self._now(as_of)
        n = pool or max(config.top_k * config.overfetch, config.top_k)
        vec = self.embed_query(query) if query_vector is None else query_vector
        if exact:
            hot = self.store.scan(vec, owner=owner, scope="hot") if include_blind else []
            active = self.store.scan(vec, owner=owner, scope="active", now=now)
        else:
            hot = self.store.query(vec, owner=owner, n=n, scope="hot") if include_blind else []
            active = self.store.query(vec, owner=owner, n=n, scope="active", now=now)
        return Candidates(query=query, tenant_id=owner.tenant_id, user_id=owner.user_id, as_of=now, hot=hot,
                          active=active)

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
        validate_text(query, "query", max_chars=cfg.max_message_chars)
        return self._retrieve(query, Owner.of(tenant_id, user_id), as_of=as_of, config=cfg, reinforce=reinforce,
                              include_blind=include_blind)

    def _retrieve(self, query: str, owner: Owner, *, as_of: float | str | None, config: MemoryConfig,
                  reinforce: bool, include_blind: bool) -> RecallResult:
        cands = self._candidates(query, owner, as_of=as_of, config=config, include_blind=include_blind)
        result = govern(cands, config, token_counter=self.token_counter)
        if reinforce and result.governed:
            self.reinforce(result.governed, at=result.as_of)
        return result

    def reinforce(self, hits: Iterable[Hit], *, at: float) -> None:
        """Count a use of each hit's record and move its last access to ``at``."""
        hits = list(hits)
        owners = {(h.record.tenant_id, h.record.user_id) for h in hits}
        with self.writing("reinforcing recalled memories"):
            for key in owners:
                ids = [h.record.memory_id for h in hits if (h.record.tenant_id, h.record.user_id) == key]
                records = list(self.store.get(ids, owner=Owner(*key)).values())
                for rec in records:
                    rec.access_count += 1
                    rec.last_accessed_at = max(rec.last_accessed_at, at)
                self.store.update(records)

    def build_context(
        self, query: str, *, tenant_id: str, user_id: str, as_of: float | str | None = None,
        config: MemoryConfig | None = None, reinforce: bool = True,
    ) -> Context:
        """Summary + recent window + governed memories (within the token budget), all of this user only."""
        cfg = config or self.config
        validate_text(query, "query", max_chars=cfg.max_message_chars)
        owner = Owner.of(tenant_id, user_id)
        result = self._retrieve(query, owner, as_of=as_of, config=cfg, reinforce=reinforce, include_blind=True)
        summary = self._summary(owner)
        recent = self._recent(owner)
        text = format_context(summary, recent, result.governed)
        return Context(
            text=text, summary=summary, recent=recent, memories=result.governed,
            tokens=self.token_counter(text), memory_tokens=result.governed_tokens,
            token_budget=cfg.token_budget,
        )

    # --- erase --------------------------------------------------------------
    def erase_user(self, *, tenant_id: str, user_id: str, actor: str = "system", disk_scan: bool = False) -> EraseReport:
        """Remove the user from every path (window, summary, long-term, journal, caches, disk) and verify each.

        ``disk_scan=True`` also searches every file of the data folder for the user's texts, vector ids and
        vectors: an independent check whose cost is the folder's size, off by default (everything else costs
        what the user owns, but for one linear read of Chroma's database file: memory/runtime/erase.py).

        The erasure is recorded as pending before its first delete, and the record removed once this report is made:
        if it is interrupted (a full disk, a kill, a crash), the user is neither served nor written until it is
        finished, by :meth:`recover` when the store is next opened, or by this call again. On a full disk it raises
        :class:`DiskFullError`: "refused, nothing of it done" when not even the record could be written.
        """
        return self._erase(Owner.of(tenant_id, user_id), actor=actor, disk_scan=disk_scan)

    def _erase(self, owner: Owner, *, actor: str, disk_scan: bool, action: str = "erase_user") -> EraseReport:
        """:meth:`erase_user` of an owner; ``action`` names its audit entry. An erasure of the owner that was
        interrupted before (its record is there) is finished by this one: see memory/runtime/erase.py."""
        key = owner.key  # how the erase epochs and the erasures being verified are kept (as plans name owners)
        texts = self.store.texts
        recorded = False
        with self.writing(f"the erasure of {owner}"):
            self._epochs[key] = self._epochs.get(key, 0) + 1
            self._verifying[key] = self._verifying.get(key, 0) + 1
            try:
                prior = texts.pending_erasure(owner)
                evidence = Evidence.collect(self, owner)
                self._begin_erasure(owner, actor=actor, disk_scan=disk_scan, evidence=evidence)  # before any delete
                recorded = True
                audit = {} if prior is None else {"interrupted": {"actor": prior.actor, "at": prior.at}}
                erased = delete_everywhere(self, owner, actor=actor, evidence=evidence,
                                           segments=prior.segments if prior else None, action=action, audit=audit)
                # every registered cache holding user text (the write path's memos, judges, other managers' queries)
                erased.removed["text_memos"] = forget_texts(erased.evidence.texts)
            except BaseException as exc:
                self._done_verifying(owner)
                texts.room.keep()  # given back if the record could not be written at first: taken again if it can be
                failure = self._erasure_failed(owner, exc) if recorded else exc
                if failure is exc:
                    raise
                raise failure from exc
        try:  # other owners' writers go on; this owner's wait (apply) until the report is made
            # after an interrupted erasure whose deletes had committed nothing is left to search for: rebuild the files
            report = verify_deletion(self, erased, disk_scan=disk_scan,
                                     rebuild=prior is not None and not evidence.vector_ids)
        except BaseException as exc:
            texts.room.keep()
            failure = self._erasure_failed(owner, exc)
            if failure is exc:
                raise
            raise failure from exc
        else:  # the record goes before this owner's writers go on (they would be refused while it is there)
            self._end_erasure(owner)
        finally:
            self._done_verifying(owner)
        return report

    def _end_erasure(self, owner: Owner) -> None:
        """Remove the owner's pending-erasure record (the erasure ran to its report) and take the room for records
        again. If the record cannot be removed, it stays: the next opening repeats the erasure, which finds nothing."""
        try:
            self.store.texts.end_erasure(owner)
        except Exception as exc:  # noqa: BLE001 - done and verified; the report stands
            log.warning("the erasure of %s/%s is done but its pending record stays: %s", *owner, exc)
        self.store.texts.room.keep()

    def _begin_erasure(self, owner: Owner, *, actor: str, disk_scan: bool, evidence: Any) -> None:
        """Write the owner's pending-erasure record (before the first delete), with what finishing an interrupted
        erasure needs: whether it scans the disk, and the Chroma segment folders of the owner's collection."""
        detail = {"disk_scan": bool(disk_scan), "segments": list(evidence.segments or [])}
        try:
            self.store.texts.begin_erasure(owner, actor=actor, detail=detail)
        except Exception as exc:
            if is_disk_full(exc, self.data_dir):
                raise self._disk_full(self.data_dir, f"the erasure of {owner} was refused, nothing of "
                                      "it done (not even its pending record could be written)") from exc
            raise

    def _erasure_failed(self, owner: Owner, exc: BaseException) -> BaseException:
        """What an erasure that failed after its pending record was written raises: on a full disk one DiskFullError
        that says the erasure is owed; any other error as it was."""
        if isinstance(exc, Exception) and is_disk_full(exc, self.data_dir):
            return self._disk_full(self.data_dir, f"the erasure of {owner} could not finish "
                                   "(audit_user lists what is still stored); it stays pending: the user is not "
                                   "served until it is finished, when the store is next opened or the user erased "
                                   "again")
        return exc

    def _done_verifying(self, owner: Owner) -> None:
        key = owner.key
        with self._idle:
            self._verifying[key] -= 1
            if not self._verifying[key]:
                del self._verifying[key]
            self._idle.notify_all()

    def audit_user(self, *, tenant_id: str, user_id: str, disk_scan: bool = False) -> list[PathCheck]:
        """What every path holds of one user now: the erasure's own verification, run without erasing."""
        owner = Owner.of(tenant_id, user_id)
        return verify_erased(self, owner, evidence=Evidence.collect(self, owner), disk_scan=disk_scan)

    def _catch_up(self) -> None:
        """Before a read: when another client of the text file (another process on the folder, or on the same
        ``chroma run`` server with the same folder) has erased a user since this manager last looked, empty the caches
        that may hold that user's texts, as that erasure emptied its own (:meth:`MemoryStore.catch_up`). Until its
        next read a manager keeps what it cached: no client is told of an erasure, each looks."""
        if self.store.catch_up():  # which texts went, this client cannot know: every registered cache is emptied
            self.clear_caches()
            clear_text_caches()

    def clear_caches(self) -> int:
        """Drop every cached query embedding; returns how many were dropped."""
        return self._query_cache.clear()

    def cached_queries(self) -> list[str]:
        return list(self._query_cache)

    def owners(self) -> list[tuple[str, str]]:
        """Every (tenant, user) this workspace holds anything of: long-term records, a recent window or a summary."""
        return sorted(set(self.store.owners()) | set(self.store.text_owners()))

    def count(self, *, tenant_id: str, user_id: str) -> int:
        """The user's long-term records (the archive included), counted by the store."""
        owner = Owner.of(tenant_id, user_id)
        self._refuse_if_erasing(owner)
        return self.store.count(owner)

    def embeddings(self, memory_ids: list[str], *, tenant_id: str, user_id: str) -> dict[str, np.ndarray]:
        """The stored vectors of the user's records ``memory_ids`` (memory_id -> unit vector)."""
        owner = Owner.of(tenant_id, user_id)
        self._refuse_if_erasing(owner)
        return self.store.embeddings(memory_ids, owner=owner)

    def audit_log(self) -> list[dict[str, Any]]:
        """The workspace's audit trail (erasures, forgetting passes, ...), oldest first."""
        return self.store.audit_log()

    def decisions(self, *, tenant_id: str, user_id: str, message_id: str | None = None) -> list[dict[str, Any]]:
        """The user's logged write-path decisions, oldest first (only one message's with ``message_id``)."""
        owner = Owner.of(tenant_id, user_id)
        self._refuse_if_erasing(owner)
        return self.store.decisions(owner, message_id=message_id)

    def pending_plans(self) -> list[tuple[int, dict[str, Any]]]:
        """Journaled write plans not committed yet (a crashed writer's, or one being applied now)."""
        return self.store.pending_plans()

    def pending_erasures(self) -> list[PendingErasure]:
        """Erasures begun and not finished: running now (here or in another process of the folder), or interrupted
        and owed (their users are refused until :meth:`recover` finishes them)."""
        return self.store.texts.pending_erasures()

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
    """A plan's journal row was gone at commit time: someone else committed it, or an erasure by another writer
    deleted it (the transaction rolls back)."""


class _Scrubbed(_AlreadyCommitted):
    """A plan's journal row had lost owners at commit time: an erasure by another writer scrubbed them out of it (the
    transaction rolls back; the plan is applied again without them)."""


def _marked_owners(plan: Plan) -> set[tuple[str, str]]:
    """The owners of a plan's commit marks (in a plan of the write paths, every owner it writes for)."""
    return {(t, u) for t, u, _ in plan.ingested}


def _messages_in(plan: Plan) -> int:
    """How many messages a plan writes (each once: a message has two commit marks and one window entry)."""
    return len(plan.window) or len(plan.add) + len(plan.update)


def erased_message(dropped: Sequence[Message], *, stored: int, during: str) -> str:
    """The one line of the :class:`~memory.core.errors.ErasedError` of a batch call (``during``) some of whose
    messages were not stored because their user was erased while it ran: the users, how many messages (each once)
    and which, and how many were stored."""
    once = list({memory_id_for(m): m for m in dropped}.values())
    owners = sorted({(m.tenant_id, m.user_id) for m in once})
    names = ", ".join(repr(m.id) for m in once[:5]) + (", ..." if len(once) > 5 else "")
    return (f"{', '.join(f'({t!r}, {u!r})' for t, u in owners)} erased while {during} ran: "
            f"{len(once)} message(s) not stored ({names}); the other {stored} were stored")


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


def _message_from(data: dict) -> Message:
    data = dict(data)
    data["labels"] = tuple(data.get("labels", ()))
    return Message(**data)
