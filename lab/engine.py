"""The lab's link to ``memory/``: cached embedder, one lab per browser, cached candidates.

* The embedder is a process-wide ``st.cache_resource`` (MiniLM loads once per process).
* Each browser's lab (lab/rooms.py; the browser is known by a cookie, so a reload finds its lab) has
  its own folder under the store location (``StoreLocation.from_env()``: ``./.memory-data`` or
  ``MEMORY_DATA_DIR``; a Chroma server when ``MEMORY_CHROMA_HOST`` is set), a new one each time the lab is created
  (``lab/<lab id>-<8 hex digits>``: a lab coming back never builds in the folder of its released self, which another
  participant's run may be closing and deleting at that moment), and one workspace per scenario
  language at a time for the sidebar's scenario, model and write path. Switching any of them within a language
  releases that language's old workspace (collection and text file dropped); switching the language keeps the other
  language's workspace, whose users and texts are another scenario's, so the erasure page's disk scan of the folder
  still finds only what the erased user left. "Reset lab" releases everything. Idle labs, and the least recently
  used past the room's cap, are released with their folder and Chroma client; when every lab is in use, a newcomer
  gets a "the room is full" page (:func:`open_lab`) instead of a lab.
* A lab of a shipped scenario starts from the process's starting state for its scenario, model and write path
  (:func:`bases`, :func:`memory.restore`): the scenario goes through the write path once per process, and every
  lab gets its own copy of the result (its records, windows, summaries and decisions), so a room's arrivals copy
  instead of extracting, judging and embedding again. Uploads load into their own lab only.
* Candidates are fetched once per (workspace, data version, user, query, as_of) with
  ``pool`` = all of the user's memories; a slider change re-runs ``govern`` only. An erasure
  drops this session's cached candidates (:meth:`Lab.forget`), not only their key's version.
* The sidebar's write path decides how messages are written: ``raw`` stores each message as-is
  (``MemoryManager.add_many``); ``facts`` sends them through ``memory.write.ingest.Ingestor`` (atomic
  facts, dedup/update/coexist, version chains); both keep the recent window. Each write path has its
  own workspace.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NoReturn, Sequence

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from memory import (
    Candidates,
    Embedder,
    EraseReport,
    ForgetReport,
    Ingestor,
    LogEntry,
    MemoryConfig,
    MemoryManager,
    MemoryRecord,
    Message,
    RecallResult,
    Scenario,
    ScenarioQuery,
    Snapshot,
    StoreLocation,
    forget,
    govern,
    iso,
    load_scenario,
    parse_time,
    release_client,
    restore,
    return_freed_memory,
    shipped_scenarios,
)
from memory.eval import config_for

from . import CANDIDATE_CACHE_ENTRIES, WINDOW_CAPACITY, models, state
from .i18n import t
from .loading import (
    BACKGROUND_AT,
    Bases,
    IngestJob,
    build_base,
    JobState,
    lab_workspace,
    load_messages,
    start_job,
)
from .pollution import kinds_of
from .rooms import Released, Room, RoomFull
from .state import Settings
from .views import KindsOf, cached_count_tokens

log = logging.getLogger(__name__)

Owner = tuple[str, str]


MODEL_POLL_SECONDS = 1.5
"""How often a page waiting for the model checks on it. Each check is a fragment run of the server, which
competes with the loading thread (for the interpreter lock and the CPU): on a busy 2-core machine, polling
every 0.5 s stretched the load in the server to 117 s, every 2 s to 35 s (about 20 s alone in a process)."""
READY_GRACE_SECONDS = 0.5
"""How long a page waits for a load that is about to finish (the lexical embedder, or a model another part of
the process already holds) before showing the status instead: such a load should not flash a status."""
JOB_POLL_SECONDS = 1.0
"""How often a page waiting for a background load of a scenario redraws its progress."""
WAITING_KEY = "engine-waiting"
"""The key (so the CSS class ``st-key-engine-waiting-*``) of what a page shows while it waits for the model or a
background load to rerun it: a browser test waits for the page to be done, not merely between two polls."""


def get_embedder(name: str) -> Embedder:
    """The embedder, waiting for its background load (lab.models; MiniLM loads once per process)."""
    return models.get(name)


def embedder_for(name: str, *, wait: bool = False) -> Embedder:
    """The embedder for a page. While it is still loading, the page shows a status element and stops
    (the status polls and reruns the page once the model is ready); ``wait=True`` waits under a spinner
    instead (for a button press that must not be lost). A failed load shows its error and stops."""
    future = models.start(name)
    if not future.done():
        futures_wait([future], timeout=READY_GRACE_SECONDS)
    if not future.done():
        if wait:
            with st.spinner(t("engine.loading_model")):
                future.result()
        else:
            _model_status(name)
            st.stop()
    try:
        return future.result()
    except Exception as exc:
        st.error(t("engine.model_failed", error=exc))
        st.stop()
        raise  # unreachable: st.stop raises


@st.fragment(run_every=MODEL_POLL_SECONDS)
def _model_status(name: str) -> None:
    if models.ready(name):
        st.rerun()
    with st.container(key=f"{WAITING_KEY}-model"):
        st.status(t("engine.loading_model"), state="running")


def _release(live: "_Live") -> None:
    if live.job is not None:  # stop writing before the workspace goes
        live.job.cancel()
        live.job.join()
    release_manager(live.manager)


def release_manager(manager: MemoryManager) -> None:
    """Drop a manager's workspace: its Chroma collection and its text file (never raises)."""
    log.info("releasing workspace %s", manager.workspace)
    manager.drop()


