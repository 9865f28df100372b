"""The write path: turn -> atomic facts -> candidates -> adjudication -> versioned records, with a decision log.

``Ingestor(manager).ingest(message)`` runs synchronously and returns the decision-log
entries; ``ingest_async(message)`` enqueues and returns at once (one worker thread
drains the queue, ``flush()`` waits). Recall never waits for ingestion: the worker
holds the manager's lock only while it writes a batch, never while it extracts,
embeds or queries.

Per fact:

* candidates are the nearest stored facts of the same (tenant, user), read from the
  owner's own records (``MemoryStore.query_many`` with scope ``active``: not deprecated, not archived,
  not expired), kept to facts (raw messages stored by ``MemoryManager.add`` are not facts) of any
  category: the CANDIDATES nearest, and beyond them every fact of the fact's own attribute among the
  neighbours read (a category is the extractor's guess from the wording, so "Gave up on spanish" and
  "The user is learning spanish" fall in two; a filter on it hid the stored fact from the judge);
  facts accepted earlier in the same batch are candidates too;
* :func:`memory.write.adjudicate.adjudicate` decides; the decision is applied:
  ``duplicate`` bumps the stored fact's ``access_count`` and ``last_verified_at`` (no
  new vector); ``update`` deprecates the old record (``superseded_by`` = new id) and
  stores the new one with ``version = old + 1`` and ``supersedes`` = old id;
  ``coexist`` and ``new`` store the fact (with its context tag).

Ingestion is idempotent: fact ids are derived from the message's identity
(:func:`memory.runtime.manager.memory_id_for`: tenant, user, session, id, content) and the fact
text, and a message already ingested is not processed again (a true retry returns its
logged decisions). The same id in another session, or with other content, is another message.

A message fails alone: an exception while its facts are extracted, embedded or adjudicated
fails that message only (its future raises it; ``ingest_many`` raises :class:`IngestFailed`
after storing the others); every other message of the batch, other tenants included, is stored.
So does a message whose user is erased while it is written, in this process or by another writer of the folder
(:meth:`memory.MemoryManager.apply`): its future raises :class:`~memory.core.errors.ErasedError`, and
``ingest_many`` raises :class:`ErasedWhileIngesting` (both an IngestFailed and an ErasedError) when that is every
failure, after storing the other users' messages of the same batch.

Extraction is bounded per message (``read_chars``, see :mod:`memory.write.extract`): a turn longer
than that, or with a clause too long to read, is stored whole as a raw record as well, and the
decision log gets a ``bounded`` entry saying how much of it was read into facts.
"""

from __future__ import annotations

import hashlib
import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence

import numpy as np

from memory.write.adjudicate import CandidateRef, Decision, Judge, adjudicate, judge_models, offer_judge, prepare_judge
from memory.core.errors import ErasedError, InputError, MemoryLabError
from memory.core.owner import Owner
from memory.write.judges import DEFAULT_JUDGE, make_judge
from memory.write.extract import DEFAULT_READ_CHARS, Extraction, Fact, extract, read_limit
from memory.write.reading import read_statement
from memory.store.journal import Plan
from memory.runtime.manager import commit_marks, erased_message, memory_id_for, stamped
from memory.core.reasons import Reason
from memory.core.schema import Category, MemoryRecord, Message, validate_text

if TYPE_CHECKING:
    from memory.runtime.manager import MemoryManager

Extractor = Callable[..., "list[Fact] | Extraction"]
Progress = Callable[[int, int], None]

CANDIDATES = 5
"""The nearest stored facts (any category) a new fact is judged against, besides those of its own attribute."""
OVERFETCH = 4
"""The store query asks for CANDIDATES * OVERFETCH neighbours: the facts of the new fact's attribute among them are
judged too, however far down they rank (:meth:`Ingestor._decide_one`)."""
_LIKELY_MATES = 256
"""How many of a batch's earlier facts of one owner :meth:`Ingestor._likely_pairs` weighs per fact."""


