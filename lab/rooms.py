"""Labs that outlive a browser session, bounded for a room: a reload (F5) finds the participant's lab again.

A *lab* is what one browser did: its folder under the store location and its workspaces (one per
scenario x write path x model, each a MemoryManager with its injections and erasures). The browser is
recognised by a random id kept in a cookie (:data:`COOKIE`, set by the page itself: lab/state.py), not by
the URL, so a shared link shares settings and never a lab. The labs of the process live in one
:class:`Room`; nothing in it depends on Streamlit, so the bounds are tested directly:

* ``MEMORY_LAB_IDLE_MINUTES`` (default :data:`DEFAULT_IDLE_MINUTES`): a lab nobody opened for that long is
  released when anyone next opens a lab: its workspaces (collections and text files), its Chroma client and
  its folder;
* ``MEMORY_LAB_MAX_LABS`` (default :data:`DEFAULT_MAX_LABS`): past that many labs, the least recently used
  is released first (a lab whose scenario is still loading in the background is never released);
* :data:`WORKSPACES_PER_LAB`: a lab holds one workspace at a time *per group* (``group(key)``; the lab groups its
  workspaces by the scenario's language). Switching scenario, model or write path releases the previous workspace of
  that group (the lab's folder then holds one live workspace per language: two workspaces of a lab never hold the
  same users' texts, so the erasure page's scan of that folder finds nothing of another workspace's users), while
  switching the UI language keeps the other language's workspace: switching back finds its injections.

A browser whose lab was released, or whose switch threw changes away (injections, erasures, added
messages), is told so once (:meth:`Room.take_notice`).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Generic, Hashable, TypeVar

log = logging.getLogger(__name__)

COOKIE = "mgl_lab"
"""The cookie holding a browser's lab id."""
LAB_ID = re.compile(r"[0-9a-f]{32}")
"""A lab id: 128 random bits in hex (uuid4().hex). A cookie of any other shape is ignored."""
IDLE_ENV = "MEMORY_LAB_IDLE_MINUTES"
MAX_LABS_ENV = "MEMORY_LAB_MAX_LABS"
DEFAULT_IDLE_MINUTES = 90.0
"""A workshop session's length: a participant who pauses for a talk finds their lab again."""
DEFAULT_MAX_LABS = 60
"""Two labs per participant of a room of 30 (a second browser, a private window)."""
FDS_PER_LAB = 26
"""Open file descriptors one lab holds (its Chroma client's SQLite and index files, its text store): measured by
``python -m bench.room_load`` (a wave of 60 labs: 1,564 descriptors over 6 at the start). 60 labs do not fit in a
soft limit of 1,024, so :func:`labs_within_descriptors` raises the soft limit to the hard one and caps the room
to what fits."""
FD_RESERVE = 128
"""Descriptors kept for everything else of the server (sockets of 30 browsers, the model's files, logs)."""
WORKSPACES_PER_LAB = 1
HOLD_SECONDS = 600.0
"""A page run's hold on its lab (:meth:`Room.get`) counts for at most this long: a run that never let go (a thread
that died) does not pin its lab for ever."""
MAX_NOTICES = 1_000
"""Released lab ids remembered for their one notice (oldest forgotten first)."""

V = TypeVar("V")
Key = Hashable


@dataclass
class _Lab(Generic[V]):
    used: float
    workspaces: OrderedDict = field(default_factory=OrderedDict)
    """workspace key -> value, least recently used first."""
    creating: threading.Lock = field(default_factory=threading.Lock)
    """Held while a workspace of this lab is created (outside the room's lock: other labs do not wait for it);
    a lab creating one is never released."""
    runs: int = 0
    """Page runs drawing with this lab now (:meth:`Room.get` with ``hold``, until :meth:`Room.let_go`): a lab in
    use is never released under the page that is drawing it."""
    held_at: float = 0.0


@dataclass(frozen=True)
class Released:
    """Why a lab went: ``idle`` (minutes unused), ``full`` (the room's cap, least recently used first), or
    ``replaced`` (a switch released a workspace holding ``changes`` of the participant's own)."""

    reason: str
    minutes: float
    changes: int = 0


