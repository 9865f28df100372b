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
  is released first (a lab whose scenario is still loading in the background, or that a page is drawing with, is
  never released); when every lab is in use, a newcomer is told the room is full (:class:`RoomFull`) rather than
  take the server past its cap;
* :data:`WORKSPACES_PER_LAB`: a lab holds one workspace at a time *per group* (``group(key)``; the lab groups its
  workspaces by the scenario's language). Switching scenario, model or write path releases the previous workspace of
  that group (the lab's folder then holds one live workspace per language: two workspaces of a lab never hold the
  same users' texts, so the erasure page's scan of that folder finds nothing of another workspace's users), while
  switching the UI language keeps the other language's workspace: switching back finds its injections.

A browser whose lab was released, or whose switch threw changes away (injections, erasures, added
messages), is told so once (:meth:`Room.take_notice`).

Each time a lab is created (a newcomer, or a lab id coming back after its lab was released) it gets a *home* of its
own, ``<lab id>-<8 random hex digits>``, the name of its folder (lab/engine.py): a released lab's folder is closed and
deleted outside the room's lock, possibly while the same browser is already back, and its new lab never meets that
folder, nor the Chroma client being closed in it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
import uuid
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


class RoomFull(RuntimeError):
    """A newcomer past the room's cap while every lab is in use (held by a page run, creating or loading)."""

    def __init__(self, max_labs: int) -> None:
        super().__init__(f"the room holds {max_labs} labs and every one is in use; try again in a minute")
        self.max_labs = max_labs


def new_home(lab_id: str) -> str:
    """A home for one creation of a lab: the lab id and 8 random hex digits (a folder name no other creation has)."""
    return f"{lab_id}-{uuid.uuid4().hex[:8]}"


@dataclass
class _Lab(Generic[V]):
    used: float
    home: str
    """This creation's own name (:func:`new_home`): what ``release_lab`` gets, never shared with an earlier creation."""
    workspaces: OrderedDict = field(default_factory=OrderedDict)
    """workspace key -> value, least recently used first."""
    creating: threading.Lock = field(default_factory=threading.Lock)
    """Held while a workspace of this lab is created (outside the room's lock: other labs do not wait for it);
    a lab creating one is never released."""
    runs: int = 0
    """Page runs drawing with this lab now (:meth:`Room.get` with ``hold``, until :meth:`Room.let_go`): a lab in
    use is never released under the page that is drawing it."""
    held_at: float = 0.0


@dataclass
class _Going(Generic[V]):
    """What left the room, to release outside its lock: workspaces, and with a whole ``lab`` its home."""

    values: list[V]
    lab: _Lab[V] | None = None
    """The lab taken out of the room whole (its home goes too), or None for workspaces a switch replaced."""


@dataclass(frozen=True)
class Released:
    """Why a lab went: ``idle`` (minutes unused), ``full`` (the room's cap, least recently used first), or
    ``replaced`` (a switch released a workspace holding ``changes`` of the participant's own)."""

    reason: str
    minutes: float
    changes: int = 0


class Room(Generic[V]):
    """The process's labs: ``lab id -> {workspace key -> value}``, released by idleness and by count.

    ``create(home)`` makes a workspace in the lab's home (its folder); ``release(value)`` frees one workspace (it must
    not raise); ``release_lab(home)`` frees what one creation of a lab holds beyond its workspaces (its folder);
    ``busy(value)`` says a workspace must not be released now (a running load); ``changes(value)`` counts what a
    participant did to a workspace (a switch that drops some says so). ``after_release()`` runs once after each group
    of releases (the lab returns the freed heap to the system). Releases run outside the room's lock; a lab's release
    waits for a workspace being created in its home, and a creation never starts in a home being released.
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

    def get(self, lab_id: str, key: Key, create: Callable[[str], V], *, hold: bool = False) -> V:
        """The lab's workspace ``key``, created on first use by ``create(home)``; marks the lab used and releases
        what the bounds say must go (never this lab). With ``hold``, the lab counts as in use until :meth:`let_go`:
        the room does not release it meanwhile. A lab id the room does not hold while it holds ``max_labs`` labs,
        none of which may go, raises :class:`RoomFull` (nothing is created)."""
        while True:
            lab = self._enter(lab_id, hold=hold)
            with lab.creating:  # two tabs of one browser opening a new workspace at once create it once
                if not self._holds(lab_id, lab):
                    continue  # released since it was entered (a reset in another tab): a new creation, a new home
                value = lab.workspaces.get(key)
                made = value is None
                if made:
                    value = create(lab.home)
                with self._lock:
                    kept = self._labs.get(lab_id) is lab
                    if kept:
                        lab.workspaces[key] = value
                        lab.workspaces.move_to_end(key)
                        going = self._over_per_lab(lab_id, lab, self._group(key))
                        going += self._reclaim(self._clock(), keep=lab_id)
                if not kept:  # released while the workspace was made: its home goes once we let go, and it too
                    if made:
                        self._release(value)
                    continue
            self._run(going)
            return value

    def _holds(self, lab_id: str, lab: _Lab[V]) -> bool:
        with self._lock:
            return self._labs.get(lab_id) is lab

    def _enter(self, lab_id: str, *, hold: bool = False) -> _Lab[V]:
        """The lab of ``lab_id``, marked used (and held); a newcomer gets a new home once the room has made room
        for it (idle labs, then the least recently used past the cap, go first), or :class:`RoomFull`."""
        now = self._clock()
        going: list[_Going[V]] = []
        with self._lock:
            lab = self._labs.get(lab_id)
            if lab is None:
                going = self._reclaim(now, keep=lab_id, arriving=1)
                if len(self._labs) < self.max_labs:
                    lab = self._labs[lab_id] = _Lab(now, new_home(lab_id))
            if lab is not None:
                lab.used = now
                if hold:
                    lab.runs += 1
                    lab.held_at = now
                self._labs.move_to_end(lab_id)
        self._run(going)
        if lab is None:
            raise RoomFull(self.max_labs)
        return lab

    def let_go(self, lab_id: str) -> None:
        """One page run that held the lab (:meth:`get` with ``hold``) has ended."""
        with self._lock:
            lab = self._labs.get(lab_id)
            if lab is not None and lab.runs > 0:
                lab.runs -= 1

    def home(self, lab_id: str) -> str | None:
        """The home (folder name) of the lab's current creation, or None when the room does not hold the lab."""
        with self._lock:
            lab = self._labs.get(lab_id)
            return None if lab is None else lab.home

    def release(self, lab_id: str) -> int:
        """Release one lab now (the sidebar's "reset lab"); returns its workspace count."""
        with self._lock:
            lab = self._labs.pop(lab_id, None)
        if lab is None:
            return 0
        self._run([_Going(list(lab.workspaces.values()), lab)])
        return len(lab.workspaces)

    def release_all(self) -> None:
        """Release every lab (a process shutting down, a test)."""
        with self._lock:
            labs, self._labs = self._labs, OrderedDict()
        self._run([_Going(list(lab.workspaces.values()), lab) for lab in labs.values()])

    def take_notice(self, lab_id: str) -> Released | None:
        """Why this browser's lab was released, once (None when it was not, or was already told)."""
        with self._lock:
            return self._notices.pop(lab_id, None)

    def labs(self) -> dict[str, int]:
        """lab id -> its workspace count, least recently used first."""
        with self._lock:
            return {lab_id: len(lab.workspaces) for lab_id, lab in self._labs.items()}

    def _over_per_lab(self, lab_id: str, lab: _Lab[V], group: Hashable) -> list[_Going[V]]:
        """Under the lock: the lab's workspaces of ``group`` past ``per_lab``, least recently used first (a running
        load among them is cancelled by its release)."""
        same = [k for k in lab.workspaces if self._group(k) == group]
        extra = [lab.workspaces.pop(k) for k in same[: -self.per_lab]]
        changes = sum(self._changes(v) for v in extra)
        if changes:
            self._remember(lab_id, Released("replaced", 0.0, changes))
        return [_Going(extra)] if extra else []

    def _reclaim(self, now: float, *, keep: str, arriving: int = 0) -> list[_Going[V]]:
        """Under the lock: take idle labs, then the least recently used past the cap (with room for ``arriving``
        newcomers), out of the room. A lab in use (held by a page run, creating a workspace, loading) stays."""
        going = []
        for lab_id, lab in list(self._labs.items()):
            idle = now - lab.used
            held = lab.runs > 0 and now - lab.held_at < HOLD_SECONDS
            if lab_id == keep or held or lab.creating.locked() or any(self._busy(v) for v in lab.workspaces.values()):
                continue
            if idle >= self.idle_seconds:
                going.append(self._take(lab_id, Released("idle", idle / 60)))
            elif len(self._labs) + arriving > self.max_labs:
                going.append(self._take(lab_id, Released("full", idle / 60)))
        return going

    def _take(self, lab_id: str, why: Released) -> _Going[V]:
        lab = self._labs.pop(lab_id)
        self._remember(lab_id, why)
        return _Going(list(lab.workspaces.values()), lab)

    def _remember(self, lab_id: str, why: Released) -> None:
        self._notices[lab_id] = why
        self._notices.move_to_end(lab_id)
        while len(self._notices) > MAX_NOTICES:
            self._notices.popitem(last=False)

    def _run(self, going: list[_Going[V]]) -> None:
        """Release what left the room. A whole lab waits for a workspace being created in its home (a creation that
        began before the lab left finds it gone and releases what it made); then its workspaces and its home go."""
        for gone in going:
            if gone.lab is not None:
                with gone.lab.creating:
                    pass
            for value in gone.values:
                self._release(value)
            if gone.lab is not None:
                self._release_lab(gone.lab.home)
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