def fact_id_for(message: Message, fact: Fact) -> str:
    """Deterministic id of a fact of a message: the same message ingested twice gives the same ids; another
    message (another identity, see :func:`memory.runtime.manager.memory_id_for`) saying the same gives other ids."""
    key = f"{message.tenant_id}\x1f{message.user_id}\x1f{memory_id_for(message)}\x1f{fact.text}"
    return "fact-" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


class IngestFailed(MemoryLabError):
    """Some messages of an ``ingest_many`` call failed; every other message was stored."""

    def __init__(self, failures: list[tuple[Message, BaseException]], entries: list["LogEntry"], *,
                 message: str | None = None) -> None:
        self.failures = failures
        """(message, the exception that failed it), in input order, each message once."""
        self.entries = entries
        """The decision-log entries of the messages that were stored."""
        names = "; ".join(f"{m.id!r}: {type(e).__name__}: {e}" for m, e in failures[:5])
        more = f"; and {len(failures) - 5} more" if len(failures) > 5 else ""
        super().__init__(message or f"{len(failures)} message(s) failed and were not stored ({names}{more}); "
                         f"the others were stored")


class ErasedWhileIngesting(IngestFailed, ErasedError):
    """Every message of an ``ingest_many`` call that was not stored was dropped because its user was erased while the
    call ran; every other message was stored (other users' in the same batch too)."""


@dataclass(frozen=True)
class LogEntry:
    """One decision of the write path, as persisted in the decision log."""

    tenant_id: str
    user_id: str
    message_id: str
    """The message the fact came from."""
    memory_id: str
    """The record that holds the fact afterwards: the new record, or the stored one for a duplicate."""
    category: Category | Literal[""]
    """The fact's category (candidates are drawn from every category)."""
    context: str
    """The fact's context qualifier ('' when none)."""
    decision: Decision
    """Fact, candidate, similarity, plain rule, governed decision and reason."""
    at: float
    """When the decision was taken (the message's time), POSIX seconds."""
    superseded: str = ""
    """For an update: the id of the record it retired."""
    message_key: str = ""
    """The message's identity (:func:`memory.runtime.manager.memory_id_for`): tells apart messages sharing an id."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant_id": self.tenant_id, "user_id": self.user_id, "message_id": self.message_id,
            "memory_id": self.memory_id, "category": self.category, "context": self.context,
            "superseded": self.superseded, "at": self.at, "message_key": self.message_key, **self.decision.to_dict(),
        }


WHOLE_MAX_FACTS = 3
"""A message of two to this many facts is also read whole, as one statement (:meth:`Ingestor._decide`)."""
WHOLE_MAX_CHARS = 240
"""... when it is at most this long: a short turn split into clauses says one thing about one stored fact or a few."""


@dataclass
class _Whole:
    """A short message of several facts, read whole as the pair path reads a statement: its verdict against the stored
    fact nearest it is the verdict of its clauses about that fact."""

    message: Message
    text: str
    vector: np.ndarray
    stored: list[tuple[MemoryRecord, float]]

    @property
    def owner(self) -> tuple[str, str]:
        return self.message.tenant_id, self.message.user_id


@dataclass
class _Pending:
    """A fact on its way through a batch."""

    message: Message
    fact: Fact
    memory_id: str
    vector: np.ndarray
    error: BaseException | None = None
    """Set when the message's adjudication raised: the message fails alone."""


@dataclass
class _Bounded:
    """A message not wholly read into facts: its raw record is stored too, and a ``bounded`` entry logged."""

    message: Message
    read_chars: int
    long_clauses: int
    vector: np.ndarray


