"""The room of labs (lab/rooms.py): a reload finds its lab; idle labs and labs past the cap are released with
their folder and Chroma client; a switch that throws a participant's changes away says so.

The Room tests use plain values and a fake clock (they are about the bounds, not about a store); the AppTests
at the end use the real lab (real Chroma in a temp folder, the lexical embedder: they are about folders)."""

from __future__ import annotations

import os

import pytest
import streamlit as st

from lab import engine, rooms
from lab.rooms import Released, Room, valid_lab_id
from memory.store.chroma import _CLIENTS
from tests.test_app import lab_env, metric, open_app  # noqa: F401 - lab_env is a fixture used below


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_room(**kw):
    released, folders, clock = [], [], Clock()
    room = Room(release=released.append, release_lab=folders.append, clock=clock, **kw)
    return room, released, folders, clock


def test_the_same_lab_id_finds_the_same_workspace_and_another_id_its_own():
    room, released, _, _ = make_room()
    first = room.get("a" * 32, "workshop", lambda: object())
    assert room.get("a" * 32, "workshop", lambda: object()) is first  # a reload
    assert room.get("b" * 32, "workshop", lambda: object()) is not first  # another browser
    assert released == []


def test_an_idle_lab_is_released_with_its_folder_and_told_once():
    room, released, folders, clock = make_room(idle_seconds=600)
    room.get("idle", "w", lambda: "idle-w")
    clock.now = 300
    room.get("active", "w", lambda: "active-w")
    assert released == []  # 5 minutes idle: kept
    clock.now = 601
    room.get("active", "w", lambda: "unused")
    assert released == ["idle-w"] and folders == ["idle"]
    assert room.labs() == {"active": 1}
    notice = room.take_notice("idle")
    assert notice.reason == "idle" and notice.minutes == pytest.approx(601 / 60)
    assert room.take_notice("idle") is None


def test_past_the_cap_the_least_recently_used_lab_goes_first():
    room, released, folders, clock = make_room(max_labs=2)
    for i, lab in enumerate(["a", "b", "c"]):
        clock.now = i
        room.get(lab, "w", lambda lab=lab: f"{lab}-w")
        if lab == "b":
            room.get("a", "w", lambda: "never")  # a is used again: b is now the least recent
    assert released == ["b-w"] and folders == ["b"]
    assert list(room.labs()) == ["a", "c"]
    assert room.take_notice("b").reason == "full"


def test_a_lab_still_loading_is_never_reclaimed():
    loading = {"big-w"}
    room, released, _, clock = make_room(max_labs=1, idle_seconds=10, busy=lambda v: v in loading)
    room.get("big", "w", lambda: "big-w")
    clock.now = 100
    room.get("other", "w", lambda: "other-w")
    assert released == [] and set(room.labs()) == {"big", "other"}
    loading.clear()
    room.get("other", "w", lambda: "unused")
    assert released == ["big-w"]



def test_a_lab_a_page_is_drawing_with_is_not_released_until_the_run_lets_go():
    """Newcomers past the cap while a participant's page draws with its lab: the room goes over the cap rather than
    release that lab under the page (python -m bench.room_burst --quick once lost a session this way); once the run
    lets go, the next newcomer releases it, and a hold that never let go counts for HOLD_SECONDS only."""
    from lab.rooms import HOLD_SECONDS

    room, released, _, clock = make_room(max_labs=1)
    room.get("drawing", "w", lambda: "drawing-w", hold=True)
    clock.now = 1
    room.get("newcomer", "w", lambda: "newcomer-w", hold=True)
    assert released == [] and set(room.labs()) == {"drawing", "newcomer"}
    room.let_go("drawing")
    clock.now = 2
    room.get("third", "w", lambda: "third-w")
    assert released == ["drawing-w"] and room.take_notice("drawing").reason == "full"
    clock.now = 2 + HOLD_SECONDS  # "newcomer" never let go: its hold has run out
    room.get("fourth", "w", lambda: "fourth-w")
    assert "newcomer-w" in released

def test_a_switch_releases_the_previous_workspace_and_counts_the_changes_it_held():
    changes = {"raw": 3, "facts": 0}
    room, released, folders, _ = make_room(changes=lambda v: changes[v])
    room.get("lab", ("workshop", "raw"), lambda: "raw")
    room.get("lab", ("workshop", "facts"), lambda: "facts")
    assert released == ["raw"] and folders == []  # the lab and its folder stay
    assert room.take_notice("lab") == Released("replaced", 0.0, 3)
    room.get("lab", ("workshop", "raw"), lambda: "raw")
    assert room.take_notice("lab") is None  # nothing of the participant's was in "facts"


def test_a_switch_replaces_a_workspace_of_its_own_group_only():
    """Workspaces are grouped (the lab groups them by the scenario's language): a switch within a group replaces that
    group's workspace; a switch to another group keeps it, so switching back finds it with its changes."""
    room, released, _, _ = make_room(group=lambda key: key[-1])
    en = room.get("lab", ("workshop_en", "raw", "en"), lambda: "en-raw")
    room.get("lab", ("workshop_zh", "raw", "zh"), lambda: "zh-raw")
    assert released == [] and room.labs() == {"lab": 2}
    assert room.get("lab", ("workshop_en", "raw", "en"), lambda: "new") is en  # back: the same workspace
    room.get("lab", ("workshop_en", "facts", "en"), lambda: "en-facts")
    assert released == ["en-raw"] and room.labs() == {"lab": 2}


def test_reset_releases_the_whole_lab():
    room, released, folders, _ = make_room()
    room.get("lab", "w", lambda: "w")
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
    folder = lab_env / "lab" / first.session_state["lab.id"]
    assert (folder / "chroma" / "chroma.sqlite3").exists()
    assert str(folder.resolve()) in {key[0] for key in _CLIENTS}
    second = open_app("lab/pages/pollution.py", embedder="lexical")
    assert second.session_state["lab.id"] != first.session_state["lab.id"]
    assert not folder.exists(), os.listdir(folder)
    assert str(folder.resolve()) not in {key[0] for key in _CLIENTS}
    first.run()  # the first participant comes back: a fresh lab, and a word about the old one
    assert not first.exception
    assert any("least recently used" in i.value for i in first.info), [i.value for i in first.info]
    assert (folder / "chroma" / "chroma.sqlite3").exists()


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

    def slow():
        made.append("slow")
        started.set()
        finish.wait(10)
        return "slow-w"

    tabs = [threading.Thread(target=room.get, args=("a", "w", slow)) for _ in range(2)]
    tabs[0].start()
    assert started.wait(10)
    tabs[1].start()  # a second tab of the same browser waits for the first creation
    assert room.get("b", "w", lambda: "b-w") == "b-w", "another browser is not held up"
    finish.set()
    for tab in tabs:
        tab.join(10)
    assert made == ["slow"] and room.get("a", "w", lambda: "never") == "slow-w" and released == []


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
        room.get(lab, "w", lambda lab=lab: lab)
    assert calls == []  # nothing released yet
    clock.now += room.idle_seconds + 1
    room.get("d", "w", lambda: "d")  # releases a, b and c at once
    assert released == ["a", "b", "c"] and calls == [3]