def _release_folder(home: str) -> None:
    """After a released lab's workspaces: its Chroma client and its folder go too (never raises). ``home`` names one
    creation of the lab (lab.rooms.Room), so no other creation's folder or client is touched."""
    folder = lab_location(home).data_dir
    if folder is None:
        return
    try:
        release_client(folder)
    except Exception:  # noqa: BLE001 - a client that fails to close still must not keep the folder
        log.exception("closing the Chroma client of %s", folder)
    shutil.rmtree(folder, ignore_errors=True)
    log.info("released lab folder %s", folder)


def _loading(live: "_Live") -> bool:
    return live.job is not None and not live.job.finished


def _changes(live: "_Live") -> int:
    """What a participant did to a workspace: injected or added messages and erasures."""
    return len(live.data.injected) + len(live.data.erased_ids) + len(live.data.added)


_HELD = threading.local()
"""The labs this script thread's page run holds (Streamlit runs each session's script in its own thread)."""


def end_run() -> None:
    """Let go of the labs this page run held (app.py, after the page has drawn or stopped): the room may release
    them again, but never while a page is drawing with one (a newcomer past the cap released a lab under a
    participant's page in ``python -m bench.room_burst --quick``)."""
    for labs, lab in getattr(_HELD, "labs", []):
        labs.let_go(lab)
    _HELD.labs = []


@st.cache_resource(show_spinner=False, on_release=lambda labs: labs.release_all())
def room() -> Room["_Live"]:
    """The process's labs (lab/rooms.py): a reload finds its lab; idle labs and labs past the cap are released."""
    return Room.from_env(release=_release, release_lab=_release_folder, busy=_loading, changes=_changes,
                         after_release=return_freed_memory, group=_language_of)


def _language_of(key: tuple) -> str:
    """A workspace key's group in the room: its scenario's language (the last element of the key open_lab makes)."""
    return key[-1]


def _lab_config(embedder_name: str) -> MemoryConfig:
    """A lab workspace's config: the window the sliders re-slice, the write path's bands on the model's scale."""
    return config_for(embedder_name, MemoryConfig(window_size=WINDOW_CAPACITY))


@st.cache_resource(show_spinner=False)
def bases() -> Bases:
    """The process's lab starting states (lab.loading.Bases): every lab of a shipped scenario starts from one."""
    return Bases()


def _workspace(scenario_key: str, embedder_name: str, write_path: str, location: StoreLocation,
               judge: str = state.DEFAULT_JUDGE) -> "_Live":
    """A fresh workspace for a lab. Its name is new every time (a reset lab never meets its old cached
    candidates under the same name and data version)."""
    workspace = f"{scenario_key}-{uuid.uuid4().hex[:8]}" + ("-facts" if write_path == "facts" else "")
    manager, ingestor = lab_workspace(get_embedder(embedder_name), write_path, location, workspace,
                                      config=_lab_config(embedder_name), token_counter=cached_count_tokens, judge=judge)
    return _Live(manager, LabData(), ingestor)


def _judge_of(current: Settings) -> str:
    """The write path's judge: only the facts write path judges, so a raw lab is one workspace whatever it says."""
    return current.judge if current.write_path == "facts" else state.DEFAULT_JUDGE


