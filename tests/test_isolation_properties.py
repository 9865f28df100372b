"""Property-based isolation: random tenants, users and near-identical texts; every read path stays in its owner."""

import uuid

from hypothesis import HealthCheck, given, settings, strategies as st

from memory import MemoryConfig, MemoryManager, Message, StoreLocation
from memory.core.schema import validate_identifier

# identifiers that look dangerous or confusable but are valid plain strings: taken literally
LITERALS = ["alice", "аlice", "ALICE", "$ne", '{"$ne": ""}', "$or", "bob", "a.b", "用户", "0", "*", "%"]
ident = st.one_of(st.sampled_from(LITERALS), st.text("abcxyz$-_.", min_size=1, max_size=6))
BASE = ["The campaign budget is {n} yuan.", "I live in Hangzhou and my code is {n}.", "My favourite editor is Vim {n}."]


@st.composite
def worlds(draw):
    owners = draw(st.lists(st.tuples(ident, ident), min_size=2, max_size=4, unique=True))
    msgs = []
    for k, owner in enumerate(owners):
        for i in range(draw(st.integers(1, 5))):
            template = draw(st.sampled_from(BASE))
            # near-identical across owners; the marker tells whose text it is
            msgs.append(Message(tenant_id=owner[0], user_id=owner[1], id=f"o{k}-{i}",
                                content=template.format(n=f"qx{k}q"), timestamp=1_780_000_000 + len(msgs)))
    return owners, draw(st.permutations(msgs))


def _check_owner(mm, owners, k):
    tenant, user = owners[k]
    others = [f"qx{j}q" for j in range(len(owners)) if j != k]
    owner = {"tenant_id": tenant, "user_id": user}
    for template in BASE:
        query = template.format(n=others[0])  # the other owner's exact text: the most similar there is
        res = mm.retrieve(query, **owner, reinforce=False)
        hits = res.blind + res.governed + [d.hit for d in res.dropped]
        assert all((h.record.tenant_id, h.record.user_id) == owners[k] for h in hits)
        ctx = mm.build_context(query, **owner, reinforce=False)
        assert not any(o in ctx.text for o in others)
    assert all((m.tenant_id, m.user_id) == owners[k] for m in mm.recent(**owner))
    assert not any(o in mm.summary(**owner) for o in others)
    for scope in ("active", "hot", "all"):
        assert all((r.tenant_id, r.user_id) == owners[k] for r in mm.records(**owner, scope=scope))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(world=worlds())
def test_every_read_path_returns_only_the_callers_records(minilm, world):
    owners, msgs = world
    for t, u in owners:
        validate_identifier(t, "tenant_id"), validate_identifier(u, "user_id")
    mm = MemoryManager(MemoryConfig(window_size=2, threshold=0.0, top_k=10), embedder=minilm,
                       location=StoreLocation(), workspace=f"prop-{uuid.uuid4().hex[:10]}")
    mm.add_many(list(msgs))
    for k in range(len(owners)):
        _check_owner(mm, owners, k)
    # and erasing one owner leaves every other owner's records exactly as they were
    before = {o: len(mm.records(tenant_id=o[0], user_id=o[1])) for o in owners}
    report = mm.erase_user(tenant_id=owners[0][0], user_id=owners[0][1])
    assert report.ok
    after = {o: len(mm.records(tenant_id=o[0], user_id=o[1])) for o in owners}
    assert after[owners[0]] == 0 and all(after[o] == before[o] for o in owners[1:])
