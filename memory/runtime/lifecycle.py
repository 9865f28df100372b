"""Lifecycle of stored facts: expiry, version chains, heat, and the forgetting pass into cold storage.

* ``valid_until`` is part of every governed read filter (:func:`memory.store.chroma.scope_where`,
  scope ``active``): :func:`set_valid_until` sets it; an expired fact is never recalled.
* Superseded facts are deprecated, so never recalled; :func:`version_chain` (``MemoryManager.history``) shows
  every version of a fact, oldest first.
* Recall reinforces what it uses (``MemoryManager.retrieve`` bumps ``access_count`` and
  ``last_accessed_at``: the A6 article's "heat rebound").
* :func:`forget` archives facts whose decayed score (:func:`heat`) has stayed under a
  floor for N days. Archived records are cold storage: the ``active`` and ``hot`` scopes
  exclude them (recall never reads them); audits and erasure use scope ``all`` and do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from memory.core.config import MemoryConfig
from memory.core.errors import InputError
from memory.core.owner import Owner
from memory.runtime.recall import DAY, FREQUENCY_SATURATION
from memory.core.schema import FOREVER, MemoryRecord, iso, parse_time, validate_identifier

if TYPE_CHECKING:
    from memory.runtime.manager import MemoryManager

DEFAULT_FLOOR = 0.05
"""Decayed score under which a fact counts as cold."""
DEFAULT_DAYS = 90
"""How long a fact must have stayed cold before the forgetting pass archives it (the A6 article's 90 days)."""
MAX_CHAIN = 1000


def weight(record: MemoryRecord) -> float:
    """What a fact is worth before decay: max(importance, access frequency), in [0, 1]."""
    frequency = min(1.0, math.log1p(record.access_count) / math.log1p(FREQUENCY_SATURATION))
    return max(record.importance, frequency)


def heat(record: MemoryRecord, at: float, *, decay_rate: float) -> float:
    """Decayed score at ``at``: weight * exp(-decay_rate * days since the last access (or creation))."""
    age_days = max(0.0, (at - max(record.last_accessed_at, record.created_at)) / DAY)
    return weight(record) * math.exp(-decay_rate * age_days)


def cold_since(record: MemoryRecord, *, decay_rate: float, floor: float) -> float:
    """The time the fact's heat fell under ``floor`` and stayed there (heat only falls between accesses).

    FOREVER when it never does (no decay and a weight at or above the floor).
    """
    start = max(record.last_accessed_at, record.created_at)
    w = weight(record)
    if w < floor:
        return start
    if decay_rate <= 0 or floor <= 0:
        return FOREVER
    return start + math.log(w / floor) / decay_rate * DAY


@dataclass(frozen=True)
class ForgetReport:
    """What one forgetting pass archived."""

    tenant_id: str
    user_id: str
    as_of: float
    """The time the pass was evaluated at (POSIX seconds)."""
    floor: float
    days: float
    checked: int
    """Records looked at (everything not already archived)."""
    archived: list[str]
    """memory_ids moved to cold storage by this pass."""

    def to_dict(self) -> dict[str, Any]:
        return {"tenant_id": self.tenant_id, "user_id": self.user_id, "as_of": iso(self.as_of), "floor": self.floor,
                "days": self.days, "checked": self.checked, "archived": list(self.archived)}


def forget(
    manager: "MemoryManager", *, tenant_id: str, user_id: str, as_of: float | str | None = None,
    floor: float = DEFAULT_FLOOR, days: float = DEFAULT_DAYS, decay_rate: float | None = None,
) -> ForgetReport:
    """Archive the user's facts whose heat has stayed under ``floor`` for at least ``days`` days.

    ``decay_rate`` defaults to the manager's config. Archived records keep their text and
    vector (audits and erasure still see them); recall no longer does.
    """
    owner = Owner.of(tenant_id, user_id)
    floor = _number(floor, "floor", 0.0, 1.0)
    days = _number(days, "days", 0.0, math.inf)
    low, high = MemoryConfig.range_of("decay_rate")
    rate = manager.config.decay_rate if decay_rate is None else _number(decay_rate, "decay_rate", low, high)
    now = manager.clock() if as_of is None else parse_time(as_of, "as_of")
    with manager.writing():  # read and write under the write lock: an erasure is never undone by this pass
        records = manager.store.records(owner, scope="hot")
        cold = [r for r in records if now - cold_since(r, decay_rate=rate, floor=floor) >= days * DAY]
        if cold:
            manager.store.update([replace(r, archived=True) for r in cold])
            manager.store.audit("forget", owner, actor="lifecycle",
                                detail={"archived": len(cold), "floor": floor, "days": days})
    return ForgetReport(owner.tenant_id, owner.user_id, now, floor, days, len(records), [r.memory_id for r in cold])


def set_valid_until(
    manager: "MemoryManager", memory_id: str, *, tenant_id: str, user_id: str, valid_until: float | str
) -> MemoryRecord:
    """Give a fact an expiry time; from then on governed recall no longer returns it."""
    memory_id = validate_identifier(memory_id, "memory_id")
    owner = Owner.of(tenant_id, user_id)
    until = parse_time(valid_until, "valid_until")
    with manager.writing():  # read and write under the write lock (a concurrent erasure wins: KeyError)
        record = manager.get_record(memory_id, **owner.args)
        updated = replace(record, valid_until=until)
        manager.store.update([updated])
    return updated


def _number(value: Any, name: str, low: float, high: float) -> float:
    """``value`` as a float in [low, high] (high may be inf); bools, nan and other types raise InputError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{name} must be a number in [{low:g}, {high:g}], got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        raise InputError(f"{name} must be a number in [{low:g}, {high:g}], got a number too large") from None
    if math.isnan(number) or not low <= number <= high:
        raise InputError(f"{name} must be a number in [{low:g}, {high:g}], got {number!r}")
    return number


def version_chain(manager: "MemoryManager", memory_id: str, *, tenant_id: str, user_id: str) -> list[MemoryRecord]:
    """Every version of the fact ``memory_id`` belongs to, oldest first (follows supersedes / superseded_by):
    :meth:`MemoryManager.history`.

    Only the given (tenant, user)'s records are read; KeyError when it has no such record.
    """
    return manager.history(memory_id, tenant_id=tenant_id, user_id=user_id)


def chain_of(manager: "MemoryManager", record: MemoryRecord, owner: Owner) -> list[MemoryRecord]:
    """Every version of the fact ``record`` (one of ``owner``'s) belongs to, oldest first: the records it supersedes
    and those that supersede it, read from the owner's own records only."""
    seen = {record.memory_id}
    older = _walk(manager, record, "supersedes", seen, owner)
    newer = _walk(manager, record, "superseded_by", seen, owner)
    return list(reversed(older)) + [record] + newer


def _walk(manager: "MemoryManager", start: MemoryRecord, link: str, seen: set[str], owner: Owner) -> list[MemoryRecord]:
    """Follow ``link`` (supersedes or superseded_by) from ``start`` within one owner, stopping at cycles."""
    out: list[MemoryRecord] = []
    current = start
    while getattr(current, link) and len(seen) < MAX_CHAIN:
        next_id = getattr(current, link)
        found = manager.store.get([next_id], owner=owner)
        if next_id not in found or next_id in seen:
            break
        current = found[next_id]
        seen.add(next_id)
        out.append(current)
    return out
