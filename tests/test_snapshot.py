"""memory.snapshot / memory.restore: a workspace started from another's state is that state, and is its own.

The lab starts every participant's lab from one snapshot per scenario, model and write path (lab/engine.py), so a copy
must equal a fresh load through the write path (records, version chains, windows, summaries, decisions, recall) and
an erasure in one copy must touch neither the snapshot nor another copy. Real MiniLM, real Chroma in a temp folder.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from memory import Ingestor, InputError, MemoryConfig, MemoryManager, StoreLocation, restore, snapshot
from memory.core.scenario import SCENARIOS_DIR, load_scenario

QUERY = "What is the campaign budget now?"
ALICE = {"tenant_id": "acme", "user_id": "alice"}


@pytest.fixture(scope="module")
def scenario():
    return load_scenario(SCENARIOS_DIR / "workshop_en.json")


def _manager(embedder, folder, config=None) -> MemoryManager:
    return MemoryManager(config or MemoryConfig(window_size=12), embedder=embedder,
                         location=StoreLocation(data_dir=folder / uuid.uuid4().hex), workspace=f"w-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def source(minilm, tmp_path, scenario):
    """workshop_en through the atomic-fact write path, as the lab's default loads it."""
    manager = _manager(minilm, tmp_path)
    Ingestor(manager).ingest_many(scenario.messages)
    return manager


def _state(manager: MemoryManager) -> dict:
    out = {}
    for tenant_id, user_id in manager.owners():
        who = {"tenant_id": tenant_id, "user_id": user_id}
        out[(tenant_id, user_id)] = {
            "records": sorted((r.to_dict() for r in manager.records(**who)), key=lambda r: r["memory_id"]),
            "window": [(m.id, m.content, m.timestamp) for m in manager.recent(**who)],
            "summary": (manager.summary(**who), manager.summary_sources(**who)),
            "decisions": manager.decisions(**who),
            "vectors": manager.embeddings([r.memory_id for r in manager.records(**who)], **who),
        }
    return out


def test_a_restored_workspace_is_the_source_state_records_chains_windows_summaries_decisions_and_recall(
        source, minilm, tmp_path):
    snap = snapshot(source)
    copy = _manager(minilm, tmp_path)
    counts = restore(copy, snap)
    assert counts["records"] == sum(source.count(tenant_id=t, user_id=u) for t, u in source.owners()) > 0
    assert counts["decisions"] > 0 and counts["window"] > 0
    want, got = _state(source), _state(copy)
    assert list(got) == list(want)
    for owner in want:
        for part in ("records", "window", "summary", "decisions"):
            assert got[owner][part] == want[owner][part], (owner, part)
        assert set(got[owner]["vectors"]) == set(want[owner]["vectors"])
        for memory_id, vector in want[owner]["vectors"].items():
            np.testing.assert_array_equal(got[owner]["vectors"][memory_id], vector)
    a = source.retrieve(QUERY, **ALICE, reinforce=False)
    b = copy.retrieve(QUERY, **ALICE, reinforce=False)
    assert [(h.record.memory_id, round(h.similarity, 6)) for h in a.governed] == \
        [(h.record.memory_id, round(h.similarity, 6)) for h in b.governed]
    assert [d["action"] for d in copy.audit_log()] == ["restore"]
    # the copy writes on as the source would: a retry of a scenario message is known as ingested
    assert copy.not_ingested(list(load_scenario_messages())) == []


def load_scenario_messages():
    return load_scenario(SCENARIOS_DIR / "workshop_en.json").messages


def test_an_erasure_in_one_copy_touches_neither_the_snapshot_nor_another_copy(source, minilm, tmp_path):
    snap = snapshot(source)
    before = snap.count()
    first, second = _manager(minilm, tmp_path), _manager(minilm, tmp_path)
    restore(first, snap)
    restore(second, snap)
    alice = second.count(**ALICE)
    report = first.erase_user(**ALICE, disk_scan=True)
    assert report.ok, report.to_dict()
    assert first.count(**ALICE) == 0 and first.recent(**ALICE) == []
    assert second.count(**ALICE) == alice > 0, "another copy lost the erased user's records"
    assert snap.count() == before and any((r.tenant_id, r.user_id) == ("acme", "alice") for r in snap.records)
    third = _manager(minilm, tmp_path)  # a lab opened after the erasure still starts with the whole scenario
    restore(third, snap)
    assert third.count(**ALICE) == alice


def test_a_snapshot_is_read_only_and_starts_only_an_empty_workspace_of_its_own_model(source, minilm, lexical, tmp_path):
    snap = snapshot(source)
    with pytest.raises(ValueError):
        snap.vectors[0, 0] = 1.0
    with pytest.raises(InputError, match="not empty"):
        restore(source, snap)
    mine = sum(1 for r in snap.records if (r.tenant_id, r.user_id) == ("acme", "alice"))
    assert source.count(**ALICE) == mine > 0, "a refused restore wrote into the workspace"
    with pytest.raises(InputError, match="lexical"):
        restore(_manager(lexical, tmp_path), snap)
