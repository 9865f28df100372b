"""A full disk is a first-class fault (issue 28): writes are refused before they start with one clear error, nothing of
a refused or failed write is stored, no writer or erasure waits without bound behind another, and erasure completes
with no canary byte left once there is space to delete in.

Most tests inject the fault where the library meets it (the disk's free space, an ENOSPC from the vector store, SQLite's
"database or disk is full" inside the commit); one runs on a real 12 MB tmpfs, filled by the store itself and then to
the last byte by another file (it mounts one: root on Linux; CI requires it with MEMORY_REQUIRE_TMPFS=1).
"""

from __future__ import annotations

import errno
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from memory import (
    BusyError, DiskFullError, ErasurePendingError, LexicalEmbedder, MemoryManager, Message, Owner, StoreLocation,
    release_client,
)
from memory.store import space
from test_app import lab_env  # noqa: F401 - the lab tests' data folder and fresh caches

ROOT = Path(__file__).resolve().parent.parent


def _messages(user: str, start: int, n: int, *, pad: int = 40) -> list[Message]:
    return [Message(tenant_id="acme", user_id=user, id=f"{user}-{i}", role="user",
                    content=f"note {i} of {user} {'x' * pad} CANARY-{user}-{i:05d}") for i in range(start, start + n)]


@pytest.fixture
def manager(tmp_path, monkeypatch):
    monkeypatch.delenv(space.RESERVE_ENV, raising=False)
    m = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=tmp_path / "data"))
    m.add_many(_messages("alice", 0, 5))
    yield m
    m.drop()


def _state(m: MemoryManager) -> tuple[int, int, list]:
    return (len(m.records(tenant_id="acme", user_id="alice")), len(m.records(tenant_id="acme", user_id="bob")),
            m.pending_plans())


def test_a_write_that_would_eat_the_erasure_reserve_is_refused_before_it_starts(manager, monkeypatch):
    before = _state(manager)
    free = space.free_bytes(manager.data_dir)
    monkeypatch.setenv(space.RESERVE_ENV, str(free / 1024 / 1024))  # the disk holds exactly the reserve
    with pytest.raises(DiskFullError) as caught:
        manager.add_many(_messages("bob", 0, 3))
    message = str(caught.value)
    assert "is full" in message and str(manager.data_dir) in message and "nothing of it stored" in message
    assert "Free space" in message and "\n" not in message, "one sentence that says what to do"
    assert caught.value.free_bytes is not None and caught.value.needed_bytes
    assert _state(manager) == before, "nothing written, nothing pending"
    report = manager.erase_user(tenant_id="acme", user_id="alice", disk_scan=True)  # erasures do not keep it
    assert all(p.remaining == 0 for p in report.paths), report.paths
    monkeypatch.setenv(space.RESERVE_ENV, "0")
    assert len(manager.add_many(_messages("bob", 0, 3))) == 3, "space back: the same write goes through"


@pytest.mark.parametrize("text", ["", "-1", "lots", "nan", "inf"])
def test_the_reserve_setting_is_checked(manager, monkeypatch, text):
    monkeypatch.setenv(space.RESERVE_ENV, text)
    if text == "":
        assert space.reserve_bytes() == space.DEFAULT_RESERVE_MB * 1024 * 1024
        return
    with pytest.raises(DiskFullError, match=space.RESERVE_ENV):
        manager.add_many(_messages("bob", 0, 1))


