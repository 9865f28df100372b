"""erase_user across the window, the summary, the long-term store, caches and the disk."""

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from memory import MemoryConfig, Message, Owner, StoreLocation
from memory.store.chroma import HNSW_BATCH
from memory.store.chroma_files import HEAD_BYTES
from memory.runtime.erase import scan_for_bytes

T0 = 1_780_000_000.0


def _load(mm, canary):
    for i in range(6):
        mm.add(Message(tenant_id="acme", user_id="guest", content=f"Guest private note {i}: {canary}-{i}",
                       id=f"g{i}", timestamp=T0 + i))
    for i in range(5):
        mm.add(Message(tenant_id="acme", user_id="alice", content=f"Alice keeps working on report {i}.",
                       id=f"a{i}", timestamp=T0 + 100 + i))
    mm.add(Message(tenant_id="globex", user_id="guest", content="Globex guest has a different life.", id="x1"))


def test_erase_removes_every_track_and_keeps_others(make_manager, tmp_path):
    canary = "CANARY-" + uuid.uuid4().hex
    mm = make_manager(MemoryConfig(window_size=3, threshold=0.0), location=StoreLocation(data_dir=tmp_path / "data"))
    _load(mm, canary)
    guest = {"tenant_id": "acme", "user_id": "guest"}
    mm.retrieve(f"private note {canary}", **guest)  # puts the query in the cache
    assert mm.summary(**guest) and mm.recent(**guest) and len(mm.records(**guest)) == 6
    assert scan_for_bytes(tmp_path / "data", [canary]), "before erasure the canary is on disk"
    alice_before = [r.content for r in mm.records(tenant_id="acme", user_id="alice")]
    others = [("acme", "alice"), ("globex", "guest")]
    others_rows = [mm.store.texts.count_owner_rows(Owner(*o)) for o in others]

    report = mm.erase_user(**guest, actor="test-admin", disk_scan=True)

    assert report.ok, report.to_dict()
    names = {p.name: p.remaining for p in report.paths}
    assert set(names) >= {"recent_window", "summary", "long_term_vectors", "long_term_text", "recall", "cache", "disk"}
    assert all(v == 0 for v in names.values())
    assert report.removed["long_term_vectors"] == 6 and report.removed["recent_window"] == 3
    assert mm.recent(**guest) == [] and mm.summary(**guest) == "" and mm.records(**guest) == []
    assert not any(canary in q for q in mm.cached_queries())
    res = mm.retrieve(f"Guest private note {canary}", **guest, reinforce=False)
    assert res.blind == [] and res.governed == []
    # nothing of the canary in any byte of the data folder (Chroma files and the text store)
    assert scan_for_bytes(tmp_path / "data", [canary]) == []
    # other users untouched, including the same user id in another tenant
    assert report.others_touched == 0
    assert [mm.store.texts.count_owner_rows(Owner(*o)) for o in others] == others_rows and others_rows[0]["texts"] == 5
    assert [r.content for r in mm.records(tenant_id="acme", user_id="alice")] == alice_before
    assert len(mm.records(tenant_id="globex", user_id="guest")) == 1
    # the audit log says who erased whom and when, without the erased content
    log = mm.store.texts.audit_log()
    assert log[-1]["action"] == "erase_user" and log[-1]["actor"] == "test-admin"
    assert log[-1]["user_id"] == "guest" and canary not in str(log)


def test_erase_report_flags_what_remains(make_manager, tmp_path):
    """The verification is a real re-query: if a path still holds data, the report says so."""
    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-left")
    from memory.runtime.erase import Evidence, verify_erased

    evidence = Evidence.collect(mm, Owner("acme", "guest"))
    checks = {p.name: p.remaining for p in verify_erased(mm, Owner("acme", "guest"), evidence=evidence,
                                                      disk_scan=True)}
    assert checks["long_term_vectors"] == 1 and checks["long_term_text"] == 6 and checks["owner_registry"] == 1
    assert checks["recent_window"] > 0 and checks["recall"] > 0 and checks["disk"] >= 1
    assert checks["chroma_rows"] >= 6 and checks["ingested_marks"] >= 6  # log rows not yet purged; marks by identity and id


