"""The room of labs (lab/rooms.py): a reload finds its lab; idle labs and labs past the cap are released with
their folder and Chroma client; a switch that throws a participant's changes away says so.

The Room tests use plain values and a fake clock (they are about the bounds, not about a store); the AppTests
at the end use the real lab (real Chroma in a temp folder, the lexical embedder: they are about folders)."""

from __future__ import annotations

import os
import re

import pytest
import streamlit as st

from lab import engine, rooms
from lab.rooms import Released, Room, RoomFull, valid_lab_id
from memory.store.chroma import _CLIENTS
from tests.test_app import lab_env, metric, open_app  # noqa: F401 - lab_env is a fixture used below


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def lab_of(home: str) -> str:
    """The lab id a home names (lab.rooms.new_home: the id, "-", 8 random hex digits)."""
    lab, _, suffix = home.rpartition("-")
    assert re.fullmatch(r"[0-9a-f]{8}", suffix), home
    return lab


def make_room(**kw):
    """A room of plain values on a fake clock: (room, released workspaces, lab ids whose home was released, clock)."""
    released, folders, clock = [], [], Clock()
    room = Room(release=released.append, release_lab=lambda home: folders.append(lab_of(home)), clock=clock, **kw)
    return room, released, folders, clock


def test_the_same_lab_id_finds_the_same_workspace_and_another_id_its_own():
    room, released, _, _ = make_room()
    first = room.get("a" * 32, "workshop", lambda _: object())
    assert room.get("a" * 32, "workshop", lambda _: object()) is first  # a reload
    assert room.get("b" * 32, "workshop", lambda _: object()) is not first  # another browser
    assert released == []


def test_an_idle_lab_is_released_with_its_folder_and_told_once():
    room, released, folders, clock = make_room(idle_seconds=600)
    room.get("idle", "w", lambda _: "idle-w")
    clock.now = 300
    room.get("active", "w", lambda _: "active-w")
    assert released == []  # 5 minutes idle: kept
    clock.now = 601
    room.get("active", "w", lambda _: "unused")
    assert released == ["idle-w"] and folders == ["idle"]
    assert room.labs() == {"active": 1}
    notice = room.take_notice("idle")
    assert notice.reason == "idle" and notice.minutes == pytest.approx(601 / 60)
    assert room.take_notice("idle") is None


def test_past_the_cap_the_least_recently_used_lab_goes_first():
    room, released, folders, clock = make_room(max_labs=2)
    for i, lab in enumerate(["a", "b", "c"]):
        clock.now = i
        room.get(lab, "w", lambda _, lab=lab: f"{lab}-w")
        if lab == "b":
            room.get("a", "w", lambda _: "never")  # a is used again: b is now the least recent
    assert released == ["b-w"] and folders == ["b"]
    assert list(room.labs()) == ["a", "c"]
    assert room.take_notice("b").reason == "full"


def test_a_lab_still_loading_is_never_reclaimed():
    """Past the cap with the only lab still loading, a newcomer is told the room is full; once the load has ended, the
    loaded lab (idle) makes room."""
    loading = {"big-w"}
    room, released, _, clock = make_room(max_labs=1, idle_seconds=10, busy=lambda v: v in loading)
    room.get("big", "w", lambda _: "big-w")
    clock.now = 100
    with pytest.raises(RoomFull):
        room.get("other", "w", lambda _: "other-w")
    assert released == [] and set(room.labs()) == {"big"}
    loading.clear()
    assert room.get("other", "w", lambda _: "other-w") == "other-w"
    assert released == ["big-w"] and set(room.labs()) == {"other"}



