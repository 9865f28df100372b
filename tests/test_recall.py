"""Governed vs blind recall: threshold, lifecycle, composite score, top_k, budget, reinforcement."""

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from memory import MemoryConfig, Message, govern
from memory.core.schema import FOREVER

DAY = 86400.0
T0 = 1_780_000_000.0
FACTS = [
    "The campaign budget is 300,000 yuan.",
    "The campaign launch deadline is July 15.",
    "Alice prefers reports as PDF files.",
    "Lunch today was noodles with beef.",
    "The weather is gloomy and rainy today.",
    "The budget review meeting is on Friday.",
    "Marketing spend must stay under the approved budget.",
    "Alice's cat is called Miso.",
]
OWNER = {"tenant_id": "acme", "user_id": "alice"}


@pytest.fixture
def mm(make_manager):
    mm = make_manager(MemoryConfig(top_k=8, threshold=0.0, token_budget=10_000))
    mm.add_many([Message(**OWNER, content=t, id=f"m{i}", timestamp=T0 + i * DAY) for i, t in enumerate(FACTS)])
    return mm


@pytest.fixture
def cands(mm):
    return mm.candidates("How much is the campaign budget?", **OWNER, as_of=T0 + 30 * DAY, pool=50)


def ids(hits):
    return [h.record.message_id for h in hits]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(low=st.floats(0, 1), high=st.floats(0, 1), top_k=st.integers(1, 8))
def test_raising_the_threshold_never_adds_a_governed_hit(cands, low, high, top_k):
    # govern() is pure, so sharing the fetched candidates across examples is safe
    low, high = sorted((low, high))
    cfg = MemoryConfig(top_k=top_k, token_budget=100_000)
    a = govern(cands, cfg.replace(threshold=low))
    b = govern(cands, cfg.replace(threshold=high))
    assert len(b.governed) <= len(a.governed)
    assert all(h.similarity >= high for h in b.governed)
    if top_k == 8:  # no top_k cut: the governed set itself can only shrink
        assert set(ids(b.governed)) <= set(ids(a.governed))


def test_blind_is_top_k_by_similarity_and_governed_drops_noise(cands):
    res = govern(cands, MemoryConfig(top_k=4, threshold=0.4, token_budget=10_000))
    sims = [h.similarity for h in res.blind]
    assert len(res.blind) == 4 and sims == sorted(sims, reverse=True)
    assert "m0" in ids(res.governed)
    assert "m3" not in ids(res.governed) and "m4" not in ids(res.governed)
    stages = {d.hit.record.message_id: d.stage for d in res.dropped}
    assert stages["m3"] == "threshold" and stages["m4"] == "threshold"
    # every candidate is accounted for exactly once: governed or dropped with a stage
    assert sorted(ids(res.governed) + list(stages)) == sorted(r.message_id for r, _ in cands.hot)


def test_composite_score_is_the_documented_formula(cands):
    cfg = MemoryConfig(threshold=0.0, top_k=8, alpha=0.6, beta=0.3, gamma=0.1, decay_rate=0.1, token_budget=10_000)
    res = govern(cands, cfg)
    import math
    for h in res.governed:
        age = (cands.as_of - h.record.created_at) / DAY
        expected = 0.6 * h.similarity + 0.3 * math.exp(-0.1 * age) + 0.1 * max(h.record.importance, 0.0)
        assert h.score == pytest.approx(expected, rel=1e-9)
        assert h.parts.score == pytest.approx(h.score)
    assert [h.score for h in res.governed] == sorted((h.score for h in res.governed), reverse=True)


def test_decay_rate_reorders_by_recency(cands):
    no_decay = govern(cands, MemoryConfig(threshold=0.0, top_k=8, alpha=0.5, beta=0.5, gamma=0.0, decay_rate=0.0, token_budget=10_000))
    soon = dataclasses.replace(cands, as_of=T0 + 7.5 * DAY)  # m7 is half a day old, m0 seven and a half
    strong = govern(soon, MemoryConfig(threshold=0.0, top_k=8, alpha=0.1, beta=0.9, gamma=0.0, decay_rate=2.0, token_budget=10_000))
    assert [h.similarity for h in no_decay.governed] == sorted((h.similarity for h in no_decay.governed), reverse=True)
    # when recency dominates, the newest governed memory ranks first
    assert strong.governed[0].record.created_at == max(h.record.created_at for h in strong.governed)
    assert strong.governed[0].record.message_id != no_decay.governed[0].record.message_id


