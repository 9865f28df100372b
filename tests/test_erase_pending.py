"""An interrupted erasure completes by itself (issue 50, item 7).

An erasure writes a pending-erasure record in the text store before its first delete and removes it once it has run to
its report. Whatever stops it in between (a full disk, a kill, a crash), the user is neither served nor written until
it is finished, and the next opening of the store (``MemoryManager.recover``) finishes it, audited as
``erase.completed_on_open`` by ``recovery``. Measured before: an erasure refused on a full disk, the disk freed and the
folder reopened, left the user whole (40 and 90 records); a kill during an erasure left it to the caller to repeat.

Most tests inject the fault where the library meets it (SQLite's "database or disk is full" in the text store's
deletes); one fills a real 12 MB tmpfs to the last byte (root on Linux; MEMORY_REQUIRE_TMPFS=1 makes it required), one
kills child processes at every step of an erasure and at random moments (memory/reliability/erase_kills.py), one
runs against a real ``chroma run``. Every check of "nothing left" reads the store and searches every byte of the data
folder for the user's texts, vector ids and vectors.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from memory import (
    DiskFullError, ErasedError, ErasurePendingError, LexicalEmbedder, MemoryManager, Message, Owner, StoreLocation,
    release_client,
)
from memory.runtime.erase import files_holding
from memory.store import space
from memory.store.textstore import ROOM_NAME, ErasureRoom, TextStore
from memory.reliability.erase_kills import HOOKS, check_erase_kills

WORKSPACE = "pending"


def _messages(user: str, n: int, *, pad: int = 0) -> list[Message]:
    return [Message(tenant_id="acme", user_id=user, id=f"{user}-{i}", role="user",
                    content=f"note {i} of {user} {'x' * pad} CANARY-{user}-{i:05d}") for i in range(n)]


def _open(data: Path, workspace: str = WORKSPACE, **location) -> MemoryManager:
    return MemoryManager(embedder=LexicalEmbedder(), location=StoreLocation(data_dir=data, **location),
                         workspace=workspace)


def _canaries(mm: MemoryManager, user: str) -> list[bytes]:
    """The user's texts, vector ids and vectors: what no byte of the folder may hold once the user is erased."""
    store = mm.store
    ids, blobs = store.owner_vector_bytes(Owner("acme", user))
    return ([r.content.encode() for r in store.records(Owner("acme", user))] + [b for b in blobs if b]
            + [v.encode() for v in store.owner_vector_ids(Owner("acme", user))])


