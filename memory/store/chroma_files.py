"""What an embedded Chroma keeps on disk, and how an owner's collection leaves no byte behind.

Measured on chromadb 1.5 (tests/test_erase.py keeps these true):

* ``delete_collection`` deletes the collection's rows from ``chroma.sqlite3`` without SQLite's
  ``secure_delete``, so vectors, ids and metadata stay readable in the file's free space; and it
  leaves the collection's HNSW folder (``data_level0.bin``, ``index_metadata.pickle`` with the ids)
  on disk.
* Chroma's write-ahead log (``embeddings_queue``) is purged as the index catches up, again without
  ``secure_delete``: vectors of records that still exist linger in free pages.

So, for a data folder this engine creates, :func:`prepare_folder` creates ``chroma.sqlite3`` with
``auto_vacuum = FULL`` before Chroma first opens it (free pages are then removed at every commit,
whoever commits), and :func:`purge_collection` deletes an owner's rows itself with ``secure_delete``
on (content overwritten in place) before asking Chroma to delete the collection, then overwrites
and removes the collection's segment folders. Its cost is the owner's rows and files, not the store's.
Record ids given to Chroma are random (see ``TextStore.put_records``), so what an index page may
still hold as a divider key names no owner.

Traces can survive that in the unused space of pages still in use: Chroma's own transactions run without
``secure_delete``, and SQLite's b-tree rebalancing copies cells between pages without clearing what it
leaves behind (measured: the user's ids in a page or two of the index of ``embeddings``). Only a byte
search of the file finds those (:func:`traces`: one linear pass, vectorised, in pieces of bounded size, no lock
needed).
:func:`rewrite_rows_of_pages` clears them where they are, by rewriting the tens of rows of the pages that
hold them; :func:`rebuild` rewrites the whole file when that does not. The erasure runs the search
outside the write lock (memory/runtime/erase.py), so it lengthens the erasure, not anyone else's write.

This touches Chroma's own SQLite schema (tables ``segments``, ``embeddings``, ``embedding_metadata``,
``embeddings_queue``), pinned by requirements.txt; a schema it does not recognise makes the purge
raise rather than guess.
"""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from memory.core.errors import MemoryLabError

SQLITE_NAME = "chroma.sqlite3"
CHROMA_FILE_LOCK = threading.RLock()
"""Held around every call of an embedded Chroma client or collection (:class:`Serialized`) and every direct read or
write of Chroma's SQLite file (:class:`_connect`). Chroma's Rust bindings link their own copy of SQLite; this module
reads and rewrites the same file through Python's. POSIX locks never exclude two connections of one process, so
without this lock an erasure's rewrite or check could run inside another owner's Chroma write: the check read a
"malformed" file and the other writer's commit failed ("disk I/O error"; ``python -m bench.erase_cost --sizes
1000,5000``). Chroma's calls hold the interpreter lock for their whole length, so serialising them costs little."""


class Serialized:
    """An embedded Chroma client, or a collection of one, whose every method runs under :data:`CHROMA_FILE_LOCK`
    (collections it returns are wrapped the same way); attributes that are not methods are read through."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            with CHROMA_FILE_LOCK:
                out = value(*args, **kwargs)
            # by name: chromadb is imported in memory.store.chroma alone (tests/test_architecture.py)
            return Serialized(out) if type(out).__name__ == "Collection" else out
        return call


_BUSY_MS = 60_000


def prepare_folder(folder: Path) -> None:
    """Create ``folder/chroma.sqlite3`` with ``auto_vacuum = FULL`` if it does not exist yet (idempotent)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SQLITE_NAME
    if path.exists():
        return
    db = sqlite3.connect(str(path))
    try:
        db.execute("PRAGMA auto_vacuum = FULL")  # only takes effect before the first table exists
        db.execute("CREATE TABLE _mgl_init (x INTEGER)")
        db.execute("DROP TABLE _mgl_init")
        db.commit()
    finally:
        db.close()