def test_erase_leaves_no_vector_id_or_vector_byte_in_chroma_files(make_manager, tmp_path):
    """Chroma's own files after an erasure: no row, no vector id and no vector byte of the user (embedded), and
    the user's HNSW folder gone.

    Without memory/store/chroma_files.py's purge (a plain delete_collection), or with the collection's segment
    folder left on disk, the byte check fails: the folder's data_level0.bin and index_metadata.pickle keep the
    vectors and ids (traces in chroma.sqlite3 itself the verification clears, or report.ok fails). With the
    folder's files zeroed but the folder kept, the folder check fails."""
    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-0")
    # The guest gets HNSW_BATCH records in all: Chroma writes an owner's HNSW index (ids and vectors) into its
    # folder at HNSW_BATCH records, not before, so with one record fewer the byte check passes when the folder is
    # left behind. Plans of one guest and one alice message: each upserts one guest row, then one alice row (as
    # two single adds do; a larger batch_size writes runs of one owner), so Chroma's log and record rows alternate
    # owners row by row and share pages.
    pairs = HNSW_BATCH - len(mm.records(tenant_id="acme", user_id="guest"))
    mm.add_many([Message(tenant_id="acme", user_id=user, content=f"{user} line {i}", id=f"{user}-{i}",
                         timestamp=T0 + 1000 + i) for i in range(pairs) for user in ("guest", "alice")], batch_size=2)
    ids, blobs = mm.store.texts.vectors(Owner("acme", "guest"))
    vector_ids = mm.store.texts.vector_ids(Owner("acme", "guest"))
    chroma = tmp_path / "d" / "chroma"
    folders_before = {p.name for p in chroma.iterdir() if p.is_dir()}
    held = {p.name for p, _ in scan_for_bytes(chroma, vector_ids + blobs)}
    assert held >= {"chroma.sqlite3", "data_level0.bin", "index_metadata.pickle"}, f"before erasure: only in {held}"
    report = mm.erase_user(tenant_id="acme", user_id="guest")
    assert report.ok, report.to_dict()
    assert scan_for_bytes(chroma, vector_ids + blobs) == []
    assert len(folders_before - {p.name for p in chroma.iterdir() if p.is_dir()}) >= 1  # the HNSW folder went
    alice = mm.retrieve("alice line 7", tenant_id="acme", user_id="alice", reinforce=False)
    assert alice.governed[0].record.content == "alice line 7"


def test_erase_of_unknown_user_is_a_defined_no_op(make_manager):
    mm = make_manager()
    mm.add(Message(tenant_id="acme", user_id="alice", content="hello there", id="a"))
    report = mm.erase_user(tenant_id="acme", user_id="nobody")
    assert report.ok and report.removed["long_term_vectors"] == 0
    assert report.others_touched == 0
    assert sum(mm.store.texts.count_owner_rows(Owner("acme", "alice")).values()) == 5  # record, window, 2 marks, registry


def test_dropping_a_workspace_removes_its_collection_and_text_file(make_manager, tmp_path):
    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-drop")
    path, names = mm.store.texts.path, {c for _, _, c in mm.store.texts.collections()}
    assert path.exists() and len(names) == 3 and all(mm.store.collection_exists(n) for n in names)
    mm.store.drop()
    assert not path.exists()
    assert not any(mm.store.collection_exists(n) for n in names)
    assert scan_for_bytes(tmp_path / "d", ["CANARY-drop"]) == []