class Ingestor:
    """The governed write path of a :class:`MemoryManager` (uses its store, embedder and config).

    Args:
        manager: where facts are stored.
        extractor: ``extractor(text, max_chars=...) -> [Fact] | Extraction``; the deterministic
            :func:`memory.write.extract.extract` by default (injectable for tests). It is given the first
            ``read_chars`` characters of each message (see :func:`memory.write.extract.read_limit`).
        candidates: stored facts each fact is judged against.
        judge: decides each (stored, incoming) pair, a :class:`memory.write.adjudicate.Judge`; by default the
            learned judge (``make_judge(DEFAULT_JUDGE)``: memory.write.judges). Pass
            :func:`memory.write.adjudicate.judge_reason` for the rules.
        roles: message roles facts are extracted from (assistant and tool turns speak
            about themselves, not about the user).
        batch_size: messages per batch (one embedding call and one store query per owner).
        read_chars: characters of a message read into facts (the per-message bound of extraction:
            its time is linear in this). A longer message is stored whole as a raw record too.
    """

    def __init__(
        self, manager: "MemoryManager", *, extractor: Extractor = extract, candidates: int = CANDIDATES,
        judge: Judge | None = None, roles: Sequence[str] = ("user",), batch_size: int = 256, read_chars: int = DEFAULT_READ_CHARS,
    ) -> None:
        if read_chars < 1:
            raise InputError(f"read_chars must be >= 1, got {read_chars}")
        if candidates < 1:
            raise InputError(f"candidates must be >= 1, got {candidates}")
        if batch_size < 1:
            raise InputError(f"batch_size must be >= 1, got {batch_size}")
        self.manager = manager
        self.extractor = extractor
        self.judge = judge if judge is not None else make_judge(DEFAULT_JUDGE)
        self.candidates = candidates
        self.roles = tuple(roles)
        self.batch_size = batch_size
        self.read_chars = read_chars
        self._write_lock = threading.Lock()  # one batch at a time through adjudication and writing
        self._queue: queue.Queue[tuple[Message, Future, dict] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()

    # --- synchronous ------------------------------------------------------------------------
    def ingest(self, message: Message) -> list[LogEntry]:
        """Extract, adjudicate and store one message's facts; returns its decision-log entries."""
        return self.ingest_many([message])

    def ingest_many(self, messages: Sequence[Message], *, progress: Progress | None = None) -> list[LogEntry]:
        """Ingest messages in order, in batches. Every message is validated first: bad input changes nothing.

        A message that fails (an exception while its facts are extracted, embedded or adjudicated)
        fails alone: every other message is stored, then :class:`IngestFailed` lists the failures.
        """
        for i, m in enumerate(messages):
            self._validate(m, f"messages[{i}]")
        messages = stamped(messages, self.manager.clock)
        epochs = self.manager.epochs({(m.tenant_id, m.user_id) for m in messages})
        out: list[LogEntry] = []
        failed_by_key: dict[str, tuple[Message, BaseException]] = {}  # each message once, even if given twice
        for start in range(0, len(messages), self.batch_size):
            batch = list(messages[start : start + self.batch_size])
            entries, failed = self._ingest_batch(batch, epochs)
            out += entries
            failed_by_key.update((memory_id_for(m), (m, failed[memory_id_for(m)])) for m in batch
                                 if memory_id_for(m) in failed and memory_id_for(m) not in failed_by_key)
            if progress:
                progress(min(start + self.batch_size, len(messages)), len(messages))
        failures = list(failed_by_key.values())
        if failures and all(isinstance(e, ErasedError) for _, e in failures):
            stored = len({memory_id_for(m) for m in messages} - set(failed_by_key))
            raise ErasedWhileIngesting(failures, out, message=erased_message(
                [m for m, _ in failures], stored=stored, during="ingest_many"))
        if failures:
            raise IngestFailed(failures, out)
        return out

    # --- asynchronous -----------------------------------------------------------------------
    def ingest_async(self, message: Message) -> "Future[list[LogEntry]]":
        """Validate, enqueue and return at once; the future resolves to the message's log entries."""
        self._validate(message, "message")
        [message] = stamped([message], self.manager.clock)  # accepted now: its time, if it has no id
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

        def drain() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=drain, daemon=True).start()
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
            entries, failed = self._ingest_batch([m for m, _, e in work if e == {k: epochs[k] for k in e}], epochs)
        except BaseException as exc:  # the batch itself failed (store, model): every waiting caller learns of it
            for _, fut, _ in work:
                fut.set_exception(exc)
            return
        now = self.manager.epochs(epochs)
        for message, fut, epoch in work:
            owner, key = (message.tenant_id, message.user_id), memory_id_for(message)
            if key in failed and not isinstance(failed[key], ErasedError):
                fut.set_exception(failed[key])
            elif epoch[owner] != now[owner] or epoch[owner] != epochs[owner]:
                fut.set_exception(ErasedError(
                    f"({message.tenant_id!r}, {message.user_id!r}) was erased while message {message.id!r} "
                    "was queued; it was not stored"))
            elif key in failed:  # erased by another writer of the folder while the batch was written
                fut.set_exception(failed[key])
            else:
                fut.set_result([e for e in entries if (e.tenant_id, e.user_id, e.message_key) == (*owner, key)])

    # --- inspection -------------------------------------------------------------------------
    def decisions(self, *, tenant_id: str, user_id: str, message_id: str | None = None) -> list[dict[str, Any]]:
        """The persisted decision log of one (tenant, user), oldest first."""
        return self.manager.decisions(tenant_id=tenant_id, user_id=user_id, message_id=message_id)

    def version_chain(self, memory_id: str, *, tenant_id: str, user_id: str) -> list[MemoryRecord]:
        """Every version of a fact, oldest first (see :func:`memory.runtime.lifecycle.version_chain`)."""
        from memory.runtime.lifecycle import version_chain

        return version_chain(self.manager, memory_id, tenant_id=tenant_id, user_id=user_id)

    # --- the batch ----------------------------------------------------------------------------
    def _validate(self, message: Any, where: str) -> None:
        if not isinstance(message, Message):
            raise InputError(f"{where} must be a Message, got {type(message).__name__}")
        validate_text(message.content, f"{where} ({message.id}) content", max_chars=self.manager.config.max_message_chars)

    def _ingest_batch(self, messages: list[Message], epochs: dict[tuple[str, str], int] | None = None
                      ) -> tuple[list[LogEntry], dict[str, BaseException]]:
        """Ingest one batch; returns its log entries and the failures by message identity (failed messages
        change nothing and are not marked ingested, so they can be retried). A message of a user erased while the
        batch was written (:meth:`memory.MemoryManager.apply` dropped its owner) fails with ErasedError."""
        manager = self.manager
        if epochs is None:
            epochs = manager.epochs({(m.tenant_id, m.user_id) for m in messages})
        with self._write_lock:
            fresh, replayed = self._split_done(messages)
            failed: dict[str, BaseException] = {}
            pending, bounded = self._extract(fresh, failed)
            wholes = self._wholes(pending, bounded)
            self._embed(pending, bounded, failed, wholes)
            pending = [p for p in pending if memory_id_for(p.message) not in failed]
            entries, added, changed = self._decide(pending, wholes)
            failed.update((memory_id_for(p.message), p.error) for p in pending if p.error is not None)
            bounded = [b for b in bounded if memory_id_for(b.message) not in failed]
            stored = [m for m in fresh if memory_id_for(m) not in failed]
            raws = [(manager.record_for(b.message), b.vector) for b in bounded]
            entries += [self._bounded_entry(b) for b in bounded]
            added = added + raws
            with manager.writing():  # short: the writes only (journaled: see memory.store.journal)
                plan = Plan(
                    add=[r for r, _ in added], vectors=np.stack([v for _, v in added]) if added else None,
                    update=_rebase(manager.store, changed), window=stored,
                    decisions=[(e.tenant_id, e.user_id, e.message_id, e.at, e.to_dict()) for e in entries],
                    ingested=commit_marks(stored),
                )
                applied = manager.apply(plan, epochs=epochs)
        kept = {(t, u) for t, u, _ in applied.ingested}
        for m in stored:
            if (m.tenant_id, m.user_id) not in kept:
                failed[memory_id_for(m)] = ErasedError(f"({m.tenant_id!r}, {m.user_id!r}) was erased while message "
                                                       f"{m.id!r} was written; it was not stored")
        return replayed + [e for e in entries if (e.tenant_id, e.user_id) in kept], failed

    def _split_done(self, messages: list[Message]) -> tuple[list[Message], list[LogEntry]]:
        """Messages not ingested yet (each identity once), and the logged entries of those that were."""
        fresh = self.manager.not_ingested(messages)
        fresh_keys = {memory_id_for(m) for m in fresh}
        replayed, seen = [], set()
        for m in messages:
            key = memory_id_for(m)
            if key not in fresh_keys and key not in seen:
                replayed += [_entry_from_log(d) for d in self.manager.decisions(tenant_id=m.tenant_id, user_id=m.user_id,
                                                                      message_id=m.id)
                             if d.get("message_key", key) == key]  # older logs have no key: by id
            seen.add(key)
        return fresh, replayed

    def _extract(self, messages: list[Message], failed: dict[str, BaseException]
                 ) -> tuple[list[_Pending], list[_Bounded]]:
        """Facts of each message (read up to ``read_chars``); a message whose extraction raises fails alone."""
        out: list[_Pending] = []
        bounded: list[_Bounded] = []
        for m in messages:
            if m.role not in self.roles:
                continue
            try:
                cut = read_limit(m.content, self.read_chars)
                result = self.extractor(m.content[:cut], max_chars=self.manager.config.max_message_chars)
                facts = result.facts if isinstance(result, Extraction) else list(result)
                long_clauses = result.long_clauses if isinstance(result, Extraction) else 0
                mine = {fact_id_for(m, f): f for f in facts}  # in order, each fact once
            except Exception as exc:  # this message fails alone
                failed[memory_id_for(m)] = exc
                continue
            if cut < len(m.content) or long_clauses:
                bounded.append(_Bounded(m, cut, long_clauses, np.zeros(0, dtype=np.float32)))
            out += [_Pending(m, f, fid, np.zeros(0, dtype=np.float32)) for fid, f in mine.items()]
        return out, bounded

    @staticmethod
    def _wholes(pending: list[_Pending], bounded: list[_Bounded]) -> dict[str, _Whole]:
        """Message key -> the message read whole, for each short message wholly read into 2 to WHOLE_MAX_FACTS facts."""
        counts: dict[str, int] = {}
        first: dict[str, Message] = {}
        for p in pending:
            key = memory_id_for(p.message)
            counts[key] = counts.get(key, 0) + 1
            first.setdefault(key, p.message)
        cut = {memory_id_for(b.message) for b in bounded}
        return {key: _Whole(m, m.content.strip(), np.zeros(0, dtype=np.float32), []) for key, m in first.items()
                if 2 <= counts[key] <= WHOLE_MAX_FACTS and key not in cut and len(m.content.strip()) <= WHOLE_MAX_CHARS}

    def _embed(self, pending: list[_Pending], bounded: list[_Bounded], failed: dict[str, BaseException],
               wholes: dict[str, _Whole] | None = None) -> None:
        """One embedding call for the batch; if it raises, one call per message, and a message whose call
        raises fails alone."""
        wholes = wholes or {}
        items: list[_Pending | _Bounded | _Whole] = [*pending, *bounded, *wholes.values()]
        if not items:
            return
        embed = self.manager.embedder.embed
        try:
            vectors = embed([_text_of(x) for x in items])
        except Exception:
            vectors = None
        if vectors is not None:
            for x, v in zip(items, vectors):
                x.vector = v
            return
        by_message: dict[str, list[_Pending | _Bounded | _Whole]] = {}
        for one in pending:
            by_message.setdefault(memory_id_for(one.message), []).append(one)
        for raw in bounded:
            by_message.setdefault(memory_id_for(raw.message), []).append(raw)
        for key, w in wholes.items():
            by_message.setdefault(key, []).append(w)
        for key, mine in by_message.items():
            try:
                for x, v in zip(mine, embed([_text_of(x) for x in mine])):
                    x.vector = v
            except Exception as exc:
                failed[key] = exc

    def _bounded_entry(self, b: _Bounded) -> LogEntry:
        m = b.message
        at = m.timestamp if m.timestamp is not None else self.manager.clock()
        why = Reason("bounded.read_prefix", {"read_chars": f"{b.read_chars:,}", "total_chars": f"{len(m.content):,}",
                                             "read_limit": f"{self.read_chars:,}", "long_clauses": b.long_clauses})
        decision = Decision(f"({len(m.content):,}-character turn, stored raw)", None, None, "", "bounded", why)
        return LogEntry(m.tenant_id, m.user_id, m.id, memory_id_for(m), "", "", decision, at,
                        message_key=memory_id_for(m))

    def _decide(self, pending: list[_Pending], wholes: dict[str, _Whole] | None = None
                ) -> tuple[list[LogEntry], list[tuple[MemoryRecord, np.ndarray]], list[tuple[MemoryRecord, MemoryRecord]]]:
        """Adjudicate every fact in order; returns log entries, records to add and (as read, as changed) stored records.

        The facts of one message are decided together: if one raises, the message's other decisions
        are undone and the message fails alone (the exception is set on its facts' ``error``).

        A short message split into a few clauses (``wholes``) is first judged whole, as the pair path judges a
        statement, against the stored facts nearest it: a turn such as "I pay 45 bucks monthly for my mobile, and the
        data's unlimited" restates one stored fact though neither clause alone does, and "I switched teams at Google,
        now I'm on Maps" does not replace "works at Google" though its first clause alone reads as if it did. That
        verdict decides the clauses' relation to the stored fact it names: a duplicate makes every clause a
        duplicate of it; an update retires it, the first clause its new version; otherwise no clause may
        duplicate or update it. Every other relation is each clause's own.
        """
        cfg = self.manager.config
        wholes = {k: w for k, w in (wholes or {}).items() if w.vector.size}
        stored = self._stored_candidates(pending, wholes)
        entries: list[LogEntry] = []
        added: dict[str, tuple[MemoryRecord, np.ndarray]] = {}
        changed: dict[str, MemoryRecord] = {}
        shelf: dict[tuple[str, str], list[str]] = {}  # (tenant, user) -> ids added in this batch
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(pending):
            groups.setdefault(memory_id_for(p.message), []).append(i)
        self._offer_vectors(pending, stored, wholes)
        if getattr(self.judge, "prepare", None) is not None:
            likely = self._likely_pairs(pending, stored) + [
                (r.content, w.text) for w in wholes.values() for r, _ in w.stored[: self.candidates]
                if r.memory_id.startswith("fact-")]
            prepare_judge(self.judge, [p.fact.judged for p in pending] + [w.text for w in wholes.values()]
                          + [r.content for row in stored for r, _ in row], likely)
        for key, idx in groups.items():
            saved = (dict(added), dict(changed), {k: list(v) for k, v in shelf.items()}, len(entries))
            try:
                whole = wholes.get(key)
                named = self._decide_whole(pending[idx[0]], whole, cfg, added, changed, shelf) if whole else None
                for n, i in enumerate(idx):
                    entries.append(self._decide_one(pending[i], stored[i], cfg, added, changed, shelf, whole=named,
                                                    leads=n == 0))
            except Exception as exc:  # this message fails alone: undo its decisions
                added, changed, shelf = saved[0], saved[1], saved[2]
                del entries[saved[3]:]
                for i in idx:
                    pending[i].error = exc
        read = {r.memory_id: r for row in [*stored, *(w.stored for w in wholes.values())] for r, _ in row}
        return entries, list(added.values()), [(read[i], c) for i, c in changed.items()]

    def _decide_whole(self, p: _Pending, whole: _Whole, cfg: Any, added: dict[str, tuple[MemoryRecord, np.ndarray]],
                      changed: dict[str, MemoryRecord], shelf: dict[tuple[str, str], list[str]]
                      ) -> tuple[Decision, MemoryRecord] | None:
        """The message read whole against the facts nearest it (:meth:`_decide`): the decision and the stored fact it
        names (the clauses' relation to that fact), or None."""
        pool = self._pool(p, whole.stored, whole.vector, added, changed, shelf)
        decision = adjudicate(whole.text, [(CandidateRef(r.memory_id, r.content), s) for r, s in pool], config=cfg,
                              judge=self.judge)
        target = next((r for r, _ in pool if decision.candidate and r.memory_id == decision.candidate.id), None)
        return (decision, target) if target is not None else None

    def _pool(self, p: _Pending, stored: list[tuple[MemoryRecord, float]], vector: np.ndarray,
              added: dict[str, tuple[MemoryRecord, np.ndarray]], changed: dict[str, MemoryRecord],
              shelf: dict[tuple[str, str], list[str]], *, exclude: str = "") -> list[tuple[MemoryRecord, float]]:
        """The candidates of ``p``'s fact (or of its message read whole, by ``vector``): see :meth:`_decide_one`."""
        owner = (p.message.tenant_id, p.message.user_id)
        pool = [(changed.get(r.memory_id, r), s) for r, s in stored if r.memory_id.startswith("fact-")]
        for mid in shelf.get(owner, ()):
            r, v = added[mid]
            pool.append((r, float(v @ vector)))
        pool = [(r, s) for r, s in pool if not r.is_deprecated and r.memory_id not in (p.memory_id, exclude)]
        pool.sort(key=lambda rs: (-rs[1], rs[0].memory_id))
        return pool[: self.candidates] + [(r, s) for r, s in pool[self.candidates:] if _same_attribute(r.content, p.fact)]

    def _offer_vectors(self, pending: list[_Pending], stored: list[list[tuple[MemoryRecord, float]]],
                       wholes: dict[str, _Whole] | None = None) -> None:
        """When the judge reads the store's model: hand it the batch's fact vectors and the stored candidates'
        vectors (one read per owner from the store), so the judge encodes none of them again (issue 49)."""
        model = getattr(self.manager.embedder, "name", "")
        if model not in judge_models(self.judge):
            return
        # the fact's vector stands for the clause as said too (the same statement in the speaker's person)
        wholes = wholes or {}
        offer_judge(self.judge, model, [p.fact.text for p in pending] + [p.fact.said for p in pending if p.fact.said]
                    + [w.text for w in wholes.values()],
                    [p.vector for p in pending] + [p.vector for p in pending if p.fact.said]
                    + [w.vector for w in wholes.values()])
        by_owner: dict[tuple[str, str], dict[str, str]] = {}
        rows = [((p.message.tenant_id, p.message.user_id), row) for p, row in zip(pending, stored)]
        for owner, row in rows + [(w.owner, w.stored) for w in wholes.values()]:
            mine = by_owner.setdefault(owner, {})
            mine.update((r.memory_id, r.content) for r, _ in row if r.memory_id.startswith("fact-"))
        read = getattr(self.manager.store, "embeddings", None)
        if read is None:
            return
        for key, texts in by_owner.items():
            if texts:
                found = read(list(texts), owner=Owner(*key))
                offer_judge(self.judge, model, [texts[i] for i in found], list(found.values()))

    def _likely_pairs(self, pending: list[_Pending], stored: list[list[tuple[MemoryRecord, float]]]
                      ) -> list[tuple[str, str]]:
        """The (stored, incoming) pairs the judge will most likely be asked: each fact against the nearest of its
        stored candidates and of the batch's earlier facts of its owner (the pool :meth:`_decide_one` builds depends
        on the decisions, and may add facts of the fact's attribute). Only for :func:`prepare_judge`'s warm-up."""
        earlier: dict[tuple[str, str], list[_Pending]] = {}
        out: list[tuple[str, str]] = []
        for p, row in zip(pending, stored):
            key = (p.message.tenant_id, p.message.user_id)
            near = [(r.content, s) for r, s in row if r.memory_id.startswith("fact-")]
            mates = earlier.setdefault(key, [])[-_LIKELY_MATES:]
            if mates:
                sims = np.stack([q.vector for q in mates]) @ p.vector
                near += [(q.fact.text, float(s)) for q, s in zip(mates, sims)]
            near.sort(key=lambda ts: -ts[1])
            out += [(text, p.fact.judged) for text, _ in near[: self.candidates + 2] if text != p.fact.text]
            earlier[key].append(p)
        return out

    def _decide_one(self, p: _Pending, stored: list[tuple[MemoryRecord, float]], cfg: Any,
                    added: dict[str, tuple[MemoryRecord, np.ndarray]], changed: dict[str, MemoryRecord],
                    shelf: dict[tuple[str, str], list[str]], *, whole: tuple[Decision, MemoryRecord] | None = None,
                    leads: bool = False) -> LogEntry:
        """Adjudicate one fact against its candidates and apply the decision to this batch's changes.

        The candidates: the ``candidates`` nearest active facts of the owner, of any category, then every other one
        among those read whose reading has the fact's attribute and subject (:func:`_same_attribute`), so a stored
        value of the same attribute is always judged, however the two statements were categorised or worded.

        ``whole``: the verdict of the fact's message read whole and the stored fact it names (:meth:`_decide`), which
        decides this fact's relation to that stored fact; ``leads``: the fact is its message's first."""
        owner = (p.message.tenant_id, p.message.user_id)
        verdict, named = whole if whole is not None else (None, None)
        if verdict is not None and named is not None and (
                verdict.decision == "duplicate" or verdict.decision == "update" and leads):
            found = added[named.memory_id][0] if named.memory_id in added else changed.get(named.memory_id, named)
            by_id = {found.memory_id: found}
            decision = replace(verdict, fact=p.fact.text)
        else:
            pool = self._pool(p, stored, p.vector, added, changed, shelf, exclude=named.memory_id if named else "")
            by_id = {r.memory_id: r for r, _ in pool}
            decision = adjudicate(p.fact.text, [(CandidateRef(r.memory_id, r.content), s) for r, s in pool],
                                  config=cfg, judge=self.judge, said=p.fact.said)
            if decision.decision == "new" and verdict is not None and verdict.decision in ("new", "coexist"):
                # related to nothing else: the message's own verdict on the fact it was read against
                decision = replace(verdict, fact=p.fact.text)
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
            shelf.setdefault(owner, []).append(record.memory_id)
        return LogEntry(owner[0], owner[1], p.message.id, memory_id, p.fact.category, p.fact.context,
                        decision, at, superseded, message_key=memory_id_for(p.message))

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

    def _stored_candidates(self, pending: list[_Pending], wholes: dict[str, _Whole] | None = None
                           ) -> list[list[tuple[MemoryRecord, float]]]:
        """Nearest active stored facts of each fact's owner (and of each message read whole, set on the
        :class:`_Whole`): one read of that owner's records per batch (:meth:`MemoryStore.query_many`), never anyone
        else's."""
        wholes = wholes or {}
        out: list[list[tuple[MemoryRecord, float]]] = [[] for _ in pending]
        groups: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(pending):
            groups.setdefault((p.message.tenant_id, p.message.user_id), []).append(i)
        mine: dict[tuple[str, str], list[_Whole]] = {}
        for w in wholes.values():
            mine.setdefault(w.owner, []).append(w)
        store, k = self.manager.store, self.candidates * OVERFETCH
        for key, idx in groups.items():
            now = max((pending[i].message.timestamp or self.manager.clock()) for i in idx)
            ws = mine.get(key, [])
            vecs = np.stack([pending[i].vector for i in idx] + [w.vector for w in ws]).astype(np.float32)
            found = store.query_many(vecs, owner=Owner(*key), n=k, scope="active", now=now)
            for i, pairs in zip(idx, found):
                out[i] = pairs
            for w, pairs in zip(ws, found[len(idx):]):
                w.stored = pairs
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
    for key, pairs in owners.items():
        now = store.get([r.memory_id for r, _ in pairs], owner=Owner(*key))
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


def _same_attribute(stored: str, fact: Fact) -> bool:
    """The stored statement reads as the fact's attribute of the fact's subject (both read, neither unread)."""
    if not fact.attribute:
        return False
    reading = read_statement(stored)
    return reading.attribute == fact.attribute and reading.subject == fact.subject


def _with(ids: list[str], new_id: str) -> list[str]:
    return list(ids) if new_id in ids else [*ids, new_id]


def _text_of(item: "_Pending | _Bounded | _Whole") -> str:
    if isinstance(item, _Whole):
        return item.text
    return item.fact.text if isinstance(item, _Pending) else item.message.content


def _entry_from_log(d: dict[str, Any]) -> LogEntry:
    cand = d.get("candidate")
    decision = Decision(d["fact"], CandidateRef(cand["id"], cand["text"]) if cand else None, d.get("similarity"),
                        d["plain_rule"], d["decision"], Reason.from_dict(d))
    return LogEntry(d["tenant_id"], d["user_id"], d["message_id"], d["memory_id"], d["category"], d["context"],
                    decision, d["at"], d.get("superseded", ""), d.get("message_key", ""))