def _enospc(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _sqlite_full(*_args, **_kwargs):
    raise sqlite3.OperationalError("database or disk is full")


@pytest.mark.parametrize("where, fault", [("vectors", _enospc), ("commit", _sqlite_full), ("journal", _sqlite_full)])
def test_a_disk_full_failure_inside_a_write_is_one_clear_error_and_rolled_back(manager, monkeypatch, where, fault):
    before = _state(manager)
    target = {"vectors": (manager.store, "add_vectors"), "commit": (manager.store.texts, "mark_ingested"),
              "journal": (manager.store.texts, "journal_put")}[where]
    monkeypatch.setattr(*target, fault)
    with pytest.raises(DiskFullError) as caught:
        manager.add_many(_messages("bob", 0, 3))
    assert "is full" in str(caught.value) and str(manager.data_dir) in str(caught.value)
    assert isinstance(caught.value.__cause__, (OSError, sqlite3.Error)), "the cause is kept, chained"
    monkeypatch.undo()
    assert _state(manager) == before, "rolled back: nothing stored, nothing pending"
    assert manager.store.owner_vector_ids(Owner("acme", "bob")) == [], "no vector of the failed write stays"


def test_a_misleading_sqlite_error_on_a_nearly_full_disk_is_named_for_its_cause(manager, monkeypatch):
    """On a nearly full disk SQLite answered "cannot rollback - no transaction is active", which hid the cause."""
    monkeypatch.setattr(manager.store.texts, "mark_ingested", _raise(sqlite3.OperationalError(
        "cannot rollback - no transaction is active")))
    monkeypatch.setattr(space, "free_bytes", lambda _folder: 1024)  # a full disk; the reserve check is passed below
    monkeypatch.setattr("memory.runtime.manager.check_space", lambda *_a, **_k: None)
    with pytest.raises(DiskFullError, match="is full"):
        manager.add_many(_messages("bob", 0, 2))
    monkeypatch.undo()
    with pytest.raises(Exception) as other:  # with space on the disk the same error is not called a full disk
        monkeypatch.setattr(manager.store.texts, "mark_ingested", _raise(sqlite3.OperationalError("disk I/O error")))
        manager.add_many(_messages("bob", 0, 2))
    assert not isinstance(other.value, DiskFullError) and "disk I/O error" in str(other.value)


def _raise(exc: Exception):
    def raising(*_args, **_kwargs):
        raise exc
    return raising


def test_a_held_write_lock_makes_other_writers_and_erasures_wait_a_bounded_time(manager, monkeypatch):
    """A writer stuck while holding the write lock (as one stuck inside Chroma on a full disk did, for more than
    480 s) makes every other write and erasure give up after the bounded wait with BusyError, not freeze; once it
    lets go, both go through."""
    monkeypatch.setenv("MEMORY_WRITE_WAIT_S", "0.2")
    holding, release = threading.Event(), threading.Event()

    def stuck() -> None:
        with manager.writing():
            holding.set()
            release.wait(60)

    thread = threading.Thread(target=stuck)
    thread.start()
    try:
        assert holding.wait(10)
        before = _state(manager)
        with pytest.raises(BusyError, match="write lock"):
            manager.add_many(_messages("bob", 0, 2))
        with pytest.raises(BusyError, match="erasure of acme/alice"):
            manager.erase_user(tenant_id="acme", user_id="alice")
        assert _state(manager) == before
    finally:
        release.set()
        thread.join(10)
    assert len(manager.add_many(_messages("bob", 0, 2))) == 2
    assert manager.erase_user(tenant_id="acme", user_id="alice").paths


# --- a real small disk ----------------------------------------------------------------------------


def _canary_files(folder: Path, needle: str) -> list[str]:
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.mark.process
def test_on_a_full_12_mb_disk_writes_fail_fast_the_store_stays_readable_and_erasure_completes(small_disk, monkeypatch):
    monkeypatch.setenv(space.RESERVE_ENV, "2")
    data = small_disk / "data"
    m = MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=data))
    stored: dict[str, int] = {"u0": 0, "u1": 0, "u2": 0}
    errors: list[BaseException] = []
    batch = 0
    while len(errors) < 3 and batch < 500:  # until the disk refuses three times
        user = f"u{batch % 3}"
        try:
            m.add_many(_messages(user, stored[user], 20, pad=400))
            stored[user] += 20
        except Exception as exc:  # noqa: BLE001 - every failure is looked at below
            errors.append(exc)
        batch += 1
    assert len(errors) == 3 and all(isinstance(e, DiskFullError) for e in errors), errors
    assert all("is full" in str(e) for e in errors)
    assert sum(stored.values()) > 0
    for user, n in stored.items():  # every acknowledged write is there, nothing of a refused one
        assert len(m.records(tenant_id="acme", user_id=user)) == n, user
    assert m.pending_plans() == []

    report = m.erase_user(tenant_id="acme", user_id="u0", disk_scan=True)  # the reserve is the room to delete in
    assert all(p.remaining == 0 for p in report.paths), report.paths
    assert _canary_files(data, "CANARY-u0-") == []

    filler = small_disk / "filler"  # another program fills the disk to the last byte
    with filler.open("wb") as out, pytest.raises(OSError):
        while True:
            out.write(b"\0" * 65_536)
            out.flush()
    with pytest.raises(DiskFullError, match="erasure of acme/u1 could not finish"):
        m.erase_user(tenant_id="acme", user_id="u1", disk_scan=True)
    with pytest.raises(ErasurePendingError):  # recorded as pending: the user is not served until it is finished
        m.records(tenant_id="acme", user_id="u1")
    assert len(m.records(tenant_id="acme", user_id="u2")) == stored["u2"], "the others readable, and as they were"
    with pytest.raises(DiskFullError):
        m.add_many(_messages("u2", stored["u2"], 1))

    filler.unlink()  # space returns: the same erasure completes, to the last byte
    report = m.erase_user(tenant_id="acme", user_id="u1", disk_scan=True)
    assert all(p.remaining == 0 for p in report.paths), report.paths
    assert _canary_files(data, "CANARY-u1-") == []
    m.close()
    release_client(data)
    count = subprocess.run(  # the folder opens again, in another process, with everything acknowledged
        [sys.executable, "-c", "import sys; from memory import *; m = MemoryManager(embedder=LexicalEmbedder(), "
         "location=StoreLocation(data_dir=sys.argv[1]), workspace=sys.argv[2]); "
         "print(len(m.records(tenant_id='acme', user_id='u2')))", str(data), m.workspace],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert count.returncode == 0, count.stderr
    assert int(count.stdout.split()[-1]) == stored["u2"]


# --- the lab ----------------------------------------------------------------------------------------


@pytest.mark.app
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lab_shows_a_banner_on_a_full_disk_and_keeps_working(lab_env, monkeypatch, lang):  # noqa: F811
    """A participant's injection on a server whose disk is full: the page shows the full-disk banner in its language
    (no traceback, no server path), the lab's records are unchanged, and once there is space the same click works."""
    from lab import i18n
    from test_app import open_app

    at = open_app("lab/pages/pollution.py", embedder="lexical", lang=lang)  # the lab is built; now the disk fills
    at.button(key="pollution.inject.noise").click().run()
    shown = _injected(at)
    assert shown > 0
    monkeypatch.setenv(space.RESERVE_ENV, str(10 ** 9))  # no disk holds a petabyte beyond its writes: full
    at.button(key="pollution.inject.noise").click().run()
    assert not at.exception, [e.value for e in at.exception]
    banners = [e.value for e in at.error]
    assert i18n.TEXT["disk.full"][lang] in banners, banners
    assert not [b for b in banners if str(lab_env) in b or "/tmp" in b], "no server path on the page"
    at.run()  # the page again, the disk still full: it reads and draws whole, and nothing was written
    assert not at.exception and _injected(at) == shown, "nothing was written"
    monkeypatch.setenv(space.RESERVE_ENV, "0")
    at.button(key="pollution.inject.noise").click().run()
    assert not at.exception and i18n.TEXT["disk.full"][lang] not in [e.value for e in at.error]
    assert _injected(at) > shown


def _injected(at) -> int:
    """How many messages the lab has injected (rows of the page's injections table; none before the first)."""
    return next((len(df.value) for df in at.dataframe if "in_sandbox" in df.value.columns), 0)
