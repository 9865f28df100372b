"""Version chains and retirements: the lifecycle changes of stored records, as values.

A caller says what happens to some records of one owner (:class:`Retire` one, :class:`Supersede` one by another) and
:meth:`memory.runtime.manager.MemoryManager.revise` reads them, applies :func:`revised` and writes the changed records
in one journaled write (with log entries of the caller's, if any). The version chains and retirements a caller asks
for are set here (``is_deprecated``, ``archived``, ``version``, ``supersedes``, ``superseded_by``); the runtime's own
passes set theirs (expiry and the forgetting pass: memory/runtime/lifecycle.py) and the write path's ``update``
decision chains the facts it writes itself (memory/write/ingest.py). An adapter maps its own operations onto these
changes and writes no such field (``tests/test_architecture.py`` checks).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Union

from memory.core.schema import MemoryRecord, validate_identifier


@dataclass(frozen=True)
class Retire:
    """Take one record out of recall: deprecated (every governed read excludes it), and with ``archive`` also moved to
    cold storage (no read but an audit's or an erasure's returns it)."""

    memory_id: str
    archive: bool = False


@dataclass(frozen=True)
class Supersede:
    """Replace record ``old_id`` by record ``new_id`` (both stored): the old one is deprecated and the new one counts
    the versions (``version`` = the old one's + 1). With ``link`` (default) the chain is written both ways
    (``new.supersedes`` = old, ``old.superseded_by`` = new: :func:`memory.runtime.lifecycle.version_chain` follows it);
    without, the new record only counts the versions (for an old record that is deleted next, which no chain may name).

    A new record that already supersedes another (the write path chained it itself) keeps its chain: the old record is
    only deprecated."""

    old_id: str
    new_id: str
    link: bool = True


Change = Union[Retire, Supersede]
"""One lifecycle change of :meth:`MemoryManager.revise`."""


def check_changes(changes: Iterable[Change]) -> list[Change]:
    """The changes as a list, each id a valid identifier; TypeError (naming the item) for anything else."""
    out: list[Change] = []
    for i, change in enumerate(changes):
        if isinstance(change, Retire):
            validate_identifier(change.memory_id, f"changes[{i}].memory_id")
        elif isinstance(change, Supersede):
            validate_identifier(change.old_id, f"changes[{i}].old_id")
            validate_identifier(change.new_id, f"changes[{i}].new_id")
            if change.old_id == change.new_id:
                raise ValueError(f"changes[{i}]: a record cannot supersede itself ({change.old_id!r})")
        else:
            raise TypeError(f"changes[{i}] must be a Retire or a Supersede, got {type(change).__name__}")
        out.append(change)
    return out


def touched(changes: Iterable[Change]) -> list[str]:
    """The ids of the records the changes read (each once, in order)."""
    ids: list[str] = []
    for change in changes:
        ids += [change.memory_id] if isinstance(change, Retire) else [change.old_id, change.new_id]
    return list(dict.fromkeys(ids))


def revised(records: Mapping[str, MemoryRecord], changes: Iterable[Change]) -> dict[str, MemoryRecord]:
    """The records the changes change, changed (memory_id -> record), applied in order: a change sees the ones
    before it. ``records``: the stored records by id; a change naming a record that is not there is skipped (an
    erasure or a delete came first). Pure: nothing is read or written."""
    current = dict(records)
    changed: dict[str, MemoryRecord] = {}

    def keep(record: MemoryRecord) -> None:
        current[record.memory_id] = changed[record.memory_id] = record

    for change in changes:
        if isinstance(change, Retire):
            old = current.get(change.memory_id)
            if old is not None:
                keep(replace(old, is_deprecated=True, archived=old.archived or change.archive))
            continue
        old, new = current.get(change.old_id), current.get(change.new_id)
        if old is None or new is None:
            continue
        if new.supersedes:  # chained already (by the write path): the old one only leaves recall
            keep(replace(old, is_deprecated=True))
        elif change.link:
            keep(replace(old, is_deprecated=True, superseded_by=new.memory_id))
            keep(replace(new, version=old.version + 1, supersedes=old.memory_id))
        else:
            keep(replace(old, is_deprecated=True))
            keep(replace(new, version=old.version + 1))
    return changed
