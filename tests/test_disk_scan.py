"""The erasure's disk scan: every needle looked for in one pass over each file (memory.core.bytesearch), with the
answers of a search of each whole file for each needle (issue 28, "Erasure in seconds"). No model: vectors come
from the lexical embedder (sparse, mostly zero bytes: the hard case for an anchored search) or from numpy."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memory import LexicalEmbedder, MemoryConfig, MemoryManager, Message, Owner, StoreLocation
from memory.core.bytesearch import ANCHOR_BYTES, NeedleSearch, anchor_offset
from memory.runtime import erase as erase_module
from memory.runtime.erase import files_holding, scan_for_bytes

T0 = 1_780_000_000.0


def scan_each(folder: Path, needles: list[str] | list[bytes]) -> list[tuple[Path, str]]:
    """The disk scan as it was before issue 28 (each file read whole, each needle searched in it apart): the
    reference the one-pass scan must agree with."""
    encoded = [(n if isinstance(n, str) else f"<{len(n)} bytes>", n.encode("utf-8") if isinstance(n, str) else n)
               for n in needles]
    hits: list[tuple[Path, str]] = []
    for path in sorted(Path(folder).rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            hits += [(path, name) for name, b in encoded if b in data]
    return hits


def lexical_vectors(texts: list[str]) -> list[bytes]:
    return [v.tobytes() for v in LexicalEmbedder().embed(texts)]


def vector_id() -> bytes:
    return b"v-" + uuid.uuid4().hex.encode("ascii")


def test_a_needle_across_a_piece_boundary_is_found(tmp_path):
    """A file is read in pieces: a needle that starts in one and ends in the next is found, wherever it is cut,
    short or long (a long one is looked for by its anchor, which may lie in either piece)."""
    chunk = 256
    rng = np.random.default_rng(1)
    long_needle = lexical_vectors(["a private note about the Lisbon office"])[0][:600]
    for needle in (b"secret", vector_id(), rng.integers(0, 256, 300, dtype=np.uint8).tobytes(), long_needle):
        search = NeedleSearch([needle])
        for cut in range(1, min(len(needle), chunk)):  # bytes of the needle in the first piece
            path = tmp_path / "f.bin"
            path.write_bytes(b"\0" * (chunk - cut) + needle + b"\0" * 50)
            assert search.in_file(path, chunk=chunk) == {needle}, (len(needle), cut)


def test_each_kind_of_needle_is_found_in_a_file_that_holds_only_it(tmp_path):
    """A text (UTF-8, not ASCII), a vector id and a vector's bytes (sparse and dense), each alone in one file among
    other owners' bytes: each is reported in its own file and nowhere else."""
    text = "Guest's private note: the door code is 4417 — don't share"
    ident = vector_id().decode("ascii")
    sparse = lexical_vectors([text])[0]
    dense = np.random.default_rng(2).standard_normal(384).astype(np.float32).tobytes()
    noise = b"".join(lexical_vectors([f"other owner note {i}" for i in range(20)]))
    plants = {"text.bin": text.encode("utf-8"), "id.bin": ident.encode("ascii"), "sparse.bin": sparse,
              "dense.bin": dense, "clean.bin": b""}
    for name, planted in plants.items():
        (tmp_path / name).write_bytes(noise[:30_000] + planted + noise[30_000:])
    texts = scan_for_bytes(tmp_path, [text, ident])
    vectors = scan_for_bytes(tmp_path, [sparse, dense])
    assert texts == scan_each(tmp_path, [text, ident]) == [(tmp_path / "id.bin", ident), (tmp_path / "text.bin", text)]
    assert [p.name for p, _ in vectors] == ["dense.bin", "sparse.bin"]
    assert vectors == scan_each(tmp_path, [sparse, dense])


