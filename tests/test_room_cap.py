"""AppTest: past the room's cap, no exception (issue 51, "Past the cap").

At 100 participants (and with ``MEMORY_LAB_MAX_LABS=4`` at 12) some pages got an exception element when they moved
the slider ("RustBindingsAPI has no attribute bindings", "attempt to write a readonly database"): a released lab's
folder was closed and deleted from another participant's thread while the same lab id, coming back, built its new lab
in that folder. Now each creation of a lab has a folder of its own (lab.rooms: the lab's home), and a newcomer who
finds every lab of the room in use gets a "the room is full" page instead of a lab past the cap.

Sessions are AppTest sessions, several at once in threads where the test is about a race (each AppTest runs its
script in a thread of its own, as a server runs each browser's). Real Chroma in a temporary data folder; the lexical
embedder, since these tests are about folders and the room, not about ranking.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter

import pytest
import streamlit as st
from streamlit.runtime import Runtime
from streamlit.testing.v1 import AppTest

from lab import engine, i18n, rooms
from lab.state import Settings
from memory import DEFAULT_JUDGE, MemoryConfig, Message, StoreLocation, govern, load_scenario, shipped_scenarios
from memory.store.chroma import _CLIENTS
from test_app import TIMEOUT, lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse

pytestmark = pytest.mark.app


def room_full_text(lang: str, labs: int) -> str:
    return i18n.TEXT["engine.room_full"][lang].format(labs=labs)


def outcome(at: AppTest, labs: int) -> str:
    """What a session's page showed: ``exception`` (any exception element), ``lab`` (the recall page drew its lists),
    ``full`` (the room-full page), or ``other``."""
    if at.exception:
        return "exception"
    if room_full_text("en", labs) in texts(at.warning):
        return "full"
    if [m for m in at.metric if m.label == "Governed"]:
        return "lab"
    return "other"


class Gate:
    """lab.engine._release_folder whose first call once armed is held at its start until :meth:`open`: a release
    caught midway (the releases after it pass)."""

    def __init__(self, release) -> None:
        self.release, self.armed = release, False
        self.entered, self.opened = threading.Event(), threading.Event()
        self.homes: list[str] = []

    def __call__(self, home: str) -> None:
        self.homes.append(home)
        if self.armed:
            self.armed = False
            self.entered.set()
            assert self.opened.wait(TIMEOUT)
        self.release(home)

    def open(self) -> None:
        self.armed = False
        self.opened.set()


def _folder_of(at: AppTest):
    """The folder the session's lab lives in now: its workspace's data folder, as the erasure page scans it."""
    (live,) = engine.room()._labs[at.session_state["lab.id"]].workspaces.values()
    return live.manager.data_dir


def test_a_lab_coming_back_while_its_old_folder_is_released_keeps_its_new_folder(lab_env, monkeypatch):  # noqa: F811
    """The race of issue 51, step by step, in a room of 2: participants A and C have labs; B's arrival releases A's
    (the least recently used), and the release is caught just before it closes A's Chroma client and deletes A's
    folder; A comes back meanwhile (a fresh lab, in place of C's), then the release finishes. Before each creation had a folder of its own, A's fresh lab was built in the
    folder being released, with the Chroma client being closed: the release then deleted the fresh lab's files under
    it (on a busy server, an exception element on A's next page). Now A's fresh lab keeps its folder and its records,
    and A's next pages (an injection, the inspector) work."""
    monkeypatch.setenv(rooms.MAX_LABS_ENV, "2")
    gate = Gate(engine._release_folder)
    monkeypatch.setattr(engine, "_release_folder", gate)  # the room (made by the first page) releases through it
    a = open_app("lab/pages/inspector.py", embedder="lexical")
    records = int(metric(a, "Records shown"))
    old = _folder_of(a)
    open_app("lab/pages/inspector.py", embedder="lexical")  # C
    gate.armed = True
    arrived: list[AppTest] = []
    b = threading.Thread(target=lambda: arrived.append(open_app("lab/pages/pollution.py", embedder="lexical")))
    b.start()
    try:
        assert gate.entered.wait(TIMEOUT), "B's arrival did not release A's lab"
        runtime = Runtime._instance  # B's run is not over: AppTest clears its mock Runtime at the end of A's
        a.run()  # A comes back while its old folder is being released
        Runtime._instance = runtime
        assert not a.exception, [e.value for e in a.exception]
        assert "least recently used" in texts(a.info), "A is told its earlier lab was cleared"
        assert int(metric(a, "Records shown")) == records
    finally:
        gate.open()
        b.join(TIMEOUT)
    assert arrived and not arrived[0].exception, [e.value for e in arrived[0].exception]
    assert gate.homes[0] == old.name and not old.exists(), "the release deleted the old lab's folder"
    fresh = _folder_of(a)
    assert (fresh / "chroma" / "chroma.sqlite3").exists(), "the release deleted the fresh lab's files"
    assert str(fresh.resolve()) in {key[0] for key in _CLIENTS}
    a.switch_page("lab/pages/pollution.py").run()
    a.button(key="pollution.inject.noise").click().run()  # A's fresh lab, used after the old folder went
    assert not a.exception, [e.value for e in a.exception]
    a.switch_page("lab/pages/inspector.py").run()
    assert not a.exception and int(metric(a, "Records shown")) > records


def _page_run(labs, lab_id: str, current: Settings, *, threshold: float, write: bool = False) -> str:
    """What one page run of a session does with the room, as app.py and the recall page do it: enter the lab (held
    until the run ends: lab.engine.end_run), start it from the shared starting state when new, recall the first user's
    first labelled query at the slider's ``threshold`` and, with ``write``, add a message of the participant's own.
    ``lab``, ``full`` (the room-full page) or ``exception: ...``."""
    try:
        live = engine.enter(labs, lab_id, current)
    except rooms.RoomFull:
        return "full"
    except Exception as exc:  # noqa: BLE001 - what a page would show as an exception element
        return f"exception: {exc!r}"
    try:
        if not live.data.loaded:
            engine._start_from_base(live, current)  # the starting state is built: no progress bar, no Streamlit
        lab = engine.Lab(current, current.config, live.manager.workspace, live.manager, live.data, live.ingestor)
        owner = lab.owners()[0]
        query = lab.queries_of(owner)[0]
        pool = live.manager.count(tenant_id=owner[0], user_id=owner[1])
        candidates = live.manager.candidates(query.query, tenant_id=owner[0], user_id=owner[1], as_of=lab.now(),
                                             pool=pool)
        govern(candidates, current.config.replace(threshold=threshold))
        if write:
            lab.add([Message(tenant_id=owner[0], user_id=owner[1], content=f"My locker code is {threshold}.",
                             id=f"own-{uuid.uuid4().hex[:10]}", timestamp=lab.now() + 1)], own=True)
        return "lab"
    except Exception as exc:  # noqa: BLE001
        return f"exception: {exc!r}"
    finally:
        engine.end_run()


def test_twelve_sessions_against_a_cap_of_four_get_their_lab_or_the_room_full_page(lab_env, monkeypatch):  # noqa: F811
    """12 participants open the recall page at the same moment, then each moves the threshold slider and adds a
    message, three times over, against MEMORY_LAB_MAX_LABS=4 (each session a thread, as the server runs each
    browser's script in a thread of its own; labs released past the cap are closed and deleted from other sessions'
    threads while their participants come back): no run raises; every run gets the participant's lab or the room-full
    page; the room never holds more than 4 labs, and at the end the data folder holds the folders of those labs only.

    (AppTest sessions cannot run at once: each AppTest run sets and clears one process-wide mock Runtime.)"""
    cap, sessions, rounds = 4, 12, 3
    monkeypatch.setenv(rooms.MAX_LABS_ENV, str(cap))
    st.cache_resource.clear()  # the room reads its bounds when it is created
    scenario = load_scenario(shipped_scenarios()["workshop_en"])
    config = MemoryConfig()
    current = Settings(config, None, "lexical", scenario, "workshop_en", None, "en")
    engine._build_base(engine._base_key("workshop_en", "lexical", "facts", DEFAULT_JUDGE), scenario)  # serve.py's warm-up
    labs = engine.room()
    start = threading.Barrier(sessions)
    seen: list[tuple[int, int, str]] = []  # (session, run, outcome)
    most: list[int] = []

    def participant(i: int) -> None:
        lab_id = uuid.uuid4().hex
        start.wait(TIMEOUT)
        for run in range(2 * rounds):  # the first page, then a slider move with a message; and again
            seen.append((i, run, _page_run(labs, lab_id, current, threshold=0.3 + 0.01 * run, write=run % 2 == 1)))
            most.append(len(labs.labs()))

    threads = [threading.Thread(target=participant, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    assert len(seen) == 2 * rounds * sessions, "a session did not finish"
    counts = Counter(result for _, _, result in seen)
    assert set(counts) <= {"lab", "full"}, sorted({result for _, _, result in seen} - {"lab", "full"})
    assert counts["lab"] >= cap and max(most) <= cap, (counts, max(most))
    held = labs.labs()
    on_disk = {p.name for p in (lab_env / "lab").iterdir()}
    assert {name.rsplit("-", 1)[0] for name in on_disk} == set(held) and len(on_disk) == len(held) <= cap
    print(f"12 sessions x {2 * rounds} runs against a cap of {cap}: {dict(counts)}")


def test_the_room_full_page_says_so_in_either_language_and_lets_the_participant_in_once_there_is_room(monkeypatch):
    """A newcomer while every lab is in use (a cap of 1, its lab held as a drawing page holds it) gets the room-full
    page, in English or Chinese, and no lab; once the page lets go, "Try again" gives the newcomer a lab."""
    monkeypatch.setenv(rooms.MAX_LABS_ENV, "1")
    st.cache_resource.clear()
    first = open_app("lab/pages/recall.py", embedder="lexical")
    labs, drawing = engine.room(), first.session_state["lab.id"]
    key = engine.workspace_key("workshop_en", "lexical", "facts", DEFAULT_JUDGE, StoreLocation.from_env(), "en")
    live = labs.get(drawing, key, lambda home: pytest.fail("the first lab's workspace exists"), hold=True)
    assert live.data.loaded  # first's page is drawing with its lab now
    try:
        english = open_app(embedder="lexical")
        assert room_full_text("en", 1) in texts(english.warning)
        assert english.button(key="engine.room_full_retry").label == "Try again"
        chinese = open_app(embedder="lexical", lang="zh")
        assert room_full_text("zh", 1) in texts(chinese.warning)
        assert len(english.metric) == len(chinese.metric) == 0, "a room-full page shows no lab"
        assert set(labs.labs()) == {drawing}
    finally:
        labs.let_go(drawing)
    english.button(key="engine.room_full_retry").click().run()
    assert not english.exception and outcome(english, 1) == "lab"
    assert set(labs.labs()) == {english.session_state["lab.id"]}