@contextmanager
def opening(folder: Path) -> Iterator[None]:
    """Prepare ``folder`` and hold an exclusive lock on it while a client opens it: two processes opening a new
    folder at once would both run Chroma's schema migrations ("table collections already exists")."""
    prepare_folder(folder)
    with open(folder / ".open.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def auto_vacuum(folder: Path) -> int:
    """The ``auto_vacuum`` mode of ``folder/chroma.sqlite3`` (0 none, 1 full, 2 incremental)."""
    with _connect(folder) as db:
        return int(db.execute("PRAGMA auto_vacuum").fetchone()[0])


def enable_auto_vacuum(folder: Path) -> None:
    """Switch an existing ``chroma.sqlite3`` to ``auto_vacuum = FULL`` (a VACUUM: the migration's one-off cost)."""
    with _connect(folder) as db:
        db.execute("PRAGMA auto_vacuum = FULL")
        db.execute("VACUUM")


def segments(folder: Path, collection_id: str) -> list[tuple[str, str]]:
    """(segment id, scope) of one collection, from Chroma's catalogue."""
    with _connect(folder) as db:
        return [(r[0], r[1]) for r in db.execute("SELECT id, scope FROM segments WHERE collection = ?",
                                                 (collection_id,))]


def purge_collection(client: Any, folder: Path, name: str) -> int:
    """Delete one collection so that none of its rows or index files survive; returns its record count.

    ``folder`` is the embedded client's ``chroma`` folder. A collection that does not exist is a no-op (0).
    What Chroma's own page reuse may have left elsewhere in the file is :func:`traces`' to find.
    """
    try:
        collection = client.get_collection(name)
    except Exception:  # noqa: BLE001 - NotFoundError and its relatives: nothing to purge
        return 0
    count = collection.count()
    collection_id = str(collection.id)
    segs = segments(folder, collection_id)
    metadata_segments = [s for s, scope in segs if scope == "METADATA"]
    with _connect(folder) as db:
        db.execute("PRAGMA secure_delete = ON")
        db.execute("BEGIN IMMEDIATE")
        try:
            for seg in metadata_segments:
                ids = "SELECT id FROM embeddings WHERE segment_id = ?"
                db.execute(f"DELETE FROM embedding_metadata WHERE id IN ({ids})", (seg,))
                db.execute(f"DELETE FROM embedding_metadata_array WHERE id IN ({ids})", (seg,))
                db.execute("DELETE FROM embeddings WHERE segment_id = ?", (seg,))
            db.execute("DELETE FROM embeddings_queue WHERE topic LIKE ?", (f"%/{collection_id}",))
            _rewrite_log(db)
        except sqlite3.Error as exc:
            db.execute("ROLLBACK")
            raise MemoryLabError(f"cannot purge Chroma collection {name}: {exc} (unexpected Chroma schema?)") from exc
        db.execute("COMMIT")
    client.delete_collection(name)
    for seg, _ in segs:
        wipe_folder(folder / seg)
    return count


def rebuild(folder: Path) -> None:
    """Rebuild ``chroma.sqlite3`` (VACUUM): every page rewritten, no unused area kept. Its cost is the file's;
    run it only when :func:`traces` found a trace."""
    with _connect(folder) as db:
        db.execute("VACUUM")


TRACE_VECTORS = 8
"""How many of the collection's vectors the trace check looks for byte by byte (each a pass over the file);
every vector id is looked for, all in one pass."""
ID_BYTES = 34
"""A vector id's length: ``v-`` and 32 hex digits (``TextStore.vector_id``)."""


def traces(folder: Path, needles: list[bytes]) -> list[tuple[bytes, int]]:
    """Where ``chroma.sqlite3`` still holds ``needles`` (an erased collection's vector ids and vectors), as
    (needle, offset): every occurrence of every vector id (one vectorised pass over the file) and the first
    of up to TRACE_VECTORS of the others, each a byte search (:func:`locate`). A vector that is also in a
    live row of Chroma's log is another collection's (the same text embeds to the same vector): left out."""
    found = locate(Path(folder) / SQLITE_NAME, needles)
    vectors = {n for n, _ in found if not _VECTOR_ID.fullmatch(n)}
    if vectors:
        with _connect(folder) as db:
            shared = {v for v in vectors if db.execute("SELECT 1 FROM embeddings_queue WHERE vector = ? LIMIT 1",
                                                       (v,)).fetchone()}
        found = [(n, at) for n, at in found if n not in shared]
    return found


SCAN_CHUNK = 8 << 20
"""Bytes of the file held at once by :func:`locate` (plus a needle's length of overlap): the search's memory is this,
whatever the file's size (a whole 200 MB file read at once, with numpy's temporaries beside it, would be several
times that)."""


def locate(path: Path, needles: list[bytes], *, chunk: int = SCAN_CHUNK) -> list[tuple[bytes, int]]:
    """(needle, offset) of every occurrence in the file of the vector ids among ``needles`` (one vectorised
    pass) and of the first occurrence of up to TRACE_VECTORS of the others (raw vectors). The file is read in pieces
    of ``chunk`` bytes that overlap by the longest needle; a match is counted in the piece it starts in."""
    path = Path(path)
    ids = {n for n in needles if _VECTOR_ID.fullmatch(n)}
    vectors = [n for n in needles if not _VECTOR_ID.fullmatch(n)][:TRACE_VECTORS]
    if not path.exists() or not (ids or vectors):
        return []
    overlap = max([ID_BYTES] + [len(v) for v in vectors]) - 1
    out: list[tuple[bytes, int]] = []
    first: dict[bytes, int] = {}
    start, last = 0, False
    with open(path, "rb") as f:  # not a memory map: a commit of Chroma's that shrinks the file would fault it
        while not last:  # to the end as it is when read: pages a concurrent commit appends are read too
            f.seek(start)
            data = f.read(chunk + overlap)
            last = len(data) < chunk + overlap
            out += [(n, start + at) for n, at in _ids_in(data, ids) if at < chunk or last]
            for needle in (v for v in vectors if v not in first):
                at = _find(data, needle)
                if at >= 0 and (at < chunk or last):
                    first[needle] = start + at
            start += chunk
    return out + [(v, first[v]) for v in vectors if v in first]


def _ids_in(data: bytes, ids: set[bytes]) -> list[tuple[bytes, int]]:
    """(id, offset) of every occurrence of ``ids`` in ``data``: candidates "v-" found with numpy, the 8 bytes after
    them read in place and compared with the ids' own first 8, the few left compared in full."""
    if not ids or len(data) < ID_BYTES:
        return []
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = np.flatnonzero(raw[: len(raw) - ID_BYTES + 1] == ord("v"))
    starts = starts[raw[starts + 1] == ord("-")]
    heads = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))[starts + 2]
    wanted = np.sort(np.array([int.from_bytes(i[2:10], "little") for i in ids], dtype="<u8"))
    slot = np.minimum(np.searchsorted(wanted, heads), len(wanted) - 1)  # the few ids, not the many heads, sorted
    return [(data[s : s + ID_BYTES], s) for s in starts[wanted[slot] == heads].tolist() if data[s : s + ID_BYTES] in ids]


