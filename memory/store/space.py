"""Disk space as a first-class fault: writes are refused before they start when the data folder's disk cannot take
them and still keep a reserve, and a disk-full failure from SQLite or Chroma becomes one clear error.

Why a reserve: on a full disk SQLite and Chroma fail in ways that hide the cause ("cannot rollback - no transaction
is active", "Error purging logs") and an erasure cannot complete, because deleting needs space too (SQLite's
rollback journal, Chroma's log). So a write is refused while the disk would have less than the reserve left after
it (:data:`RESERVE_ENV`, default :data:`DEFAULT_RESERVE_MB`), and erasures, which do not check it, have that room
to delete in. Another program can still fill the disk to the last byte; then a failure is recognised by its cause
(:func:`is_disk_full`) and reported as :class:`~memory.core.errors.DiskFullError` all the same.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from memory.core.errors import DiskFullError

RESERVE_ENV = "MEMORY_DISK_RESERVE_MB"
DEFAULT_RESERVE_MB = 64.0
"""Free space a write must leave on the data folder's disk, in MB: the room erasures delete in."""
NEW_OWNER_BYTES = 2 * 1024 * 1024
"""What a new owner's collection takes on disk before its first vector (Chroma's HNSW files: about 1.6 MB at 384
dimensions)."""
PER_RECORD_COPIES = 4
"""A record's text and vector are written about this many times: the journal, the text store, Chroma's log and
its index (an estimate on the safe side)."""
_FULL_WORDS = ("database or disk is full", "no space left on device", "disk is full", "not enough space",
               "disk quota exceeded")


def reserve_bytes() -> int:
    """The reserve a write must leave free (:data:`RESERVE_ENV`; a value that is not a number >= 0 is an error)."""
    text = os.environ.get(RESERVE_ENV, "").strip()
    if not text:
        return int(DEFAULT_RESERVE_MB * 1024 * 1024)
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise DiskFullError(f"{RESERVE_ENV} must be a number of MB >= 0, got {text!r}")
    return int(value * 1024 * 1024)


def free_bytes(folder: Path) -> int:
    """Bytes an unprivileged writer may still use on the disk holding ``folder`` (its nearest existing parent)."""
    here = Path(folder)
    while not here.exists() and here != here.parent:
        here = here.parent
    stat = os.statvfs(here)
    return stat.f_bavail * stat.f_frsize


def estimate_bytes(texts_bytes: int, vectors: int, dim: int, new_owners: int) -> int:
    """What a write of ``vectors`` records holding ``texts_bytes`` of text may take on disk, on the safe side."""
    return PER_RECORD_COPIES * (texts_bytes + vectors * 4 * dim) + new_owners * NEW_OWNER_BYTES + 64 * 1024


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MB"


def full_message(folder: Path, *, what: str, free: int | None = None, needed: int | None = None) -> str:
    """One sentence: the disk is full, what was not done, and what to free."""
    free = free_bytes(folder) if free is None else free
    need = f"; it needs about {_mb(needed)} and keeps {_mb(reserve_bytes())} free for erasures" if needed else ""
    return (f"the disk holding the data folder {folder} is full ({_mb(free)} free{need}): {what}. Free space on "
            f"that disk (or point {'MEMORY_DATA_DIR'} at a larger one) and try again")


def check_space(folder: Path | None, needed: int, *, what: str) -> None:
    """Refuse (:class:`DiskFullError`) a write that would leave less than the reserve free; in memory, nothing."""
    if folder is None:
        return
    free = free_bytes(folder)
    if free - needed < reserve_bytes():
        raise DiskFullError(full_message(folder, what=what, free=free, needed=needed), folder=str(folder),
                            free_bytes=free, needed_bytes=needed)


def is_disk_full(exc: BaseException, folder: Path | None = None) -> bool:
    """Whether ``exc`` (or an exception it was raised from) is a disk-full failure: ENOSPC or EDQUOT, SQLite's
    SQLITE_FULL, Chroma's wording; or any failure while ``folder``'s disk has less than the reserve free (the
    failure a full disk causes can name something else, as "cannot rollback - no transaction is active" does)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DiskFullError):
            return True
        if isinstance(current, OSError) and current.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(current, sqlite3.Error) and getattr(current, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            return True
        if any(words in str(current).lower() for words in _FULL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    if folder is None:
        return False
    try:
        return free_bytes(folder) < reserve_bytes()
    except OSError:
        return False
