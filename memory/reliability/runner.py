"""The reliability report: every check of this package in a fresh temp folder, in the order of :data:`STEPS`.

``python -m memory reliability [--scale N] [--json]`` (memory/tools/cli.py) runs :func:`run_report` at a chosen scale
on real parts (Chroma in a temp data folder, the chosen embedder) and reports how many cases each check tried and
what it found. The command exits non-zero when any check finds a leak, a canary byte, a lost or duplicated record, or
an unrejected hostile input.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

from memory.core.errors import MemoryLabError
from memory.embed.embedders import Embedder
from memory.reliability import erase_kills as erasures
from memory.reliability import inputs, shared, writes
from memory.reliability import store as faults
from memory.reliability.check import Check, Progress, Report
from memory.reliability.engine import check_async_kills, check_crashes, check_erasure, check_hostile, check_isolation

STEPS = ("isolation", "erasure", "hostile_input", "crash_safety", "async_kills", "write_failure", "disk_full",
         "lifecycle_races", "shared_folder", "workspace_names", "chroma_files", "messages", "poison", "hostile_inputs", "shared_erase",
         "server_clients", "erase_kills")
"""The report's checks, in the order they run."""
QUICK = ("isolation", "erasure", "hostile_input", "crash_safety", "async_kills", "write_failure", "disk_full",
         "workspace_names", "chroma_files", "messages", "poison")
"""The checks that take seconds at scale 1 (tests/test_reliability.py runs them); the others take minutes and have
tests of their own (test_faults.py, test_crash_safety.py, test_hostile_cli.py, test_erase_pending.py, ...)."""


def checks_named(value: str) -> tuple[str, ...]:
    """The checks a comma-separated list names (``quick`` for :data:`QUICK`), in report order; MemoryLabError naming
    an unknown one."""
    names: set[str] = set()
    for part in (p.strip() for p in value.split(",")):
        if part == "quick":
            names.update(QUICK)
        elif part in STEPS:
            names.add(part)
        elif part:
            raise MemoryLabError(f"unknown reliability check {part[:40]!r} (use quick or {', '.join(STEPS)})")
    return tuple(name for name in STEPS if name in names)


def run_report(embedder: Embedder, *, scale: int = 1, progress: Progress | None = None,
               only: tuple[str, ...] | None = None) -> Report:
    """Run every check (or those named in ``only``) in fresh temp folders; ``progress(name)`` is called before each."""
    if scale < 1:
        raise MemoryLabError(f"scale must be >= 1, got {scale}")
    checks = []
    steps: list[tuple[str, Callable[[Path], Check]]] = [
        ("isolation", lambda d: check_isolation(embedder, scale, d)),
        ("erasure", lambda d: check_erasure(embedder, scale, d)),
        ("hostile_input", lambda d: check_hostile(embedder, scale, d)),
        ("crash_safety", lambda d: check_crashes(scale, d, rounds=2 + 2 * scale)),
        ("async_kills", lambda d: check_async_kills(scale, d, rounds=2 + 2 * scale)),
        ("write_failure", lambda d: faults.check_write_failure(embedder, scale, d)),
        ("disk_full", lambda d: faults.check_disk_full(embedder, scale, d)),
        ("lifecycle_races", lambda d: faults.check_lifecycle_races(embedder, scale, d)),
        ("shared_folder", lambda d: faults.check_shared_folder(embedder, scale, d)),
        ("workspace_names", lambda d: faults.check_workspace_names(embedder, scale, d)),
        ("chroma_files", lambda d: faults.check_chroma_files(embedder, scale, d)),
        ("messages", lambda d: writes.check_messages(embedder, scale, d)),
        ("poison", lambda d: writes.check_poison(embedder, scale, d)),
        ("hostile_inputs", lambda d: inputs.check_inputs(embedder, scale, d)),
        ("shared_erase", lambda d: shared.check_shared_erase(embedder, scale, d)),
        ("server_clients", lambda d: shared.check_server_clients(embedder, scale, d)),
        ("erase_kills", lambda d: erasures.check_erase_kills(embedder, scale, d)),
    ]
    assert [name for name, _ in steps] == list(STEPS)
    unknown = set(only or ()) - set(STEPS)
    if unknown:
        raise MemoryLabError(f"unknown reliability checks: {', '.join(sorted(unknown))}")
    for name, fn in steps:
        if only is not None and name not in only:
            continue
        if progress:
            progress(name)
        with tempfile.TemporaryDirectory(prefix=f"mgl-{name}-") as tmp:
            checks.append(fn(Path(tmp) / "data"))
    return Report(scale=scale, embedder=embedder.name, checks=checks)
