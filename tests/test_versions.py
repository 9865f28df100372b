"""The runtime's public lifecycle calls (issue 52): supersede, retire, history and revise (memory/runtime/versions.py),
what an adapter maps its own operations onto instead of writing record fields itself. Real in-memory Chroma with the
lexical embedder: no model."""

import uuid

import pytest

from memory import IdentifierError, MemoryManager, MemoryRecord, Message, Retire, StoreLocation, Supersede
from memory.runtime.versions import revised

T0 = 1_780_000_000.0
ALICE = {"tenant_id": "acme", "user_id": "alice"}
BOB = {"tenant_id": "acme", "user_id": "bob"}


@pytest.fixture
def mm(lexical):
    manager = MemoryManager(embedder=lexical, location=StoreLocation(), workspace=f"t-{uuid.uuid4().hex[:10]}")
    yield manager
    manager.close()


def _add(mm, owner, *texts):
    return [mm.add(Message(content=t, id=f"m{i}", timestamp=T0 + i, **owner)).memory_id for i, t in enumerate(texts)]


def _rec(mid, **fields):
    return MemoryRecord(memory_id=mid, tenant_id="acme", user_id="alice", content=mid, **fields)


def test_revised_applies_changes_in_order_and_skips_what_is_gone():
    stored = {"a": _rec("a"), "b": _rec("b"), "c": _rec("c", version=3)}
    out = revised(stored, [Supersede("c", "a"), Retire("b"), Retire("b", archive=True), Supersede("x", "a")])
    assert (out["c"].is_deprecated, out["c"].superseded_by) == (True, "a")
    assert (out["a"].version, out["a"].supersedes, out["a"].is_deprecated) == (4, "c", False)
    assert (out["b"].is_deprecated, out["b"].archived) == (True, True)
    assert stored["a"].version == 1 and not stored["b"].is_deprecated  # pure: the given records are not changed
    unlinked = revised(stored, [Supersede("c", "a", link=False)])
    assert (unlinked["a"].version, unlinked["a"].supersedes, unlinked["c"].superseded_by) == (4, "", "")
    chained = revised({"a": _rec("a", supersedes="z"), "c": _rec("c")}, [Supersede("c", "a")])
    assert set(chained) == {"c"} and chained["c"].is_deprecated and not chained["c"].superseded_by  # keeps its chain


def test_supersede_writes_the_chain_and_history_reads_it(mm):
    old, new = _add(mm, ALICE, "the budget is 500000 yuan", "the budget is 300000 yuan")
    changed = mm.supersede(old, new, **ALICE)
    assert {r.memory_id for r in changed} == {old, new}
    chain = mm.history(new, **ALICE)
    assert [(r.memory_id, r.version, r.is_deprecated) for r in chain] == [(old, 1, True), (new, 2, False)]
    assert chain[0].superseded_by == new and chain[1].supersedes == old
    assert [r.memory_id for r in mm.records(**ALICE, scope="active")] == [new]  # the old one leaves recall
    governed = mm.retrieve("budget yuan", **ALICE, as_of=T0 + 10, reinforce=False).governed
    assert old not in [h.record.memory_id for h in governed]


def test_retire_deprecates_and_archives(mm):
    kept, retired, archived = _add(mm, ALICE, "lives in Hangzhou", "likes green tea", "works at a bank")
    assert mm.retire(retired, **ALICE).is_deprecated
    record = mm.retire(archived, **ALICE, archive=True)
    assert record.is_deprecated and record.archived
    assert [r.memory_id for r in mm.records(**ALICE, scope="active")] == [kept]
    assert {r.memory_id for r in mm.records(**ALICE, scope="hot")} == {kept, retired}  # the archive is cold
    assert len(mm.records(**ALICE, scope="all")) == 3  # still audited and erasable


def test_another_users_record_is_neither_read_nor_changed(mm):
    [mine] = _add(mm, ALICE, "my pin is 4321")
    [theirs] = _add(mm, BOB, "bob's note")
    with pytest.raises(KeyError, match="no record"):
        mm.retire(mine, **BOB)
    with pytest.raises(KeyError, match="no record"):
        mm.supersede(mine, theirs, **ALICE)
    with pytest.raises(KeyError):
        mm.history(mine, **BOB)
    assert mm.revise([Retire(mine)], **BOB) == []  # revise skips what the user does not have
    assert not mm.get_record(mine, **ALICE).is_deprecated and not mm.get_record(theirs, **BOB).is_deprecated


def test_revise_writes_changes_and_log_together_and_nothing_for_an_erased_user(mm):
    a, b = _add(mm, ALICE, "first fact here", "second fact here")
    epochs = mm.epochs([("acme", "alice")])
    mm.revise([Supersede(a, b)], **ALICE, log=[("item-1", T0, {"kind": "test.entry", "note": "one"})], epochs=epochs)
    assert [e["note"] for e in mm.decisions(**ALICE) if e.get("kind") == "test.entry"] == ["one"]
    assert mm.get_record(a, **ALICE).is_deprecated
    stale = mm.epochs([("acme", "alice")])
    mm.erase_user(**ALICE)
    [c, d] = _add(mm, ALICE, "third fact here", "fourth fact here")
    assert mm.revise([Retire(c)], **ALICE, log=[("item-2", T0, {"kind": "test.entry"})], epochs=stale) == []
    assert not mm.get_record(c, **ALICE).is_deprecated and not mm.decisions(**ALICE)  # accepted before the erasure


def test_bad_changes_and_owners_are_refused_in_one_line_and_nothing_is_written(mm):
    [a] = _add(mm, ALICE, "some fact here")
    with pytest.raises(IdentifierError, match="^tenant_id must be a plain string, got NoneType$"):
        mm.retire(a, tenant_id=None, user_id="alice")
    with pytest.raises(IdentifierError, match="^user_id must be a plain string, got dict$"):
        mm.revise([Retire(a)], tenant_id="acme", user_id={"$ne": "x"})
    with pytest.raises(ValueError, match=r"changes\[1\]: a record cannot supersede itself"):
        mm.revise([Retire(a), Supersede(a, a)], **ALICE)
    with pytest.raises(TypeError, match=r"changes\[0\] must be a Retire or a Supersede, got str"):
        mm.revise(["retire it"], **ALICE)  # type: ignore[list-item]
    with pytest.raises(IdentifierError, match=r"changes\[0\]\.memory_id must be a plain string"):
        mm.revise([Retire(7)], **ALICE)  # type: ignore[arg-type]
    assert not mm.get_record(a, **ALICE).is_deprecated