class Room(Generic[V]):
    """The process's labs: ``lab id -> {workspace key -> value}``, released by idleness and by count.

    ``release(value)`` frees one workspace (it must not raise); ``release_lab(lab_id)`` frees what a lab holds
    beyond its workspaces (its folder); ``busy(value)`` says a workspace must not be released now (a running
    load); ``changes(value)`` counts what a participant did to a workspace (a switch that drops some says so).
    ``after_release()`` runs once after each group of releases (the lab returns the freed heap to the system).
    Releases run outside the room's lock.
    """

    def __init__(self, *, release: Callable[[V], None], release_lab: Callable[[str], None] = lambda _: None,
                 busy: Callable[[V], bool] = lambda _: False, changes: Callable[[V], int] = lambda _: 0,
                 after_release: Callable[[], None] = lambda: None, max_labs: int = DEFAULT_MAX_LABS,
                 idle_seconds: float = DEFAULT_IDLE_MINUTES * 60, per_lab: int = WORKSPACES_PER_LAB,
                 group: Callable[[Key], Hashable] = lambda _: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if max_labs < 1 or per_lab < 1 or not idle_seconds > 0:
            raise ValueError(f"a room needs max_labs >= 1, per_lab >= 1 and idle_seconds > 0, got {max_labs}, "
                             f"{per_lab}, {idle_seconds}")
        self._release, self._release_lab, self._busy, self._changes = release, release_lab, busy, changes
        self._after_release = after_release
        self.max_labs, self.idle_seconds, self.per_lab = max_labs, idle_seconds, per_lab
        self._group = group
        self._clock = clock
        self._labs: OrderedDict[str, _Lab[V]] = OrderedDict()  # least recently used first
        self._notices: OrderedDict[str, Released] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, environ=os.environ, **kw) -> "Room[V]":
        """A room bounded by MEMORY_LAB_MAX_LABS and MEMORY_LAB_IDLE_MINUTES (ValueError naming a bad one), and by
        the process's descriptor limit (:func:`labs_within_descriptors`)."""
        wanted = _env_number(environ, MAX_LABS_ENV, DEFAULT_MAX_LABS, int)
        return cls(max_labs=labs_within_descriptors(wanted),
                   idle_seconds=60 * _env_number(environ, IDLE_ENV, DEFAULT_IDLE_MINUTES, float), **kw)

    def get(self, lab_id: str, key: Key, create: Callable[[], V], *, hold: bool = False) -> V:
        """The lab's workspace ``key``, created on first use; marks the lab used and releases what the bounds
        say must go (never this lab). With ``hold``, the lab counts as in use until :meth:`let_go`: the room does not
        release it meanwhile, however many newcomers pass the cap (it goes over the cap for that while instead)."""
        lab = self._touch(lab_id, hold=hold)
        with lab.creating:  # two tabs of one browser opening a new workspace at once create it once
            value = lab.workspaces.get(key)
            if value is None:
                value = create()
            with self._lock:
                self._labs.setdefault(lab_id, lab)  # back in, should the room have let it go meanwhile
                lab.workspaces[key] = value
                lab.workspaces.move_to_end(key)
                going = self._over_per_lab(lab_id, lab, self._group(key)) + self._reclaim(self._clock(), keep=lab_id)
        self._run(going)
        return value

    def _touch(self, lab_id: str, *, hold: bool = False) -> _Lab[V]:
        now = self._clock()
        with self._lock:
            lab = self._labs.get(lab_id)
            if lab is None:
                lab = self._labs[lab_id] = _Lab(now)
            lab.used = now
            if hold:
                lab.runs += 1
                lab.held_at = now
            self._labs.move_to_end(lab_id)
            return lab

    def let_go(self, lab_id: str) -> None:
        """One page run that held the lab (:meth:`get` with ``hold``) has ended."""
        with self._lock:
            lab = self._labs.get(lab_id)
            if lab is not None and lab.runs > 0:
                lab.runs -= 1

    def release(self, lab_id: str) -> int:
        """Release one lab now (the sidebar's "reset lab"); returns its workspace count."""
        with self._lock:
            lab = self._labs.pop(lab_id, None)
        if lab is None:
            return 0
        self._run([(lab_id, list(lab.workspaces.values()), True)])
        return len(lab.workspaces)

    def release_all(self) -> None:
        """Release every lab (a process shutting down, a test)."""
        with self._lock:
            labs, self._labs = self._labs, OrderedDict()
        self._run([(lab_id, list(lab.workspaces.values()), True) for lab_id, lab in labs.items()])

    def take_notice(self, lab_id: str) -> Released | None:
        """Why this browser's lab was released, once (None when it was not, or was already told)."""
        with self._lock:
            return self._notices.pop(lab_id, None)

    def labs(self) -> dict[str, int]:
        """lab id -> its workspace count, least recently used first."""
        with self._lock:
            return {lab_id: len(lab.workspaces) for lab_id, lab in self._labs.items()}

    def _over_per_lab(self, lab_id: str, lab: _Lab[V], group: Hashable) -> list[tuple[str, list[V], bool]]:
        """Under the lock: the lab's workspaces of ``group`` past ``per_lab``, least recently used first (a running
        load among them is cancelled by its release)."""
        same = [k for k in lab.workspaces if self._group(k) == group]
        extra = [lab.workspaces.pop(k) for k in same[: -self.per_lab]]
        changes = sum(self._changes(v) for v in extra)
        if changes:
            self._remember(lab_id, Released("replaced", 0.0, changes))
        return [(lab_id, extra, False)] if extra else []

    def _reclaim(self, now: float, *, keep: str) -> list[tuple[str, list[V], bool]]:
        """Under the lock: take idle labs, then the least recently used past the cap, out of the room."""
        going = []
        for lab_id, lab in list(self._labs.items()):
            idle = now - lab.used
            held = lab.runs > 0 and now - lab.held_at < HOLD_SECONDS
            if lab_id == keep or held or lab.creating.locked() or any(self._busy(v) for v in lab.workspaces.values()):
                continue
            if idle >= self.idle_seconds:
                going.append(self._take(lab_id, Released("idle", idle / 60)))
            elif len(self._labs) > self.max_labs:
                going.append(self._take(lab_id, Released("full", idle / 60)))
        return going

    def _take(self, lab_id: str, why: Released) -> tuple[str, list[V], bool]:
        lab = self._labs.pop(lab_id)
        self._remember(lab_id, why)
        return lab_id, list(lab.workspaces.values()), True

    def _remember(self, lab_id: str, why: Released) -> None:
        self._notices[lab_id] = why
        self._notices.move_to_end(lab_id)
        while len(self._notices) > MAX_NOTICES:
            self._notices.popitem(last=False)

    def _run(self, going: list[tuple[str, list[V], bool]]) -> None:
        for lab_id, values, whole in going:
            for value in values:
                self._release(value)
            if whole:
                self._release_lab(lab_id)
        if going:
            self._after_release()