def test_nothing_is_reported_for_a_clean_folder(tmp_path):
    """A folder with other owners' texts and vectors, and, for every needle, its anchor alone and the needle with
    its last byte changed: no needle is reported (an anchor's occurrence is checked against the whole needle)."""
    texts = [f"Guest remembers the meeting number {i} with the Lisbon team." for i in range(30)]
    needles = [t.encode("utf-8") for t in texts] + [vector_id() for _ in range(30)] + lexical_vectors(texts)
    others = lexical_vectors([f"Alice remembers the meeting number {i}" for i in range(30)])
    near = [n[anchor_offset(n) : anchor_offset(n) + ANCHOR_BYTES] for n in needles if len(n) > ANCHOR_BYTES]
    near += [n[:-1] + bytes([n[-1] ^ 1]) for n in needles]
    (tmp_path / "sub").mkdir()
    (tmp_path / "others.bin").write_bytes(b"".join(others))
    (tmp_path / "sub" / "near.bin").write_bytes(b"|".join(near))
    (tmp_path / "empty.bin").write_bytes(b"")
    assert scan_for_bytes(tmp_path, needles) == [] == scan_each(tmp_path, needles)
    assert scan_for_bytes(tmp_path, needles, chunk=100) == []
    assert scan_for_bytes(tmp_path / "missing", needles) == [] and scan_for_bytes(tmp_path, []) == []


def test_the_one_pass_scan_answers_as_a_search_per_needle_does(tmp_path):
    """A folder of files of others' bytes with the user's canaries planted in some (across piece boundaries
    too): the scan reports what searching each whole file for each needle reports, at any piece size."""
    rng = np.random.default_rng(7)
    texts = [f"Guest's note {i}: {uuid.uuid4().hex[:8]} in Porto" for i in range(40)]
    mine = [t.encode("utf-8") for t in texts] + [vector_id() for _ in range(40)] + lexical_vectors(texts)
    mine += [v.astype(np.float32).tobytes() for v in rng.standard_normal((10, 384))]
    background = lexical_vectors([f"Alice's note {i} in Porto" for i in range(60)])
    for f in range(12):
        parts = list(rng.choice(len(background), 8))
        body = [background[i] for i in parts]
        for n in rng.choice(len(mine), int(rng.integers(0, 4)), replace=False):
            body.insert(int(rng.integers(0, len(body) + 1)), mine[n])
        (tmp_path / f"file{f}.bin").write_bytes(b"".join(body))
    expected = scan_each(tmp_path, mine)
    assert expected, "some canaries are planted"
    for chunk in (1000, 16_385, 1 << 20):
        assert scan_for_bytes(tmp_path, mine, chunk=chunk) == expected


PIECES = st.sampled_from(["n0", "n1", "n2", "n3", "head", "zeros", "noise"])


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(PIECES, max_size=30), chunk=st.integers(1, 300), noise=st.binary(max_size=40),
       zeros=st.integers(0, 200), tail=st.binary(min_size=1, max_size=30))
def test_found_needles_are_those_a_plain_search_finds(tmp_path_factory, pieces, chunk, noise, zeros, tail):
    """Needles short and long, one a part of another, one mostly zeros (whose anchor repeats in the data), the empty
    one: whatever the data and the piece size, a file's answer is ``{n for n in needles if n in data}``."""
    sparse = b"\0" * zeros + tail + b"\0" * 70
    needles = [b"abcdef", b"cdefgh" * 20, sparse, sparse[zeros:], b"abcdef"]
    parts = {"n0": needles[0], "n1": needles[1], "n2": sparse, "n3": needles[3], "noise": noise,
             "head": needles[1][:ANCHOR_BYTES], "zeros": b"\0" * 90}
    data = b"".join(parts[p] for p in pieces)
    path = tmp_path_factory.mktemp("scan") / "file.bin"
    path.write_bytes(data)
    expected = {n for n in needles if n in data}
    search = NeedleSearch(needles)
    assert search.in_bytes(data) == expected
    assert search.in_file(path, chunk=chunk) == expected
    assert NeedleSearch(needles + [b""]).in_file(path, chunk=chunk) == expected | {b""}


def _two_owners(folder: Path) -> tuple[MemoryManager, str]:
    """A guest with six private notes and a text alice also has (the lexical embedder: no model)."""
    mm = MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation(data_dir=folder),
                       workspace="disk-scan")
    shared = "We both work from the Lisbon office on Fridays."
    for i in range(6):
        mm.add(Message(tenant_id="acme", user_id="guest", content=f"Guest private note {i}: CANARY-{i}-scan",
                       id=f"g{i}", timestamp=T0 + i))
    for user in ("guest", "alice"):
        mm.add(Message(tenant_id="acme", user_id=user, content=shared, id=f"{user}-shared", timestamp=T0 + 10))
    return mm, shared