def test_a_vector_id_left_in_unused_space_of_chromas_file_is_found_and_cleared(make_manager, tmp_path):
    """The trace Chroma's own page reuse can leave (deleted bytes in a page still in use, written without
    secure_delete) is found by the chroma_file check and cleared by a rebuild; without the check the
    erasure would report ok with the id on disk, without the rebuild it would report the trace."""
    import sqlite3

    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-trace")
    planted = mm.store.texts.vector_ids(Owner("acme", "guest"))[0]
    db = sqlite3.connect(str(tmp_path / "d" / "chroma" / "chroma.sqlite3"), isolation_level=None)
    db.execute("PRAGMA secure_delete = OFF")
    db.execute("CREATE TABLE planted (n INTEGER, x TEXT)")
    db.executemany("INSERT INTO planted VALUES (?, ?)", [(i, f"filler {i}") for i in range(20)])
    db.execute("INSERT INTO planted VALUES (99, ?)", (f"old log bytes {planted}",))
    db.execute("DELETE FROM planted WHERE n = 99")  # the page stays in use; the deleted cell's bytes stay in it
    db.close()
    assert scan_for_bytes(tmp_path / "d" / "chroma", [planted])

    report = mm.erase_user(tenant_id="acme", user_id="guest", disk_scan=False)

    assert report.ok, report.to_dict()
    assert report.removed["chroma_rebuilt"] == 1
    assert {p.name: p.remaining for p in report.paths}["chroma_file"] == 0
    assert scan_for_bytes(tmp_path / "d" / "chroma", [planted]) == []


def test_the_erased_owners_writes_wait_for_the_verification_and_others_do_not(make_manager, tmp_path):
    """Other owners' writes run while an erasure is verified; the erased owner's own new write lands after
    the report, so the report describes the erasure (ok), and the write is then stored."""
    import threading

    from memory.runtime import erase as erase_module

    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-wait")
    verifying, release = threading.Event(), threading.Event()
    real = erase_module.verify_erased

    def slow_verify(*args, **kwargs):
        verifying.set()
        release.wait(30)
        return real(*args, **kwargs)

    erase_module.verify_erased = slow_verify
    try:
        result = {}
        eraser = threading.Thread(target=lambda: result.update(report=mm.erase_user(tenant_id="acme", user_id="guest",
                                                                                      disk_scan=False)))
        eraser.start()
        assert verifying.wait(30)
        mm.add(Message(tenant_id="acme", user_id="alice", content="Alice writes during the verification.", id="w1"))
        guest_write = threading.Thread(target=lambda: mm.add(Message(
            tenant_id="acme", user_id="guest", content="Guest comes back afterwards.", id="g-new")))
        guest_write.start()
        guest_write.join(1.0)
        assert guest_write.is_alive(), "the erased owner's write must wait for the report"
        release.set()
        eraser.join(60)
        guest_write.join(60)
    finally:
        erase_module.verify_erased = real
    assert result["report"].ok, result["report"].to_dict()
    assert [r.content for r in mm.records(tenant_id="acme", user_id="guest")] == ["Guest comes back afterwards."]
    assert "Alice writes during the verification." in [r.content for r in mm.records(tenant_id="acme", user_id="alice")]


def test_a_vector_id_left_in_chromas_row_pages_is_cleared_by_rewriting_those_pages(make_manager, tmp_path):
    """A trace in the pages of Chroma's own records (where its index rebalancing leaves deleted ids) is
    cleared by rewriting the rows of those pages, without rebuilding the whole file."""
    import sqlite3

    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-page")
    # One plan: Chroma's record rows are alice's 40 in one collection either way (one by one cost 40 plans). With 10
    # more or none, rewriting the trace's pages does not clear it and the file is rebuilt: this test fails then.
    mm.add_many([Message(tenant_id="acme", user_id="alice", content=f"alice line {i}", id=f"al{i}", timestamp=T0 + i)
                 for i in range(40)])
    planted = mm.store.texts.vector_ids(Owner("acme", "guest"))[0]
    db = sqlite3.connect(str(tmp_path / "d" / "chroma" / "chroma.sqlite3"), isolation_level=None)
    db.execute("PRAGMA secure_delete = OFF")
    top = db.execute("SELECT MAX(id) FROM embeddings").fetchone()[0]
    db.execute("INSERT INTO embeddings (id, segment_id, embedding_id, seq_id) VALUES (?, 'planted', ?, x'00')",
               (top + 1, planted))
    db.execute("DELETE FROM embeddings WHERE id = ?", (top + 1,))  # the row's bytes stay in pages still in use
    db.close()
    alice_before = [r.content for r in mm.records(tenant_id="acme", user_id="alice")]

    report = mm.erase_user(tenant_id="acme", user_id="guest", disk_scan=False)

    assert report.ok, report.to_dict()
    assert report.removed["chroma_pages_rewritten"] >= 1 and report.removed["chroma_rebuilt"] == 0
    assert scan_for_bytes(tmp_path / "d" / "chroma", [planted]) == []
    assert [r.content for r in mm.records(tenant_id="acme", user_id="alice")] == alice_before
    assert mm.store.vector_count(Owner("acme", "alice")) == len(alice_before) == 45
    db = sqlite3.connect(str(tmp_path / "d" / "chroma" / "chroma.sqlite3"))
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_the_default_erasure_reads_no_file_whole_but_chromas(make_manager, tmp_path):
    """The library's default erasure costs what the user owns: it verifies every path by the user's own keys
    and Chroma's database file by one linear read, and leaves the folder-sized byte scan to ``disk_scan``."""
    mm = make_manager(location=StoreLocation(data_dir=tmp_path / "d"))
    _load(mm, "CANARY-default")
    report = mm.erase_user(tenant_id="acme", user_id="guest")
    names = [p.name for p in report.paths]
    assert report.ok and "disk" not in names
    assert {"chroma_file", "chroma_rows", "long_term_text", "journal", "recall"} <= set(names)
    assert scan_for_bytes(tmp_path / "d", ["CANARY-default"]) == []  # what the skipped scan would have found


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400), cut=st.integers(0, 400), length=st.integers(HEAD_BYTES, 200),
       alphabet=st.binary(min_size=1, max_size=2))