def test_top_k_and_budget_stages(cands):
    res = govern(cands, MemoryConfig(threshold=0.0, top_k=3, token_budget=10_000))
    passing = sum(1 for _, sim in cands.active if sim >= 0.0)
    assert len(res.governed) == 3 and sum(d.stage == "top_k" for d in res.dropped) == passing - 3
    tight = govern(cands, MemoryConfig(threshold=0.0, top_k=8, token_budget=12))
    assert sum(h.tokens for h in tight.governed) <= 12
    assert any(d.stage == "budget" for d in tight.dropped)
    assert govern(cands, MemoryConfig(threshold=0.0, token_budget=0)).governed == []


def test_deprecated_and_expired_are_excluded_in_the_store_and_reported(mm):
    recs = {r.message_id: r for r in mm.records(**OWNER)}
    old, exp = recs["m0"], recs["m1"]
    old.is_deprecated, old.superseded_by = True, recs["m6"].memory_id
    exp.valid_until = T0 + 10 * DAY
    mm.store.update([old, exp])
    res = mm.retrieve("campaign budget and deadline", **OWNER, as_of=T0 + 30 * DAY, reinforce=False)
    assert "m0" in ids(res.blind) and "m1" in ids(res.blind)  # blind top-k serves stale and expired facts
    assert "m0" not in ids(res.governed) and "m1" not in ids(res.governed)
    stages = {d.hit.record.message_id: d.stage for d in res.dropped}
    assert stages["m0"] == "deprecated" and stages["m1"] == "expired"
    # before expiry, the expiring record is recalled
    early = mm.retrieve("campaign launch deadline", **OWNER, as_of=T0 + 5 * DAY, reinforce=False)
    assert "m1" in ids(early.governed)
    active = mm.records(**OWNER, scope="active", as_of=T0 + 30 * DAY)
    assert {r.message_id for r in active} == {f"m{i}" for i in range(2, 8)}
    assert recs["m2"].valid_until == FOREVER


def test_recall_reinforces_only_what_is_used(mm):
    as_of = T0 + 40 * DAY
    res = mm.retrieve("campaign budget", **OWNER, as_of=as_of)
    used = {h.record.memory_id for h in res.governed}
    after = {r.memory_id: r for r in mm.records(**OWNER)}
    for mid, rec in after.items():
        if mid in used:
            assert rec.access_count == 1 and rec.last_accessed_at == as_of
        else:
            assert rec.access_count == 0 and rec.last_accessed_at < as_of
    mm.retrieve("campaign budget", **OWNER, as_of=as_of, reinforce=False)
    assert {r.memory_id: r.access_count for r in mm.records(**OWNER)} == {m: r.access_count for m, r in after.items()}


def test_build_context_respects_budget_and_includes_tracks(make_manager):
    mm = make_manager(MemoryConfig(window_size=2, threshold=0.0, token_budget=15, top_k=8))
    mm.add_many([Message(**OWNER, content=t, id=f"m{i}", timestamp=T0 + i) for i, t in enumerate(FACTS)])
    ctx = mm.build_context("campaign budget", **OWNER, reinforce=False)
    assert ctx.memory_tokens <= 15 and ctx.token_budget == 15
    assert [m.id for m in ctx.recent] == ["m6", "m7"]
    assert ctx.summary.count("\n") == 5  # m0..m5 folded, one line each
    assert mm.summary_sources(**OWNER) == [f"m{i}" for i in range(6)]
    assert ctx.tokens >= ctx.memory_tokens


def test_exact_candidates_cover_every_record_and_agree_with_the_index(mm):
    exact = mm.candidates("campaign budget", **OWNER, as_of=T0 + 30 * DAY, exact=True)
    approx = mm.candidates("campaign budget", **OWNER, as_of=T0 + 30 * DAY, pool=50)
    assert len(exact.hot) == len(exact.active) == len(FACTS)
    assert [r.memory_id for r, _ in exact.active] == [r.memory_id for r, _ in approx.active]
    for (r1, s1), (r2, s2) in zip(exact.active, approx.active):
        assert s1 == pytest.approx(s2, abs=1e-5)