def test_the_disk_check_counts_what_it_did_when_shared_texts_were_left_out_first(tmp_path):
    """Before an erasure (an audit), the disk check finds the user's data, less what another owner also holds: the
    count the check made before issue 28, which left texts held by others (and their vectors) out of the search;
    it now looks them up only among what the scan found."""
    mm, shared = _two_owners(tmp_path / "d")
    evidence = erase_module.Evidence.collect(mm, Owner("acme", "guest"))
    assert shared in evidence.texts
    checks = {c.name: c for c in erase_module.verify_erased(mm, Owner("acme", "guest"), evidence=evidence,
                                                            disk_scan=True)}
    unshared = [t for t in evidence.texts if t != shared and len(t.encode("utf-8")) >= erase_module.MIN_CANARY_BYTES]
    before = [t.encode("utf-8") for t in unshared] + [v.encode("ascii") for v in evidence.vector_ids]
    before += [raw for text, raw in evidence.vectors if text != shared]
    assert checks["disk"].remaining == len(scan_each(tmp_path / "d", before)) > 0
    assert "found that another owner also holds (no leak)" in checks["disk"].detail
    mm.store.drop()


def test_a_vector_found_is_no_leak_only_if_every_text_it_embeds_is_also_another_owners():
    """Two texts with one vector (the lexical embedder ignores case and punctuation): the vector found on disk is
    counted unless both texts are another owner's too; a vector id always is."""
    texts, vector, ident = ["hello there friend", "Hello there, friend!"], b"\x01" * 16, "v-" + "0" * 32
    canaries = erase_module.DiskCanaries.of(erase_module.Evidence(texts, None, [ident], [(t, vector) for t in texts]))
    assert sorted(canaries.needles()) == sorted([t.encode() for t in texts] + [ident.encode(), vector])
    assert not canaries.also_others(vector, {texts[0]}) and canaries.also_others(vector, set(texts))
    assert canaries.also_others(texts[0].encode(), {texts[0]}) and not canaries.also_others(texts[1].encode(), {texts[0]})
    assert not canaries.also_others(ident.encode(), set(texts))


def test_an_erasure_scans_the_disk_once_after_clearing_chromas_file(tmp_path, monkeypatch):
    """When the erasure clears a trace in Chroma's file, its disk scan runs once, on the folder as the erasure
    leaves it (it ran twice before issue 28: once before the clearing, again after); a text another owner also
    holds is found on disk (alice's copy) and not counted."""
    mm, shared = _two_owners(tmp_path / "d")
    planted = mm.store.texts.vector_ids(Owner("acme", "guest"))[0]
    db = sqlite3.connect(str(tmp_path / "d" / "chroma" / "chroma.sqlite3"), isolation_level=None)
    db.execute("PRAGMA secure_delete = OFF")
    db.execute("CREATE TABLE planted (n INTEGER, x TEXT)")
    db.executemany("INSERT INTO planted VALUES (?, ?)", [(i, f"filler {i}") for i in range(20)])
    db.execute("INSERT INTO planted VALUES (99, ?)", (f"old log bytes {planted}",))
    db.execute("DELETE FROM planted WHERE n = 99")  # the deleted cell's bytes stay in a page still in use
    db.close()
    scans = []

    def counted(folder, needles, **kw):
        scans.append(len(needles))
        return files_holding(folder, needles, **kw)

    monkeypatch.setattr(erase_module, "files_holding", counted)
    report = mm.erase_user(tenant_id="acme", user_id="guest", disk_scan=True)
    assert report.ok, report.to_dict()
    assert report.removed["chroma_pages_rewritten"] + report.removed["chroma_rebuilt"] >= 1
    assert len(scans) == 1 and report.paths[-1].name == "disk" and report.paths[-1].remaining == 0
    assert "another owner also holds (no leak)" in report.paths[-1].detail
    assert scan_for_bytes(tmp_path / "d", ["CANARY-0-scan", planted]) == []
    assert scan_for_bytes(tmp_path / "d", [shared])  # alice's copy stays
    mm.store.drop()