def test_a_lab_a_page_is_drawing_with_is_not_released_until_the_run_lets_go():
    """A newcomer past the cap while a participant's page draws with its lab is told the room is full: that lab is not
    released under the page (python -m bench.room_burst --quick once lost a session this way), nor does the room go
    past its cap; the lab in use is never refused. Once the run lets go, the next newcomer releases it, and a hold
    that never let go counts for HOLD_SECONDS only."""
    from lab.rooms import HOLD_SECONDS

    room, released, _, clock = make_room(max_labs=1)
    room.get("drawing", "w", lambda _: "drawing-w", hold=True)
    clock.now = 1
    with pytest.raises(RoomFull, match="1 labs and every one is in use"):
        room.get("newcomer", "w", lambda _: "newcomer-w", hold=True)
    assert released == [] and set(room.labs()) == {"drawing"} and room.take_notice("newcomer") is None
    assert room.get("drawing", "w", lambda _: "never", hold=True) == "drawing-w"  # a second tab: never refused
    room.let_go("drawing")
    room.let_go("drawing")
    clock.now = 2
    room.get("newcomer", "w", lambda _: "newcomer-w", hold=True)
    assert released == ["drawing-w"] and room.take_notice("drawing").reason == "full"
    clock.now = 2 + HOLD_SECONDS  # "newcomer" never let go: its hold has run out
    room.get("fourth", "w", lambda _: "fourth-w")
    assert "newcomer-w" in released

def test_a_switch_releases_the_previous_workspace_and_counts_the_changes_it_held():
    changes = {"raw": 3, "facts": 0}
    room, released, folders, _ = make_room(changes=lambda v: changes[v])
    room.get("lab", ("workshop", "raw"), lambda _: "raw")
    room.get("lab", ("workshop", "facts"), lambda _: "facts")
    assert released == ["raw"] and folders == []  # the lab and its folder stay
    assert room.take_notice("lab") == Released("replaced", 0.0, 3)
    room.get("lab", ("workshop", "raw"), lambda _: "raw")
    assert room.take_notice("lab") is None  # nothing of the participant's was in "facts"


def test_a_switch_replaces_a_workspace_of_its_own_group_only():
    """Workspaces are grouped (the lab groups them by the scenario's language): a switch within a group replaces that
    group's workspace; a switch to another group keeps it, so switching back finds it with its changes."""
    room, released, _, _ = make_room(group=lambda key: key[-1])
    en = room.get("lab", ("workshop_en", "raw", "en"), lambda _: "en-raw")
    room.get("lab", ("workshop_zh", "raw", "zh"), lambda _: "zh-raw")
    assert released == [] and room.labs() == {"lab": 2}
    assert room.get("lab", ("workshop_en", "raw", "en"), lambda _: "new") is en  # back: the same workspace
    room.get("lab", ("workshop_en", "facts", "en"), lambda _: "en-facts")
    assert released == ["en-raw"] and room.labs() == {"lab": 2}


def test_each_creation_of_a_lab_has_a_home_of_its_own_and_its_release_names_that_home():
    """Issue 51: a lab released and coming back is a new creation in a new home (its folder); the release of the old
    one names the old home only."""
    homes, made = [], []
    room = Room(release=lambda _: None, release_lab=homes.append, max_labs=1)
    room.get("a" * 32, "w", made.append)
    first = room.home("a" * 32)
    assert made == [first] and lab_of(first) == "a" * 32
    room.get("b" * 32, "w", made.append)  # past the cap: a goes, with its home
    assert homes == [first] and room.home("a" * 32) is None
    room.get("a" * 32, "w", made.append)  # a comes back: b goes, a is created again elsewhere
    second = room.home("a" * 32)
    assert second != first and made[-1] == second and homes == [first, made[1]]


def test_a_lab_coming_back_while_its_old_home_is_being_released_is_created_in_a_new_one():
    """The race of issue 51 with plain values: another participant's run is still releasing the lab's old home when
    the lab comes back; its new workspace is made (and used) in a home nobody releases."""
    import threading

    releasing, finish, deleted = threading.Event(), threading.Event(), []

    def release_lab(home: str) -> None:
        releasing.set()
        finish.wait(10)
        deleted.append(home)

    clock = Clock()
    room = Room(release=lambda _: None, release_lab=release_lab, idle_seconds=60, clock=clock)
    room.get("a", "w", lambda home: home)
    old = room.home("a")
    clock.now = 61
    newcomer = threading.Thread(target=room.get, args=("b", "w", lambda home: home), kwargs={"hold": True})
    newcomer.start()  # "a" is idle: it goes, and its release blocks in release_lab
    assert releasing.wait(10)
    back = room.get("a", "w", lambda home: home, hold=True)  # the participant of "a" comes back meanwhile
    assert back != old and back == room.home("a") and lab_of(back) == "a"
    finish.set()
    newcomer.join(10)
    assert deleted == [old], "the release of the old lab named its own home only"


