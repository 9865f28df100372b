"""After an update, no old value stays live in governed recall (issue 24): every labelled `update` pair of the
project's sets goes through the write path (the Ingestor, real Chroma, the real MiniLM), each in its own user; where
the judge decides `update`, the superseded fact is asked for in its own words and governed recall never serves it,
while the new fact stays recallable. Both offline judges, the rules and the learned one."""

from __future__ import annotations

import pytest

from memory import MemoryConfig, Message
from memory.eval.pairs import load_pairs, shipped_pair_files
from memory.write.ingest import Ingestor
from memory.write.judges import make_judge

T0 = 1_780_000_000.0
UPDATES = [p.model_copy(update={"id": f"{lang}-{p.id}"}) for lang in ("en", "zh")
           for p in load_pairs(shipped_pair_files()[f"dedup_pairs_{lang}"]) if p.expected == "update"]


@pytest.mark.model
@pytest.mark.parametrize("judge", ["rules", "learned"])
def test_no_superseded_fact_is_served_by_governed_recall(make_manager, judge):
    mm = make_manager(MemoryConfig(threshold=0.0, top_k=10))
    ing = Ingestor(mm, judge=make_judge(judge))
    owners = {p.id: {"tenant_id": "acme", "user_id": f"u-{p.id}"} for p in UPDATES}
    ing.ingest_many([Message(content=p.existing, id=f"{p.id}-old", timestamp=T0, **owners[p.id]) for p in UPDATES])
    entries = ing.ingest_many([Message(content=p.incoming, id=f"{p.id}-new", timestamp=T0 + 60, **owners[p.id])
                               for p in UPDATES])
    updated = [(e, p) for e in entries for p in UPDATES
               if e.message_id == f"{p.id}-new" and e.decision.decision == "update" and e.superseded]
    assert len(updated) >= len(UPDATES) // 2, (len(updated), len(UPDATES))  # the property is checked on many pairs
    for entry, pair in updated:
        owner = owners[pair.id]
        old = mm.get_record(entry.superseded, **owner)
        assert old.is_deprecated and old.superseded_by == entry.memory_id, pair.id
        res = mm.retrieve(old.content, **owner, as_of=T0 + 120)
        served = [h.record.memory_id for h in res.governed]
        assert entry.superseded not in served, (pair.id, old.content, served)
        assert all(not h.record.is_deprecated for h in res.governed), pair.id
        assert entry.memory_id in served, (pair.id, mm.get_record(entry.memory_id, **owner).content, served)