HEAD_BYTES = 64
"""A long needle is looked for by HEAD_BYTES of it, then compared whole where they occur: CPython's search
for a needle of hundreds of bytes (a vector: 4 x dim) is about three times slower than for 64 bytes
(measured: 11.6 vs 4.2 ms in 20 MB). The bytes looked for start at the needle's first non-zero byte: a sparse
vector (the lexical embedder's: 4,096 floats, a few of them non-zero) starts with zeros, which match at almost
every offset of a file of such vectors (measured: 40 s for 8 vectors in a 1.5 MB file, against 0.1 s)."""


def _find(data: bytes, needle: bytes) -> int:
    """``data.find(needle)``, by a distinctive part of the needle first (the same answer, faster for long needles)."""
    if len(needle) <= HEAD_BYTES:
        return data.find(needle)
    skip = min(len(needle) - len(needle.lstrip(b"\0")), len(needle) - HEAD_BYTES)
    head = needle[skip : skip + HEAD_BYTES]
    at = data.find(head, skip)
    while at >= 0 and not data.startswith(needle, at - skip):
        at = data.find(head, at + 1)
    return at - skip if at >= 0 else -1


def trace_pages(folder: Path, needles: list[bytes], found: list[tuple[bytes, int]] | None = None) -> dict[int, bytes]:
    """The pages of ``chroma.sqlite3`` that hold one of ``needles`` (live or in unused space): page number ->
    the page's bytes as read (no lock: a page a concurrent commit moves is found again by the next pass).
    ``found``: the :func:`traces` of a search just made (the file is not searched again)."""
    path = Path(folder) / SQLITE_NAME
    found = traces(folder, needles) if found is None else found
    if not found:
        return {}
    with open(path, "rb") as f:
        header = f.read(100)
        size = int.from_bytes(header[16:18], "big")
        size = 65536 if size == 1 else size
        pages = {}
        for page in sorted({at // size + 1 for _, at in found}):
            f.seek((page - 1) * size)
            pages[page] = f.read(size)
    return pages


def rewrite_rows_of_pages(folder: Path, pages: dict[int, bytes], *, skip: set[bytes]) -> int:
    """Rewrite, with ``secure_delete`` on, the rows of Chroma's ``embeddings`` table whose ids the given pages
    hold (other than ``skip``, the erased ids): each row is deleted and inserted again with the same values,
    in one transaction. A page whose rows all move out is freed and zeroed; one rebuilt from scratch keeps
    no stale bytes. Its cost is the few rows of those pages (tens per page), not the store's; returns how
    many rows were rewritten. Traces a page holds outside ``embeddings`` are left to :func:`rebuild`."""
    held = {m for data in pages.values() for m in _VECTOR_ID.findall(data)}
    ids = sorted(m.decode("ascii") for m in held - set(skip))
    if not ids:
        return 0
    with _connect(folder) as db:
        db.execute("PRAGMA secure_delete = ON")
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = []
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                rows += db.execute(f"SELECT * FROM embeddings WHERE embedding_id IN ({','.join('?' * len(part))})",
                                   part).fetchall()
            db.executemany("DELETE FROM embeddings WHERE id = ?", [(r[0],) for r in rows])
            if rows:
                db.executemany(f"INSERT INTO embeddings VALUES ({','.join('?' * len(rows[0]))})", rows)
        except sqlite3.Error as exc:
            db.execute("ROLLBACK")
            raise MemoryLabError(f"cannot rewrite Chroma rows: {exc} (unexpected Chroma schema?)") from exc
        db.execute("COMMIT")
    return len(rows)


_VECTOR_ID = re.compile(rb"v-[0-9a-f]{32}")


def _rewrite_log(db: sqlite3.Connection) -> None:
    """Rewrite Chroma's log table in place with ``secure_delete`` on: its rows are what Chroma has not purged
    yet (a few per collection), and its pages are where Chroma's own purges left deleted vectors in free
    space within pages still in use. Every row goes back unchanged, with the same ``seq_id``."""
    rows = db.execute("SELECT * FROM embeddings_queue ORDER BY seq_id").fetchall()
    db.execute("DELETE FROM embeddings_queue")
    if rows:
        marks = ",".join("?" * len(rows[0]))
        db.executemany(f"INSERT INTO embeddings_queue VALUES ({marks})", rows)


def wipe_folder(folder: Path) -> None:
    """Overwrite every file under ``folder`` with zeros, then remove them and the folder."""
    if not folder.is_dir():
        return
    for path in sorted(folder.rglob("*"), reverse=True):
        if path.is_file() and not path.is_symlink():
            size = path.stat().st_size
            with open(path, "r+b") as f:
                f.write(b"\0" * size)
                f.flush()
                os.fsync(f.fileno())
            path.unlink()
        elif path.is_dir():
            path.rmdir()
    folder.rmdir()


def rows_with_ids(folder: Path, vector_ids: list[str], segment_ids: list[str] | None = None) -> int:
    """How many of Chroma's rows (records and log) still carry one of these ids (the erasure check).

    With ``segment_ids`` (the collection's segments, read before it was deleted) the records are looked up
    through Chroma's (segment, id) index, at the ids' cost; without, every record row is read. The ids are
    keyed hashes given to one collection only, so no other segment can hold them."""
    if not vector_ids:
        return 0
    by_segment = "segment_id IN ({}) AND ".format(",".join("?" * len(segment_ids))) if segment_ids else ""
    with _connect(folder) as db:
        found = 0
        for start in range(0, len(vector_ids), 500):
            part = vector_ids[start : start + 500]
            marks = ",".join("?" * len(part))
            found += db.execute(f"SELECT COUNT(*) FROM embeddings WHERE {by_segment}embedding_id IN ({marks})",
                                [*(segment_ids or []), *part]).fetchone()[0]
            found += db.execute(f"SELECT COUNT(*) FROM embeddings_queue WHERE id IN ({marks})", part).fetchone()[0]
        return found


class _connect:
    """A short-lived connection to Chroma's SQLite file, waiting for Chroma's own transactions."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / SQLITE_NAME

    def __enter__(self) -> sqlite3.Connection:
        if not self.path.exists():
            raise MemoryLabError(f"no Chroma database at {self.path}")
        CHROMA_FILE_LOCK.acquire()  # no Chroma call of this process runs while this connection is open
        try:
            self.db = sqlite3.connect(str(self.path), timeout=_BUSY_MS / 1000, isolation_level=None)
        except BaseException:
            CHROMA_FILE_LOCK.release()
            raise
        return self.db

    def __exit__(self, *exc: object) -> None:
        try:
            self.db.close()
        finally:
            CHROMA_FILE_LOCK.release()
