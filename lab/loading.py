"""Loading a scenario into a lab workspace: in large batches, cancellable, optionally in a background thread.

:func:`load_messages` is the lab's ingest path (``bench/upload_ingest.py`` times it): messages go
through the sidebar's write path ``LOAD_BATCH`` at a time, so the store pays its per-call costs
(a Chroma upsert, a journal entry, a text-store transaction) a few times per thousand messages
instead of dozens. :class:`IngestJob` runs it in a daemon thread for one lab session; the page
polls the job's progress and its Cancel button sets a flag the loader reads between batches.

Every batch holds :data:`SLOT`, so the background jobs of several sessions take turns batch by
batch (one session's 8,000-message upload does not hold the others back until it ends) and a
test can pause a job between two batches.

Background jobs also **give way** to page runs (:data:`FOREGROUND`): ``app.py`` counts every page run
in progress, and a job's thread waits at its next give-way point while any is running (before each
message's extraction and between the model's own batches of similar-length texts: :func:`giving_way`), bounded so
that the job still gets at least half of the time a busy room leaves (:class:`Foreground`). On two
cores the job's embedding and pure-Python extraction otherwise take the cores and the interpreter lock
from another participant's slider rerun (``bench/room_load.py`` measures it). This module never imports
streamlit.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator, Literal, Sequence

import numpy as np

from memory import (
    BusyError, DiskFullError, Embedder, Ingestor, MemoryConfig, MemoryManager, Message, Snapshot, StoreLocation, dedupe, extract,
    DEFAULT_JUDGE, length_batches, make_judge, snapshot, validate_text,
)

log = logging.getLogger(__name__)

LOAD_BATCH = 1024
"""Messages per write call (one write plan: one Chroma upsert per owner, one journal entry, one text-store
transaction). Each plan pays one upsert per owner in it, and chromadb's upsert holds the interpreter lock for its
whole call, so the model cannot embed the next plan meanwhile (measured: 256 texts embedded in another thread while 30
upserts ran took as long as the two one after the other, in
three runs of an ad-hoc probe). ``python -m bench.upload_ingest --plans 256`` (best of 3,
2026-12-04, a busy machine; bench/results/upload_ingest_plans256.md), the lab's job against encoding the messages once,
plans of 256 -> 1,024: at 300 messages raw 1.69x -> 1.50x and facts 2.39x -> 1.95x, at 1,500 raw 1.27x and 1.30x (no
difference) and facts 1.84x -> 1.69x. Before that, 256 replaced 32 (the write path's own cost 12.9 s -> 4.0 s raw, 15.7 s -> 8.0 s facts). The price of a larger
plan: a cancel waits for the plan in progress (about 2 s of the model's time at 1,024 on two cores), and another
session's job waits as long for :data:`SLOT`. The progress bar still moves within a plan: it follows the model's
batches (:attr:`IngestJob.fraction`)."""
BACKGROUND_AT = 200
"""Scenarios with at least this many messages load in a background job; smaller ones (the shipped
scenarios) load in the page's own run, which takes about a second."""
SLOT = threading.Semaphore(1)
"""Held while a background job writes one batch: jobs of different sessions alternate batch by batch."""

Progress = Callable[[int, int], None]
JobState = Literal["queued", "running", "done", "cancelled", "failed"]
EMBED_CHUNK = 64
"""Texts a background job embeds between two give-way points, when the embedder names no ``batch_size`` of its own:
one model batch (MiniLM's is 64, about 0.2 s on this machine's two cores). Smaller chunks cost the model more per
text: the lab's upload of 1,500 messages (raw) took 2.42x encoding them once giving way every 8 texts, 1.64x giving
way between the model's batches (``python -m bench.upload_ingest``, 2026-12-03)."""
MAX_GIVE_WAY = 1.0
"""Longest single wait of a background job for page runs to end (seconds)."""


class Foreground:
    """Page runs in progress, which background jobs give way to.

    :meth:`running` wraps a page run. :meth:`give_way`, called from a background job's thread, waits while any
    page run is in progress, for at most as long as the job worked since its last wait (and
    :data:`MAX_GIVE_WAY`): a room that never stops rerunning still leaves a job half of the time.
    Every judgement of the write path is a give-way point too (:func:`giving_way_judge`).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._active = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._worked_from = threading.local()

    @contextmanager
    def running(self) -> Iterator[None]:
        with self._lock:
            self._active += 1
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1
                if self._active == 0:
                    self._idle.set()

    @property
    def active(self) -> int:
        return self._active

    def give_way(self) -> float:
        """Wait for the page runs in progress, for at most as long as this thread worked since it last waited
        (and :data:`MAX_GIVE_WAY`); the seconds waited. Give-way points are frequent and short (one message's
        extraction), so the work is counted from the last wait, not from the last point."""
        now = self._clock()
        started = getattr(self._worked_from, "at", None)
        if started is None:
            self._worked_from.at = started = now
        if self._idle.is_set():
            return 0.0
        self._idle.wait(min(MAX_GIVE_WAY, now - started))
        self._worked_from.at = self._clock()
        return self._worked_from.at - now


FOREGROUND = Foreground()
"""The process's page runs (``app.py`` wraps each run in ``FOREGROUND.running()``)."""
_job_thread = threading.local()
"""``on`` in a background job's thread: only there do give-way points wait. ``embedded``: a callable told, after each
model batch of the job's embedding call, the share of that call's texts embedded so far."""
EMBED_SHARE = 0.7
"""The model's share of a write plan's time in the lab's upload job (py-spy of the 300-message upload: 67% raw and
facts alike), which :attr:`IngestJob.fraction` credits as a plan's texts are embedded."""


def _embedded(share: float) -> None:
    report = getattr(_job_thread, "embedded", None)
    if report is not None:
        report(share)


def give_way() -> None:
    """A give-way point: in a background job's thread, wait for the page runs in progress (bounded)."""
    if getattr(_job_thread, "on", False):
        FOREGROUND.give_way()


class GivingWayEmbedder:
    """An embedder that, in a background job's thread, gives way between the model's batches (vectors identical to
    the wrapped embedder's; a page's own calls are passed through whole).

    The texts are grouped the way the model batches them (distinct texts sorted by token length, ``batch_size``
    at a time: :func:`memory.embed.embedders.length_batches`), and each group is one call, so a give-way point
    falls between two model batches, never inside one, and no batch is padded for a longer text of another."""

    def __init__(self, inner: Embedder, *, chunk: int | None = None) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim
        self._chunk = chunk

    @property
    def chunk(self) -> int:
        """Texts per call in a job's thread: ``chunk`` if given, else the wrapped model's batch size, else
        :data:`EMBED_CHUNK`."""
        size = self._chunk or getattr(self.inner, "batch_size", None)
        return size if isinstance(size, int) and size > 0 else EMBED_CHUNK

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        chunk = self.chunk
        if not getattr(_job_thread, "on", False) or len(texts) <= chunk:
            give_way()
            vectors = self.inner.embed(texts)
            _embedded(1.0)
            return vectors
        unique, where = dedupe(texts)
        measure = getattr(self.inner, "token_lengths", None)
        lengths = measure(unique) if callable(measure) else np.fromiter(map(len, unique), np.int64, len(unique))
        out = np.empty((len(unique), self.dim), dtype=np.float32)
        done = 0
        for batch in length_batches(lengths, chunk):
            give_way()
            out[batch] = self.inner.embed([unique[i] for i in batch])
            done += len(batch)
            _embedded(done / len(unique))
        return out[where]

    def __getattr__(self, name: str) -> Any:  # anything else the wrapped embedder offers
        return getattr(self.inner, name)


def giving_way_judge(judge: Callable[..., Any]) -> Callable[..., Any]:
    """An Ingestor judge with a give-way point before each (stored, incoming) pair is judged (and before a judge
    with a model of its own embeds a batch: ``prepare``). Such a judge's ``models`` and ``offer`` pass through, so the
    write path still hands it the store's vectors (memory.write.judges.learned.LearnedJudge.offer)."""
    def decide(existing: str, incoming: str, similarity: float, **kw: Any) -> Any:
        give_way()
        return judge(existing, incoming, similarity, **kw)
    prepare = getattr(judge, "prepare", None)
    if prepare is not None:
        def prepared(texts: Sequence[str], pairs: Sequence[tuple[str, str]] = ()) -> None:
            give_way()
            prepare(texts, pairs)
        decide.prepare = prepared  # type: ignore[attr-defined]
    for name in ("models", "offer"):
        if getattr(judge, name, None) is not None:
            setattr(decide, name, getattr(judge, name))
    return decide


def giving_way(extractor: Callable[..., Any]) -> Callable[..., Any]:
    """An Ingestor extractor with a give-way point before each message's extraction."""
    def extract(text: str, **kw: Any) -> Any:
        give_way()
        return extractor(text, **kw)
    return extract


def lab_workspace(embedder: Embedder, write_path: str, location: StoreLocation, workspace: str, *,
                  config: MemoryConfig, token_counter: Callable[[str], int] | None = None,
                  chunk: int | None = None, judge: str = DEFAULT_JUDGE) -> tuple[MemoryManager, Ingestor | None]:
    """A lab workspace's manager and write path (None for ``raw``), as every lab makes it (lab.engine) and
    ``bench/upload_ingest.py`` times it: the embedder gives way between model batches in a background job, and so
    do the write path's extraction and judgements. ``chunk`` overrides the texts per embedding call (a bench's
    before figure). ``judge`` names the write path's judge (memory.write.judges: rules or learned)."""
    manager = MemoryManager(config, embedder=GivingWayEmbedder(embedder, chunk=chunk), location=location,
                            workspace=workspace, token_counter=token_counter)
    ingestor = Ingestor(manager, batch_size=LOAD_BATCH, extractor=giving_way(extract),
                        judge=giving_way_judge(make_judge(judge))) if write_path == "facts" else None
    return manager, ingestor


def load_messages(manager: MemoryManager, ingestor: Ingestor | None, messages: Sequence[Message], *,
                  progress: Progress | None = None, cancelled: Callable[[], bool] = lambda: False,
                  slot: ContextManager | None = None, plan: Callable[[int], None] | None = None) -> int:
    """Write ``messages`` in order through the write path (as-is with no ``ingestor``, else through it),
    ``LOAD_BATCH`` at a time; returns how many were written.

    Every message is validated first, so bad input writes nothing. ``cancelled`` is asked before every
    batch (also after waiting for ``slot``): once it says yes, the load stops and the messages before
    it stay written (each batch is written whole or not at all by the manager's journal). ``plan(n)`` is told the
    size of each batch as it starts (after ``slot``).
    """
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            raise TypeError(f"messages[{i}] must be a Message, got {type(m).__name__}")
        validate_text(m.content, f"messages[{i}] ({m.id}) content", max_chars=manager.config.max_message_chars)
    total, done = len(messages), 0
    for start in range(0, total, LOAD_BATCH):
        if cancelled():
            break
        batch = list(messages[start : start + LOAD_BATCH])
        with slot or nullcontext():
            if cancelled():
                break
            if plan:
                plan(len(batch))
            if ingestor is None:
                manager.add_many(batch, batch_size=len(batch))
            else:
                ingestor.ingest_many(batch)
        done += len(batch)
        if progress:
            progress(done, total)
    return done


class Bases:
    """Starting states of labs, each built once per process: key (shipped scenario, model, write path) -> the
    :class:`memory.Snapshot` of a workspace that loaded it through the write path.

    A room's arrivals all open the same starting state: the first builds it (extraction, judgements, embeddings), every
    other starts its own workspace from a copy (:func:`memory.restore`: a few Chroma calls, no model). Two arrivals
    asking for a base that is being built wait for that one build. A base holds only a shipped scenario's texts, never a
    participant's: uploads are loaded into their own lab, not here. A failed build is not kept (the next arrival tries
    again)."""

    def __init__(self) -> None:
        self._bases: dict[Any, Snapshot] = {}
        self._building: dict[Any, threading.Lock] = {}
        self._lock = threading.Lock()
        self.builds = 0
        """How many bases this process built (a room of arrivals builds one per starting state)."""

    def get(self, key: Any, build: Callable[[], Snapshot]) -> Snapshot:
        """The base ``key``, built by ``build`` if no one has built it yet (once, however many ask at once)."""
        with self._lock:
            if key in self._bases:
                return self._bases[key]
            building = self._building.setdefault(key, threading.Lock())
        with building:
            with self._lock:
                if key in self._bases:
                    return self._bases[key]
            base = build()
            with self._lock:
                self._bases[key] = base
                self.builds += 1
                self._building.pop(key, None)
            return base

    def built(self, key: Any) -> Snapshot | None:
        """The base ``key`` if it has been built, else None (never builds)."""
        with self._lock:
            return self._bases.get(key)


def build_base(embedder: Embedder, write_path: str, messages: Sequence[Message], *, config: MemoryConfig,
               token_counter: Callable[[str], int] | None = None, progress: Progress | None = None,
               judge: str = DEFAULT_JUDGE) -> Snapshot:
    """A lab's starting state: ``messages`` written through the write path into a throwaway in-memory workspace (as a
    lab would load them), then snapshotted."""
    manager, ingestor = lab_workspace(embedder, write_path, StoreLocation(), f"base-{uuid.uuid4().hex[:12]}",
                                      config=config, token_counter=token_counter, judge=judge)
    try:
        load_messages(manager, ingestor, messages, progress=progress)
        return snapshot(manager)
    finally:
        manager.drop()


STORE_FAULTS = (DiskFullError, BusyError)
"""Store faults a page words itself, as a banner (:func:`store_fault_key`): the library's messages name the server's
folder, which a participant's page never shows."""


def store_fault_key(exc: DiskFullError | BusyError) -> str:
    """The catalogue key of a store fault's banner."""
    return "disk.full" if isinstance(exc, DiskFullError) else "store.busy"


@dataclass(eq=False)
class IngestJob:
    """One background load of messages into one lab workspace."""

    manager: MemoryManager
    """The workspace's manager (what the job writes into)."""
    total: int
    """Messages of the whole load (a resumed load counts the ones written before it too)."""
    done: int = 0
    """Messages written so far, in order (whole batches; a resumed load starts at its ``start``)."""
    state: JobState = "queued"
    """``queued`` until its thread runs, then ``running``, and at the end ``done``, ``cancelled`` or ``failed``."""
    error: str | None = None
    """The failure's message when ``state == "failed"``."""
    error_key: str | None = None
    """A catalogue key the page words the failure with instead (a full disk: the library's message names the
    server's folder, which a participant's page never shows)."""
    plan: int = 0
    """Messages of the batch being embedded and written (0 between batches)."""
    plan_embedded: float = 0.0
    """The share of that batch's texts the model has embedded so far."""
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def finished(self) -> bool:
        return self.state in ("done", "cancelled", "failed")

    @property
    def fraction(self) -> float:
        """The share of the load done, for the progress bar: the messages written, and of the batch in progress the
        share its model has embedded (weighted by :data:`EMBED_SHARE`), so the bar moves within a batch of
        :data:`LOAD_BATCH` messages."""
        if not self.total:
            return 1.0
        return min(1.0, (self.done + EMBED_SHARE * self.plan * self.plan_embedded) / self.total)

    @property
    def cancelling(self) -> bool:
        """Cancel was asked for (the job may still be finishing its batch)."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Ask the job to stop before its next batch (the batch being written completes)."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the job's thread to end."""
        if self._thread is not None:
            self._thread.join(timeout)


def start_job(manager: MemoryManager, ingestor: Ingestor | None, messages: Sequence[Message], *, start: int = 0,
              on_finish: Callable[[IngestJob, JobState], None] | None = None, name: str = "lab-ingest") -> IngestJob:
    """Start loading ``messages[start:]`` in a daemon thread (``start`` > 0 resumes a cancelled load).

    ``on_finish(job, end)`` runs in that thread once the load has ended (``end`` is ``done``,
    ``cancelled`` or ``failed``) and before ``job.state`` says so, so a page that sees a finished
    job also sees what ``on_finish`` recorded.
    """
    if not 0 <= start <= len(messages):
        raise ValueError(f"start must be within 0..{len(messages)}, got {start}")
    job = IngestJob(manager, total=len(messages), done=start)
    rest = list(messages[start:])

    def progress(done: int, _total: int) -> None:
        job.done, job.plan, job.plan_embedded = start + done, 0, 0.0

    def plan(size: int) -> None:
        job.plan, job.plan_embedded = size, 0.0

    def embedded(share: float) -> None:
        job.plan_embedded = share

    def run() -> None:
        _job_thread.on = True  # give-way points wait in this thread only
        _job_thread.embedded = embedded
        job.state = "running"
        end: JobState = "done"
        try:
            load_messages(manager, ingestor, rest, progress=progress, cancelled=job._cancel.is_set, slot=SLOT,
                          plan=plan)
            if job.done < job.total:
                end = "cancelled"
        except Exception as exc:  # shown on the page; the workspace keeps the batches written before it
            log.exception("loading %d messages failed", job.total)
            job.error, end = str(exc) or type(exc).__name__, "failed"
            job.error_key = store_fault_key(exc) if isinstance(exc, STORE_FAULTS) else None
        try:
            if on_finish:
                on_finish(job, end)
        finally:
            job.state = end

    job._thread = threading.Thread(target=run, name=name, daemon=True)
    job._thread.start()
    return job

