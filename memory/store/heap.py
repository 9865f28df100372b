"""Keep stale heap bytes out of Chroma's HNSW files.

Chroma's hnswlib allocates its index buffers with ``malloc`` and never zeroes them, and it
persists them (``data_level0.bin``, ``length.bin``) including slots it has not filled
(chroma-core/chroma#7688, open for Chroma 1.5). Whatever the process freed before (a user's
text, a trace, another workspace's records) can end up on disk that way, and stay there after
that user's erasure. The lab's erasure check found exactly that: a user's texts inside
``data_level0.bin`` after the erase, on some runs and not others (heap layout decides).

:func:`zero_fill_allocations` asks glibc (``mallopt(M_PERTURB, 0xFF)``) to fill every new
allocation with zero bytes and every freed block with 0xFF, so a buffer Chroma never writes to
holds zeros, not old bytes. It is called before an embedded Chroma client opens a folder.

glibc's per-thread cache (tcache: blocks up to 1,032 bytes) skips that fill, and it can only be
turned off when a process starts. :data:`PROCESS_ENV` does both at start; use it for a
``chroma run`` server (another process) and, for full cover, for the lab's server too (docs/trust.md).
Other C libraries (musl, macOS) are left as they are; the erasure's disk scan still reports
what it finds.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
import threading
from typing import Sequence

log = logging.getLogger(__name__)

M_PERTURB = -6
"""glibc's mallopt parameter (malloc.h)."""
PERTURB_BYTE = 0xFF
"""Allocations get the complement of this byte (0x00); freed blocks get the byte itself."""
PROCESS_ENV = {"GLIBC_TUNABLES": f"glibc.malloc.perturb={PERTURB_BYTE}:glibc.malloc.tcache_count=0"}
"""Environment for a process that writes Chroma files (a ``chroma run`` server, the lab): the same fill,
and no tcache, read by glibc at start."""

SCRUB_ENV = {**PROCESS_ENV, "PYTHONMALLOC": "malloc"}
"""Environment for a long-lived server that holds users' texts (the MCP server): :data:`PROCESS_ENV`, and Python's
small objects from glibc's malloc too (not pymalloc's arenas, which glibc's fill never sees), so what a verified
erasure frees is overwritten rather than left in the process's memory."""

RESTARTED_ENV = "MEMORY_SCRUB_RESTARTED"
"""Set by :func:`restart_scrubbing` in the process it starts: one restart at most."""

_lock = threading.Lock()
_state: dict[str, bool] = {}


def restart_scrubbing(argv: Sequence[str]) -> None:
    """Replace this process with ``python ARGV...`` under :data:`SCRUB_ENV`, where that is possible and not done yet:
    on Linux with glibc, when none of its variables is set otherwise (a caller's own choice is kept). Returns when it
    does nothing; otherwise it does not return (the process goes on as the new program, with the same stdin, stdout
    and stderr)."""
    if os.environ.get(RESTARTED_ENV) or not sys.platform.startswith("linux") or not _is_glibc():
        return
    tunables, allocator = os.environ.get("GLIBC_TUNABLES"), os.environ.get("PYTHONMALLOC")
    if allocator not in (None, "malloc") or (tunables is not None and "glibc.malloc.perturb" not in tunables):
        return  # the caller chose otherwise
    if allocator == "malloc" and tunables is not None:
        return  # started so already (glibc rewrites GLIBC_TUNABLES in the environment it hands on: not compared)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv], {**os.environ, **SCRUB_ENV, RESTARTED_ENV: "1"})


def _is_glibc() -> bool:
    try:
        ctypes.CDLL(None).gnu_get_libc_version
    except (OSError, AttributeError, TypeError):
        return False
    return True


def zero_fill_allocations() -> bool:
    """Turn on glibc's allocation fill for this process (once); True when it is on."""
    with _lock:
        if "on" not in _state:
            _state["on"] = _mallopt_perturb()
        return _state["on"]


def _mallopt_perturb() -> bool:
    try:  # the process's own symbols, which hold its C library (ctypes.util.find_library would start ldconfig)
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        gnu = libc.gnu_get_libc_version  # glibc only: musl has mallopt but ignores M_PERTURB
    except (OSError, AttributeError, TypeError):
        log.warning("not glibc: Chroma's HNSW files may keep stale heap bytes (chroma#7688)")
        return False
    gnu.restype = ctypes.c_char_p
    ok = mallopt(ctypes.c_int(M_PERTURB), ctypes.c_int(PERTURB_BYTE)) == 1
    if not ok:
        log.warning("glibc %s refused mallopt(M_PERTURB)", gnu().decode())
    return ok


def return_freed_memory() -> bool:
    """Give the heap glibc keeps after large frees back to the system (``malloc_trim(0)``); True when it did.

    A server that drops many workspaces at once (the lab releasing idle labs) otherwise keeps its peak RSS:
    ``bench/room_load.py`` measured 1.6 GB held after 60 labs were released, 0.25 GB after a trim. Not glibc:
    nothing to do (False)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))