def _start_from_base(live: "_Live", current: Settings) -> None:
    """Start a lab of a shipped scenario from the process's starting state for it (:func:`bases`): built once,
    under a progress bar, by the first lab that asks (or by :func:`warm_starting_states` at server start); copied
    into every lab's own workspace after that."""
    scenario = current.scenario
    key = _base_key(current.scenario_key, current.embedder, current.write_path, _judge_of(current))
    base = bases().built(key)
    if base is None:
        bar = st.progress(0.0, text=t("engine.ingesting", name=scenario.name, done=0, total=len(scenario.messages)))

        def progress(done: int, total: int) -> None:
            bar.progress(done / max(total, 1), text=t("engine.ingesting", name=scenario.name, done=done, total=total))

        base = _build_base(key, scenario, progress)
        bar.empty()
    restore(live.manager, base, actor="lab")
    _loaded(live.data, scenario, None)


def _base_key(scenario_key: str, embedder: str, write_path: str, judge: str) -> tuple[str, str, str, str]:
    return (scenario_key, embedder, write_path, judge)


def _build_base(key: tuple[str, str, str, str], scenario: Scenario,
                progress: Callable[[int, int], None] | None = None) -> Snapshot:
    """The starting state ``key`` (see :func:`_base_key`), built once per process however many ask."""
    _, embedder, write_path, judge = key
    return bases().get(key, lambda: build_base(get_embedder(embedder), write_path, scenario.messages,
                                               config=_lab_config(embedder), token_counter=cached_count_tokens,
                                               progress=progress, judge=judge))


def warm_starting_states(langs: Sequence[str], report: Callable[[str], None] = log.info) -> list[tuple[str, ...]]:
    """What a room's first arrival in each UI language would otherwise wait for, done at server start (serve.py):
    that language's default model loaded and its default starting state built (the shipped default scenario, the
    default write path and judge), exactly as the first lab would build it. The keys built, in order."""
    built = []
    for lang in langs:
        scenario_key = state.DEFAULT_SCENARIOS[lang]
        scenario = load_scenario(shipped_scenarios()[scenario_key])
        embedder = state.resolve_embedder(state.AUTO, scenario.language, lang)
        report(f"{lang}: loading the {embedder} model")
        models.get(embedder)
        key = _base_key(scenario_key, embedder, state.DEFAULT_WRITE_PATH, state.DEFAULT_JUDGE)
        report(f"{lang}: building the starting state of {scenario_key} ({len(scenario.messages)} messages)")
        _build_base(key, scenario)
        built.append(key)
    return built


def write(manager: MemoryManager, ingestor: Ingestor | None, messages: list[Message], *,
          progress: Callable[[int, int], None] | None = None) -> list[LogEntry]:
    """Write messages the way the sidebar's write path says: as-is (no ingestor) or through the Ingestor; the write
    path's decisions ([] for as-is).

    Either way every message also enters its user's recent window (and so the summary), in order.
    """
    if ingestor is None:
        manager.add_many(messages, progress=progress)
        return []
    return ingestor.ingest_many(messages, progress=progress)


def lab_location(home: str) -> StoreLocation:
    """A lab's store location: its own folder under StoreLocation.from_env(), ``lab/<home>``, where ``home`` names one
    creation of the lab (lab.rooms.Room.home: the lab id and 8 random hex digits)."""
    base = StoreLocation.from_env()
    folder = base.data_dir / "lab" / home if base.data_dir else None
    return StoreLocation(data_dir=folder, host=base.host, port=base.port)


def lab_folder(lab: str) -> Path | None:
    """The folder the room's lab ``lab`` (a lab id) holds now: None when the room does not hold it, or in server mode."""
    home = room().home(lab)
    return None if home is None else lab_location(home).data_dir


@dataclass
class LabData:
    """What this session did to its workspace; lives and dies with the workspace's manager."""

    version: int = 0
    """Bumped on every write; part of the candidate cache key."""
    loaded: bool = False
    """The scenario was replayed into the workspace."""
    labels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """message id -> labels, for the scenario's messages and every injected one."""
    injected: dict[str, str] = field(default_factory=dict)
    """message id -> injection kind, for messages the lab added."""
    erased_ids: set[str] = field(default_factory=set)
    """message ids of users erased in this lab."""
    erased_owners: set[str] = field(default_factory=set)
    """Users erased in this lab (owner labels, ``tenant/user``): a link naming one gets a note, not a warning."""
    added: set[str] = field(default_factory=set)
    """message ids the participant wrote (recall page, "Add a message")."""
    partial: tuple[int, int] | None = None
    """(written, total) when loading the scenario was cancelled part way; None when it loaded whole."""
    notes: dict[str, object] = field(default_factory=dict)
    """Page results to keep across reruns (last erase report, canaries, last recall)."""


