import json

import pytest

from memory import InputError, parse_scenario
from memory.eval.synth import SynthSpec, generate_scenario


def test_same_seed_same_scenario_and_different_seed_differs():
    a = generate_scenario(SynthSpec(users=5, tenants=2, messages=150, seed=4))
    assert a == generate_scenario(SynthSpec(users=5, tenants=2, messages=150, seed=4))
    assert a != generate_scenario(SynthSpec(users=5, tenants=2, messages=150, seed=5))


def test_generated_scenario_is_valid_and_labelled():
    data = generate_scenario(SynthSpec(users=7, tenants=3, messages=210, seed=1))
    sc = parse_scenario(json.dumps(data), source="synthetic")
    assert len(sc.messages) == 210 and len(sc.owners()) == 7
    assert len({t for t, _ in sc.owners()}) == 3
    labels = [label for m in sc.messages for label in m.labels]
    assert {"noise", "private", "stale"} <= set(labels)
    by_id = {m.id: m for m in sc.messages}
    for q in sc.queries:
        (rel,) = q.relevant
        assert (by_id[rel].tenant_id, by_id[rel].user_id) == (q.tenant_id, q.user_id)
        assert "stale" not in by_id[rel].labels
        own_forbidden = [f for f in q.forbidden if (by_id[f].tenant_id, by_id[f].user_id) == (q.tenant_id, q.user_id)]
        assert all("stale" in by_id[f].labels for f in own_forbidden)


@pytest.mark.parametrize("kw, fragment", [
    ({"users": 0}, "users must be a whole number"),
    ({"tenants": 9, "users": 3}, "must not exceed users"),
    ({"noise_share": 1.5}, "noise_share must be in [0, 1]"),
    ({"noise_share": 0.6, "private_share": 0.4}, "leave room for facts"),
])
def test_bad_specs_are_named(kw, fragment):
    with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        SynthSpec(**kw)