def test_the_head_first_search_finds_what_a_plain_search_finds(data, cut, length, alphabet):
    """chroma_files._find looks for a long needle by its head first: on data built from one or two byte values
    (so heads match where the whole needle does not) it answers exactly what ``bytes.find`` does."""
    from memory.store.chroma_files import _find

    repeated = (alphabet * 400)[:400]
    mixed = repeated[:cut] + data + repeated[cut:]
    for needle in (repeated[:length], mixed[cut : cut + length], repeated[: length - 1] + b"\xff"):
        assert _find(mixed, needle) == mixed.find(needle)


@settings(max_examples=300, deadline=None)
@given(zeros=st.integers(0, 300), tail=st.binary(min_size=1, max_size=80), noise=st.binary(max_size=300),
       before=st.integers(0, 300))
def test_a_needle_that_starts_with_zeros_is_found_as_a_plain_search_finds_it(zeros, tail, noise, before):
    """A lexical vector is mostly zero bytes: _find looks from its first non-zero byte (a head of zeros matches
    almost everywhere in a file of such vectors), and still answers exactly what ``bytes.find`` does."""
    from memory.store.chroma_files import _find

    needle = b"\0" * zeros + tail
    data = b"\0" * before + noise + needle + noise + needle
    for hay in (data, data[: len(data) // 2], b"\0" * (zeros + 10)):
        assert _find(hay, needle) == hay.find(needle)


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(st.sampled_from(["id0", "id1", "vec0", "vec1", "noise", "v-"]), max_size=40),
       chunk=st.integers(40, 400), noise=st.binary(min_size=1, max_size=30))
def test_the_chunked_file_search_finds_what_a_whole_file_search_finds(tmp_path_factory, pieces, chunk, noise):
    """chroma_files.locate reads the file in overlapping pieces (bounded memory): every id occurrence and each vector's
    first occurrence come out as a search of the whole file in one piece gives them, at any piece size."""
    from memory.store.chroma_files import locate

    ids = [b"v-" + (f"{i:x}" * 32)[:32].encode() for i in range(2)]
    vecs = [bytes([7, 1, 2, 3]) * 40, bytes([7, 1, 2, 9]) * 40]
    parts = {"id0": ids[0], "id1": ids[1], "vec0": vecs[0], "vec1": vecs[1], "noise": noise, "v-": b"v-"}
    path = tmp_path_factory.mktemp("scan") / "file.bin"
    path.write_bytes(b"".join(parts[p] for p in pieces))
    whole = locate(path, ids + vecs, chunk=path.stat().st_size + 1)
    assert sorted(locate(path, ids + vecs, chunk=chunk)) == sorted(whole)
    data = path.read_bytes()
    assert sorted(at for n, at in whole if n in ids) == sorted(
        at for i in ids for at in range(len(data)) if data.startswith(i, at))