def _env_number(environ, name: str, default, kind):
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be greater than 0, got {raw!r}")
    return value


def labs_within_descriptors(wanted: int, *, limits: Callable[[], tuple[int, int]] | None = None,
                            set_soft: Callable[[int, int], None] | None = None) -> int:
    """``wanted``, or fewer when the process's open-file limit cannot hold that many labs.

    The soft limit is raised to the hard limit first (as servers do; a common soft default, 1,024, holds 34 labs
    at :data:`FDS_PER_LAB`); a limit that still cannot hold ``wanted`` labs caps the room, with a warning in the
    server's log. ``limits`` and ``set_soft`` default to ``resource.getrlimit``/``setrlimit`` of RLIMIT_NOFILE."""
    import resource

    get = limits or (lambda: resource.getrlimit(resource.RLIMIT_NOFILE))
    put = set_soft or (lambda soft, hard: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
    soft, hard = get()
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            put(target, hard)
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    if soft == resource.RLIM_INFINITY:
        return wanted
    fits = max(1, (soft - FD_RESERVE) // FDS_PER_LAB)
    if fits < wanted:
        log.warning("%s=%d labs need about %d open files; the limit is %d: the room holds %d labs",
                    MAX_LABS_ENV, wanted, wanted * FDS_PER_LAB + FD_RESERVE, soft, fits)
        return fits
    return wanted


def valid_lab_id(raw: str | None) -> str | None:
    """``raw`` when it has the shape of a lab id, else None (a cookie is the browser's to send: never trusted)."""
    return raw if isinstance(raw, str) and LAB_ID.fullmatch(raw) else None