@dataclass
class _Live:
    manager: MemoryManager
    data: LabData
    ingestor: Ingestor | None = None
    job: IngestJob | None = None
    """The background load of the scenario (large scenarios only), while running and after."""


@dataclass
class Lab:
    """One session's lab for the current settings."""

    settings: Settings
    config: MemoryConfig
    workspace: str
    manager: MemoryManager
    data: LabData
    ingestor: Ingestor | None = None
    """The write path when the sidebar says ``facts``; None for ``raw``."""

    @property
    def scenario(self) -> Scenario:
        return self.settings.scenario

    def owners(self) -> list[Owner]:
        """Users in this lab: the scenario's, in file order, then any the lab added (erased ones are gone)."""
        stored = set(self.manager.owners())
        ordered = [o for o in self.scenario.owners() if o in stored]
        return ordered + sorted(stored - set(ordered))

    def queries_of(self, owner: Owner) -> list[ScenarioQuery]:
        """The scenario's labelled queries of one user."""
        return [q for q in self.scenario.queries if (q.tenant_id, q.user_id) == owner]

    def now(self) -> float:
        """The lab's "now": the latest message or labelled-query time of the scenario (deterministic)."""
        times = [self.scenario.last_time] + [parse_time(q.as_of, "as_of") for q in self.scenario.queries if q.as_of]
        return max(times)

    def kinds_for(self, owner: Owner, query: ScenarioQuery | None = None) -> KindsOf:
        """record -> its pollution kinds for a query of ``owner`` (scenario and injection labels)."""
        labels, erased = self.data.labels, self.data.erased_ids
        return lambda record: kinds_of(record, owner=owner, labels=labels, query=query, erased=erased)

    def candidates(self, owner: Owner, query: str, as_of: float) -> Candidates:
        """Every memory of the user as a candidate, fetched once per data version (then from the cache)."""
        return _candidates(self.manager, self.workspace, self.settings.embedder, self.data.version, owner, query, as_of)

    def recall(self, owner: Owner, query: str, as_of: float) -> RecallResult:
        """Blind and governed recall under the sidebar's config (re-ranks cached candidates)."""
        return govern(self.candidates(owner, query, as_of), self.config, token_counter=cached_count_tokens)

    def add(self, messages: list[Message], *, kind: str | None = None, own: bool = False) -> list[LogEntry]:
        """Write messages into the workspace (through the sidebar's write path) and remember their labels
        (and injection kind, or that the participant wrote them); the write path's decisions."""
        entries = write(self.manager, self.ingestor, messages)
        for m in messages:
            self.data.labels[m.id] = tuple(m.labels)
            if kind:
                self.data.injected[m.id] = kind
            if own:
                self.data.added.add(m.id)
        self.data.version += 1
        return entries

    def trace(self, records: list[MemoryRecord]) -> dict:
        """trace.json: what this lab holds and did (records with labels, config, injections, last recall and
        erasure, the audit log), for a notebook or a bug report."""
        return {
            "generated_at": iso(time.time()),
            "workspace": self.workspace,
            "embedder": self.settings.embedder,
            "scenario": {"name": self.scenario.name, "source": self.scenario.source,
                         "language": self.scenario.language},
            "config": self.config.to_dict(),
            "records": [r.to_dict() | {"labels": list(self.data.labels.get(r.message_id, ()))} for r in records],
            "injected": dict(self.data.injected),
            "last_recall": recall.to_dict() if (recall := self.data.notes.get("last_recall")) else None,
            "last_erasure": self.data.notes.get("erasure.last"),
            "audit_log": self.manager.audit_log(),
        }

    def erase(self, owner: Owner, *, actor: str = "lab") -> EraseReport:
        """MemoryManager.erase_user, remembering which messages were erased (for the "erased" pollution kind),
        then :meth:`forget` the user: the store is not the lab's only copy of a user's texts."""
        who = {"tenant_id": owner[0], "user_id": owner[1]}
        records = self.manager.records(**who)
        texts = [r.content for r in records] + [m.content for m in self.manager.recent(**who)] + \
            [self.manager.summary(**who)]
        report = self.manager.erase_user(**who, actor=actor, disk_scan=True)
        self.data.erased_ids |= {r.message_id for r in records}
        self.data.erased_owners.add(state.owner_label(*owner))
        self.data.version += 1
        self.forget(owner, texts)
        return report

    def archive_cold(self, owner: Owner, *, floor: float, days: float) -> ForgetReport:
        """The forgetting pass (memory.forget) for one user at the scenario's now, with the sidebar's decay rate:
        facts whose heat stayed under ``floor`` for ``days`` days go to cold storage (recall no longer reads them)."""
        report = forget(self.manager, tenant_id=owner[0], user_id=owner[1], as_of=self.now(), floor=floor, days=days,
                        decay_rate=self.config.decay_rate)
        self.data.version += 1
        return report

    def forget(self, owner: Owner, texts: list[str]) -> None:
        """Drop what the lab keeps of an erased user outside the store: page notes holding a recall or
        candidates of theirs (the last recall, which trace.json exports), this session's candidate cache
        (older data versions stay there until evicted, texts and all) and, in the token-count memo, every
        text containing one of ``texts`` (their records, window and summary; contexts built from them), and the same in
        the embedders' memo of vectors.

        Only this session's candidates are dropped (``_candidates`` is session-scoped, so its ``clear()`` is
        too); erasure bumps the data version, so every entry was stale anyway."""
        for key, value in list(self.data.notes.items()):
            if isinstance(value, (RecallResult, Candidates)) and (value.tenant_id, value.user_id) == owner:
                del self.data.notes[key]
        if get_script_run_ctx(suppress_warning=True) is not None:  # a session-scoped cache needs a session
            _candidates.clear()
        cached_count_tokens.forget(texts)
        models.forget_texts(texts)