def _sqlite_full(*_args, **_kwargs):
    raise sqlite3.OperationalError("database or disk is full")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A data folder with a user to erase (12 records) and another (8), closed; what the first holds."""
    monkeypatch.delenv(space.RESERVE_ENV, raising=False)
    data = tmp_path / "data"
    mm = _open(data)
    mm.add_many(_messages("victim", 12) + _messages("other", 8))
    needles = _canaries(mm, "victim")
    mm.close()
    release_client(data)
    yield data, needles
    release_client(data)


def _fail_midway(mm: MemoryManager, monkeypatch) -> DiskFullError:
    """Erase the victim while the disk refuses the text store's deletes (after Chroma's purge): it raises."""
    with monkeypatch.context() as patch:
        patch.setattr(TextStore, "erase_owner", _sqlite_full)
        with pytest.raises(DiskFullError) as caught:
            mm.erase_user(tenant_id="acme", user_id="victim", actor="admin", disk_scan=True)
    return caught.value


def _is_gone(mm: MemoryManager, data: Path, needles: list[bytes]) -> None:
    victim = {"tenant_id": "acme", "user_id": "victim"}
    assert mm.records(**victim) == [] and mm.recent(**victim) == [] and mm.summary(**victim) == ""
    assert mm.retrieve("note of victim", **victim, reinforce=False).blind == []
    assert mm.store.vector_count(Owner("acme", "victim")) == 0 and mm.pending_erasures() == []
    assert files_holding(data, needles) == [], "no text, vector id or vector of the user in any file"
    assert len(mm.records(tenant_id="acme", user_id="other")) == 8, "the other user untouched"


def test_the_record_is_written_before_the_first_delete_and_removed_after_the_report(folder, monkeypatch):
    data, needles = folder
    mm = _open(data)
    seen = []
    original = mm.store.delete_owner

    def first_delete(owner):
        seen.append(mm.store.texts.pending_erasure(owner))
        return original(owner)

    monkeypatch.setattr(mm.store, "delete_owner", first_delete)
    report = mm.erase_user(tenant_id="acme", user_id="victim", actor="admin", disk_scan=True)
    assert report.ok
    [record] = seen
    assert record is not None and record.writer == mm.store.texts.writer_token and record.actor == "admin"
    assert record.disk_scan and record.segments, "what finishing it needs: the disk scan, Chroma's segment folders"
    assert "CANARY" not in str(record), "no text of the user in the record"
    assert mm.pending_erasures() == []
    _is_gone(mm, data, needles)
    mm.close()


@pytest.mark.parametrize("finish", ["reopen", "recover", "erase_again"])
def test_an_erasure_failing_midway_refuses_the_user_until_it_is_finished(folder, monkeypatch, finish):
    data, needles = folder
    mm = _open(data)
    error = _fail_midway(mm, monkeypatch)
    assert "could not finish" in str(error) and "stays pending" in str(error) and "\n" not in str(error)
    assert mm.store.count(Owner("acme", "victim")) == 12, "the texts are still there (Chroma's part is gone)"
    victim = {"tenant_id": "acme", "user_id": "victim"}
    reads = [lambda: mm.records(**victim), lambda: mm.recent(**victim), lambda: mm.summary(**victim),
             lambda: mm.retrieve("note 3 of victim", **victim), lambda: mm.build_context("note", **victim),
             lambda: mm.count(**victim), lambda: mm.decisions(**victim), lambda: mm.summary_sources(**victim),
             lambda: mm.get_record("x", **victim), lambda: mm.embeddings(["x"], **victim)]
    for read in reads:
        with pytest.raises(ErasurePendingError) as refused:
            read()
        message = str(refused.value)
        assert "erasure of acme/victim was interrupted" in message and "\n" not in message and str(data) not in message
    assert len(mm.records(tenant_id="acme", user_id="other")) == 8, "the other user is served"
    with pytest.raises(ErasedError):  # written now, it would be erased with the rest: not stored
        mm.add(Message(tenant_id="acme", user_id="victim", id="late", content="a late note CANARY-late"))
    with pytest.raises(ErasedError):  # nor is a retry of a stored message answered with its record
        mm.add(_messages("victim", 1)[0])
    assert mm.store.count(Owner("acme", "victim")) == 12 and [e.owner for e in mm.pending_erasures()] == [("acme", "victim")]
    assert [c.name for c in mm.audit_user(**victim) if c.remaining] != [], "audit_user still lists what is stored"

    if finish == "reopen":
        mm.close()
        release_client(data)
        mm = _open(data)
        assert [r.ok for r in mm.completed_erasures] == [True]
    elif finish == "recover":
        assert mm.recover() == 0 and [r.ok for r in mm.completed_erasures] == [True]
    else:
        assert mm.erase_user(**victim, disk_scan=True).ok
    _is_gone(mm, data, needles + [b"CANARY-late"])
    entries = [(e["action"], e["actor"]) for e in mm.audit_log()]
    expected = ("erase_user", "system") if finish == "erase_again" else ("erase.completed_on_open", "recovery")
    assert entries == [expected], entries
    mm.add(Message(tenant_id="acme", user_id="victim", id="new", content="a new start"))  # written again, after
    assert [r.content for r in mm.records(**victim)] == ["a new start"]
    mm.close()


def test_an_erasure_whose_record_cannot_be_written_is_refused_and_deletes_nothing(folder, monkeypatch):
    data, _ = folder
    mm = _open(data)
    original = TextStore._tx

    def no_room_for_the_record(self, statements):
        statements = list(statements)
        if statements and "INTO erasures" in statements[0][0]:
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, statements)

    released = []
    monkeypatch.setattr(TextStore, "_tx", no_room_for_the_record)
    monkeypatch.setattr(ErasureRoom, "release", lambda self: released.append(1) or True)
    with pytest.raises(DiskFullError, match="erasure of acme/victim was refused, nothing of it done") as caught:
        mm.erase_user(tenant_id="acme", user_id="victim")
    assert released == [1], "the room set aside was given back for a second try, which failed too"
    assert "\n" not in str(caught.value)
    monkeypatch.undo()
    assert mm.pending_erasures() == []
    assert len(mm.records(tenant_id="acme", user_id="victim")) == 12, "served, as it was"
    assert mm.store.vector_count(Owner("acme", "victim")) == 12, "nothing deleted, Chroma's part neither"
    mm.close()


def test_the_room_set_aside_lets_the_record_be_written_when_the_disk_refuses_it(folder, monkeypatch):
    data, needles = folder
    room = data / "text" / ROOM_NAME
    mm = _open(data)
    assert room.stat().st_size == 64 * 1024
    original, refused = TextStore._tx, []

    def full_until_the_room_is_given_back(self, statements):
        statements = list(statements)
        if statements and "INTO erasures" in statements[0][0] and room.exists():
            refused.append(1)
            raise sqlite3.OperationalError("database or disk is full")
        return original(self, statements)

    monkeypatch.setattr(TextStore, "_tx", full_until_the_room_is_given_back)
    assert mm.erase_user(tenant_id="acme", user_id="victim", disk_scan=True).ok
    assert refused == [1] and room.stat().st_size == 64 * 1024, "given back once, taken again after the erasure"
    _is_gone(mm, data, needles)
    mm.close()


def test_an_erasure_running_elsewhere_is_left_to_it_and_finished_once_its_store_is_gone(folder, monkeypatch):
    """Two stores of one folder (two managers here; two processes alike): the second does not finish, nor serve, an
    erasure the first has pending while the first lives; once the first is gone, the next opening finishes it."""
    data, needles = folder
    first = _open(data)
    _fail_midway(first, monkeypatch)
    second = _open(data)
    assert second.completed_erasures == []
    with pytest.raises(ErasurePendingError, match="being erased by another store"):
        second.records(tenant_id="acme", user_id="victim")
    assert second.store.count(Owner("acme", "victim")) == 12
    first.close()
    second.close()
    third = _open(data)
    assert [r.ok for r in third.completed_erasures] == [True]
    _is_gone(third, data, needles)
    third.close()


@pytest.mark.process
def test_sigkill_at_every_step_of_an_erasure_and_at_random_then_reopen(lexical, tmp_path):
    """Ten kills: one at each step an erasure passes (just after its record is written, in Chroma's purge before and
    after the segment folders' wipe, before the text store's deletes, inside their transaction before it commits,
    after it, in the verification's search of Chroma's file, in the disk scan, just before the record is removed) and
    one after a random delay. After each, the folder reopened: the user's records, window and summary are 0, no byte
    of its texts, vector ids or vectors is in any file, nothing is pending, the other users are as they were, and the
    audit says the opening finished it."""
    check = check_erase_kills(lexical, 1, tmp_path / "d", random_kills=1, full_disk=())
    figures = check.figures
    assert figures["kills"] == len(HOOKS) + 1 >= 10, figures
    assert check.failures == 0, figures
    assert figures["records_left"] == figures["canary_bytes_left"] == figures["others_changed"] == 0
    assert figures["completed_on_open"] >= len(HOOKS), "every kill after the record left an erasure to finish"


def _fill(path: Path) -> None:
    """Fill the disk to the last byte (as another program would)."""
    with path.open("wb", buffering=0) as out:
        for size in (65_536, 512, 1):
            try:
                while True:
                    out.write(b"\0" * size)
            except OSError:
                pass


@pytest.mark.process
def test_on_a_disk_full_to_the_last_byte_the_erasure_is_recorded_and_the_reopening_finishes_it(small_disk,
                                                                                             monkeypatch):
    monkeypatch.setenv(space.RESERVE_ENV, "2")
    data = small_disk / "data"
    mm = _open(data)
    mm.add_many(_messages("victim", 40, pad=400))
    mm.add_many(_messages("other", 8, pad=400))
    needles = _canaries(mm, "victim")
    filler = small_disk / "filler"
    _fill(filler)
    assert space.free_bytes(data) == 0
    with pytest.raises(DiskFullError, match="erasure of acme/victim could not finish") as caught:
        mm.erase_user(tenant_id="acme", user_id="victim", disk_scan=True)
    assert "\n" not in str(caught.value)
    assert [e.owner for e in mm.pending_erasures()] == [("acme", "victim")], "recorded, in the room set aside for it"
    with pytest.raises(ErasurePendingError):
        mm.records(tenant_id="acme", user_id="victim")
    assert len(mm.records(tenant_id="acme", user_id="other")) == 8
    mm.close()
    release_client(data)

    filler.unlink()  # the disk freed; nobody repeats the erasure: the folder is opened again
    mm = _open(data)
    assert [r.ok for r in mm.completed_erasures] == [True]
    victim = needles + [b"CANARY-victim-"]
    assert files_holding(small_disk, victim) == [], "no byte of the user on the disk"
    assert mm.records(tenant_id="acme", user_id="victim") == [] and mm.recent(tenant_id="acme", user_id="victim") == []
    assert len(mm.records(tenant_id="acme", user_id="other")) == 8
    assert [(e["action"], e["actor"]) for e in mm.audit_log()] == [("erase.completed_on_open", "recovery")]
    assert ErasureRoom(data / "text").keep() and (data / "text" / ROOM_NAME).exists(), "the room is set aside again"
    mm.close()


@pytest.mark.server
def test_in_server_mode_the_record_lives_with_the_texts_and_the_reopening_finishes_it(chroma_server, tmp_path,
                                                                                       monkeypatch):
    """A ``chroma run`` holds the vectors, the local folder the texts: the record is in the text file, and a client
    opening that folder again finishes the erasure on the server too (the user's collection gone)."""
    data, workspace = tmp_path / "texts", f"pending-{uuid.uuid4().hex[:8]}"  # the server is the session's
    server = {"host": "127.0.0.1", "port": chroma_server}
    mm = _open(data, workspace, **server)
    mm.add_many(_messages("victim", 6) + _messages("other", 8))
    collection = mm.store.collection_of(Owner("acme", "victim"))
    needles = _canaries(mm, "victim")
    with monkeypatch.context() as patch:
        patch.setattr(mm.store, "delete_owner", _sqlite_full)  # fails before anything is deleted, record written
        with pytest.raises(DiskFullError):
            mm.erase_user(tenant_id="acme", user_id="victim")
    [text_file] = (data / "text").glob("*.sqlite3")
    rows = sqlite3.connect(str(text_file)).execute("SELECT tenant_id, user_id FROM erasures").fetchall()
    assert rows == [("acme", "victim")], "the record is where the texts are"
    assert mm.store.collection_exists(collection)
    mm.close()
    mm = _open(data, workspace, **server)
    assert [r.ok for r in mm.completed_erasures] == [True]
    assert not mm.store.collection_exists(collection) and mm.records(tenant_id="acme", user_id="victim") == []
    assert files_holding(data, needles) == []
    assert len(mm.records(tenant_id="acme", user_id="other")) == 8
    mm.drop()