def test_a_release_waits_for_a_workspace_being_made_in_its_home_and_the_maker_starts_again_elsewhere():
    """A reset in one tab while another tab of the same browser is making a workspace: the home is released only once
    the workspace is made, the maker releases what it made there, and makes it again in a new home."""
    import threading

    made, released, homes = [], [], []
    making, finish = threading.Event(), threading.Event()

    def make(home: str) -> str:
        made.append(home)
        if len(made) == 1:
            making.set()
            finish.wait(10)
        return f"w@{home}"

    room = Room(release=released.append, release_lab=homes.append)
    tab = threading.Thread(target=lambda: made.append(room.get("a", "w", make)))
    tab.start()
    assert making.wait(10)
    first = made[0]
    reset = threading.Thread(target=room.release, args=("a",))
    reset.start()
    reset.join(0.3)
    assert reset.is_alive() and homes == [], "the home went while a workspace was being made in it"
    finish.set()
    tab.join(10)
    reset.join(10)
    assert homes == [first] and released == [f"w@{first}"]
    second = room.home("a")
    assert second not in (None, first) and made == [first, second, f"w@{second}"]


def test_reset_releases_the_whole_lab():
    room, released, folders, _ = make_room()
    room.get("lab", "w", lambda _: "w")
    assert room.release("lab") == 1 and released == ["w"] and folders == ["lab"]
    assert room.release("lab") == 0


def test_bounds_come_from_the_environment_and_a_bad_one_is_named():
    room = Room.from_env({rooms.MAX_LABS_ENV: "5", rooms.IDLE_ENV: "1.5"}, release=lambda _: None)
    assert room.max_labs == 5 and room.idle_seconds == 90
    for bad in ("0", "-3", "many", "nan"):
        with pytest.raises(ValueError, match=rooms.MAX_LABS_ENV):
            Room.from_env({rooms.MAX_LABS_ENV: bad}, release=lambda _: None)


def test_only_a_lab_id_shaped_cookie_is_used():
    good = "0123456789abcdef" * 2
    assert valid_lab_id(good) == good
    for bad in (None, "", good[:-1], good.upper(), good + "0", "../" + good[3:], good[:31] + "\n"):
        assert valid_lab_id(bad) is None


# --- the real lab ----------------------------------------------------------------------------------------

@pytest.mark.app
def test_a_lab_released_past_the_cap_leaves_no_folder_and_no_chroma_client(lab_env, monkeypatch):  # noqa: F811
    monkeypatch.setenv(rooms.MAX_LABS_ENV, "1")
    st.cache_resource.clear()  # the room reads its bounds when it is created
    first = open_app("lab/pages/pollution.py", embedder="lexical")
    folder = engine.lab_folder(first.session_state["lab.id"])
    assert folder.parent == lab_env / "lab" and folder.name.startswith(first.session_state["lab.id"] + "-")
    assert (folder / "chroma" / "chroma.sqlite3").exists()
    assert str(folder.resolve()) in {key[0] for key in _CLIENTS}
    second = open_app("lab/pages/pollution.py", embedder="lexical")
    assert second.session_state["lab.id"] != first.session_state["lab.id"]
    assert not folder.exists(), os.listdir(folder)
    assert str(folder.resolve()) not in {key[0] for key in _CLIENTS}
    first.run()  # the first participant comes back: a fresh lab, and a word about the old one
    assert not first.exception
    assert any("least recently used" in i.value for i in first.info), [i.value for i in first.info]
    again = engine.lab_folder(first.session_state["lab.id"])
    assert again != folder and (again / "chroma" / "chroma.sqlite3").exists() and not folder.exists()


@pytest.mark.app
def test_switching_the_write_path_after_an_injection_says_the_injection_stays_behind(lab_env):  # noqa: F811
    at = open_app("lab/pages/pollution.py", embedder="lexical")
    at.button(key="pollution.inject.noise").click().run()
    at.sidebar.selectbox(key="write_path").set_value("raw").run()
    assert not at.exception
    assert any("3 change(s)" in i.value for i in at.info), [i.value for i in at.info]
    assert engine.room().labs() == {at.session_state["lab.id"]: 1}