@st.cache_resource(scope="session", max_entries=CANDIDATE_CACHE_ENTRIES, show_spinner=False)
def _candidates(_manager: MemoryManager, workspace: str, embedder: str, version: int, owner: Owner, query: str,
                as_of: float) -> Candidates:
    tenant_id, user_id = owner
    pool = _manager.count(tenant_id=tenant_id, user_id=user_id)
    if pool == 0:
        return Candidates(query=query, tenant_id=tenant_id, user_id=user_id, as_of=as_of, hot=[], active=[])
    return _manager.candidates(query, tenant_id=tenant_id, user_id=user_id, as_of=as_of, pool=pool)


def page_header(page: str) -> tuple[Settings, MemoryConfig]:
    """A page's title and lead (i18n keys ``<page>.title``, ``<page>.lead``), then the sidebar's settings and
    config (a message and a stop when they are invalid)."""
    current = state.settings()
    st.title(t(f"{page}.title"))
    st.caption(t(f"{page}.lead"))
    return current, state.require_config(current)


def start_page(page: str) -> Lab:
    """A page's common start (:func:`page_header`), then this session's lab."""
    return open_lab(*page_header(page))


def workspace_key(scenario_key: str, embedder: str, write_path: str, judge: str, location: StoreLocation,
                  language: str) -> tuple:
    """The room's key for a lab's workspace (:func:`open_lab`): a lab whose settings give another key gets another
    workspace. ``location`` is the store the labs' folders are under (StoreLocation.from_env()). The language stays
    last (a language switch keeps each language's workspace)."""
    return (scenario_key, embedder, write_path, judge, location, language)


def enter(labs: Room["_Live"], lab: str, current: Settings) -> "_Live":
    """The lab's workspace for the current settings, created in the lab's home on first use and held by this page
    run until :func:`end_run`; RoomFull (lab.rooms) when the lab is a newcomer and every lab of the room is in use."""
    judge = _judge_of(current)
    key = workspace_key(current.scenario_key, current.embedder, current.write_path, judge, StoreLocation.from_env(),
                        current.scenario.language)
    live = labs.get(lab, key, lambda home: _workspace(current.scenario_key, current.embedder, current.write_path,
                                                      lab_location(home), judge), hold=True)
    _HELD.labs = [*getattr(_HELD, "labs", []), (labs, lab)]  # let go when this run ends (end_run, app.py)
    return live


def open_lab(current: Settings, config: MemoryConfig) -> Lab:
    """This session's lab for the current settings: wait for the model and load the scenario if needed.

    A scenario of ``BACKGROUND_AT`` messages or more loads in a background job (the page shows its
    progress and a Cancel button, and stops until it ends); a smaller one loads here, under a progress bar.
    """
    lab = state.lab_id()
    embedder_for(current.embedder)
    try:
        labs = room()
    except ValueError as exc:  # an instructor's MEMORY_LAB_* setting
        st.error(str(exc))
        st.stop()
    if st.session_state.pop(state.RESET_KEY, False):
        labs.release(lab)
    try:
        live = enter(labs, lab, current)
    except RoomFull as full:
        _room_full(full)
    _tell(labs.take_notice(lab))
    if not live.data.loaded:
        if not current.scenario_key.startswith(state.UPLOAD_PREFIX):
            _start_from_base(live, current)
        elif len(current.scenario.messages) >= BACKGROUND_AT:
            _load_in_background(live, current)
        else:
            _ingest(live, current)
    if live.data.partial:
        _render_partial(live, current)
    return Lab(current, config, live.manager.workspace, live.manager, live.data, live.ingestor)


def _room_full(full: RoomFull) -> NoReturn:
    """What a newcomer sees while every lab of the room is in use: the room is full, try again in a minute (a lab let
    go by a finished page run, or gone idle, makes room); a button tries again. The page stops here."""
    log.warning("the room is full (%d labs, all in use): a newcomer was asked to try again", full.max_labs)
    st.warning(t("engine.room_full", labs=full.max_labs), icon=":material/groups:")
    st.button(t("engine.retry"), key="engine.room_full_retry", icon=":material/refresh:")
    st.stop()


def _tell(notice: Released | None) -> None:
    """Say once why this browser's earlier lab, or the workspace a switch replaced, is gone."""
    if notice is None:
        return
    if notice.reason == "replaced":
        st.info(t("engine.lab_replaced", changes=notice.changes), icon=":material/swap_horiz:")
    else:
        st.info(t(f"engine.lab_released_{notice.reason}", minutes=round(notice.minutes)), icon=":material/history:")


def _ingest(live: _Live, current: Settings) -> None:
    scenario = current.scenario
    bar = st.progress(0.0, text=t("engine.ingesting", name=scenario.name, done=0, total=len(scenario.messages)))

    def progress(done: int, total: int) -> None:
        bar.progress(done / max(total, 1), text=t("engine.ingesting", name=scenario.name, done=done, total=total))

    load_messages(live.manager, live.ingestor, scenario.messages, progress=progress)
    bar.empty()
    _loaded(live.data, scenario, None)


def _loaded(data: LabData, scenario: Scenario, partial: tuple[int, int] | None) -> None:
    """Record that the scenario is in the workspace (whole, or ``partial`` = (written, total))."""
    data.labels.update({m.id: tuple(m.labels) for m in scenario.messages})
    data.partial = partial
    data.version += 1
    data.loaded = True


def _load_in_background(live: _Live, current: Settings, *, start: int = 0) -> None:
    """Start (or keep polling) the workspace's background load; stop the page until it has ended."""
    scenario = current.scenario
    if live.job is None:
        def finish(job: IngestJob, end: JobState) -> None:
            if end != "failed":
                _loaded(live.data, scenario, None if job.done >= job.total else (job.done, job.total))

        live.job = start_job(live.manager, live.ingestor, scenario.messages, start=start, on_finish=finish,
                             name=f"lab-ingest-{state.lab_id()}")
        st.session_state[state.JOB_KEY] = live.job
    job = live.job
    if job.state == "failed":
        st.error(t("engine.ingest_failed", name=scenario.name,
                   error=t(job.error_key) if job.error_key else job.error))
        if st.button(t("engine.retry"), key="engine.retry", icon=":material/refresh:"):
            live.job = None
            st.rerun()
        st.stop()
    if not job.finished:
        _job_status(job, scenario.name)
        st.stop()


@st.fragment(run_every=JOB_POLL_SECONDS)
def _job_status(job: IngestJob, name: str) -> None:
    if job.finished:
        st.rerun()
    with st.container(key=f"{WAITING_KEY}-job"):
        st.progress(job.fraction, text=t("engine.ingesting_background", name=name, done=job.done, total=job.total))
        st.button(t("engine.cancel"), key="engine.cancel", on_click=job.cancel, icon=":material/cancel:",
                  disabled=job.cancelling)


def _render_partial(live: _Live, current: Settings) -> None:
    """A warning on every page while the lab holds part of its scenario, with a button to load the rest."""
    written, total = live.data.partial or (0, 0)
    st.warning(t("engine.partial", name=current.scenario.name, done=written, total=total))
    if st.button(t("engine.resume"), key="engine.resume", icon=":material/play_arrow:"):
        live.data.loaded, live.data.partial = False, None
        live.job = None
        _load_in_background(live, current, start=written)