@pytest.mark.app
def test_switching_the_language_and_back_finds_the_injections(lab_env):  # noqa: F811
    """Issue 25, item 5: the UI language switches the scenario (in a browser the scenario picker follows the language;
    here both are set, as the browser's rerun sets them); the other language's lab is kept, not thrown away."""
    at = open_app("lab/pages/inspector.py", embedder="lexical", write_path="raw")  # one record per message
    at.switch_page("lab/pages/pollution.py").run()
    at.button(key="pollution.inject.noise").click().run()
    at.switch_page("lab/pages/inspector.py").run()
    assert int(metric(at, "Records shown")) == 78 + 3
    at.sidebar.selectbox(key="lang").set_value("zh")
    at.sidebar.selectbox(key="scenario").set_value("workshop_zh").run()
    assert not at.exception and int(metric(at, "显示的记录")) == 78
    assert not [i.value for i in at.info if "3" in i.value and "workshop" in i.value.lower()]
    at.sidebar.selectbox(key="lang").set_value("en")
    at.sidebar.selectbox(key="scenario").set_value("workshop_en").run()
    assert not at.exception
    assert int(metric(at, "Records shown")) == 78 + 3, "switching the language and back lost the injections"
    assert engine.room().labs() == {at.session_state["lab.id"]: 2}


def test_creating_a_workspace_does_not_hold_other_labs_and_happens_once_per_lab():
    import threading

    room, released, _, _ = make_room()
    started, finish, made = threading.Event(), threading.Event(), []

    def slow(_home):
        made.append("slow")
        started.set()
        finish.wait(10)
        return "slow-w"

    tabs = [threading.Thread(target=room.get, args=("a", "w", slow)) for _ in range(2)]
    tabs[0].start()
    assert started.wait(10)
    tabs[1].start()  # a second tab of the same browser waits for the first creation
    assert room.get("b", "w", lambda _: "b-w") == "b-w", "another browser is not held up"
    finish.set()
    for tab in tabs:
        tab.join(10)
    assert made == ["slow"] and room.get("a", "w", lambda _: "never") == "slow-w" and released == []


# --- the descriptor bound ----------------------------------------------------------------------------------

def test_the_room_raises_the_soft_open_file_limit_and_caps_itself_to_what_fits():
    raised = []
    # soft 1,024 raised to a hard limit of 4,096: 60 labs fit
    assert rooms.labs_within_descriptors(60, limits=lambda: (1024, 4096),
                                         set_soft=lambda soft, hard: raised.append((soft, hard))) == 60
    assert raised == [(4096, 4096)]
    # no room above 1,024: the cap is what 1,024 descriptors hold beside the reserve
    fits = (1024 - rooms.FD_RESERVE) // rooms.FDS_PER_LAB
    assert rooms.labs_within_descriptors(60, limits=lambda: (1024, 1024), set_soft=lambda *a: None) == fits < 60

    def refused(soft, hard):
        raise ValueError("not permitted")

    assert rooms.labs_within_descriptors(60, limits=lambda: (1024, 4096), set_soft=refused) == fits


def test_the_real_process_limit_holds_the_default_room():
    import resource

    assert rooms.labs_within_descriptors(rooms.DEFAULT_MAX_LABS) == rooms.DEFAULT_MAX_LABS
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft == resource.RLIM_INFINITY or soft >= rooms.DEFAULT_MAX_LABS * rooms.FDS_PER_LAB + rooms.FD_RESERVE


def test_after_release_runs_once_per_group_of_releases():
    calls = []
    room, released, folders, clock = make_room(max_labs=5)
    room._after_release = lambda: calls.append(len(released))
    for lab in ("a", "b", "c"):
        room.get(lab, "w", lambda _, lab=lab: lab)
    assert calls == []  # nothing released yet
    clock.now += room.idle_seconds + 1
    room.get("d", "w", lambda _: "d")  # releases a, b and c at once
    assert released == ["a", "b", "c"] and calls == [3]

