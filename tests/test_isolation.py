"""Isolation in all three tracks: another user's data never reaches this user's window, summary or recall."""

import pytest

from memory import IdentifierError, MemoryConfig, Message, Owner

SECRET = "The vault door code is 4711 and the spare key is under the blue pot."


def _fill(mm, tenant, user, n, start=0):
    for i in range(n):
        mm.add(Message(tenant_id=tenant, user_id=user, content=f"{user} note {i}: we discussed topic {i}.",
                       id=f"{tenant}-{user}-{i}", timestamp=1_780_000_000 + start + i))


def test_other_users_identical_text_never_crosses_any_track(make_manager):
    mm = make_manager(MemoryConfig(window_size=2, threshold=0.0, top_k=50))
    _fill(mm, "acme", "alice", 4)
    # bob (same tenant), alice in another tenant: both say the most similar thing to the query
    mm.add(Message(tenant_id="acme", user_id="bob", content=SECRET, id="bob-secret", timestamp=1_780_000_100))
    mm.add(Message(tenant_id="globex", user_id="alice", content=SECRET, id="gx-secret", timestamp=1_780_000_101))
    _fill(mm, "acme", "bob", 3, start=200)
    owner = {"tenant_id": "acme", "user_id": "alice"}

    window = mm.recent(**owner)
    assert window and all((m.tenant_id, m.user_id) == ("acme", "alice") for m in window)
    summary = mm.summary(**owner)
    assert summary and "vault" not in summary and "bob note" not in summary
    result = mm.retrieve(SECRET, **owner, reinforce=False)
    seen = result.blind + result.governed + [d.hit for d in result.dropped]
    assert seen, "alice has records, recall must see them"
    assert all((h.record.tenant_id, h.record.user_id) == ("acme", "alice") for h in seen)
    assert all("vault" not in h.record.content for h in seen)
    context = mm.build_context(SECRET, **owner, reinforce=False)
    assert "vault" not in context.text and "bob note" not in context.text
    # while bob does get his own secret back, as the best match
    bob = mm.retrieve(SECRET, tenant_id="acme", user_id="bob", reinforce=False)
    assert bob.governed[0].record.content == SECRET and bob.governed[0].similarity > 0.99


def test_same_user_id_in_two_tenants_is_two_users(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.0))
    mm.add(Message(tenant_id="acme", user_id="alice", content=SECRET, id="a1"))
    res = mm.retrieve(SECRET, tenant_id="globex", user_id="alice", reinforce=False)
    assert res.blind == [] and res.governed == []
    assert mm.recent(tenant_id="globex", user_id="alice") == []


@pytest.mark.parametrize("bad", [{"$ne": ""}, ["alice"], None, 7, "", "   ", " alice", "al\x00ice", "a" * 300, "a\u200bb"])
def test_hostile_identifiers_are_rejected_everywhere(make_manager, bad):
    mm = make_manager()
    with pytest.raises(IdentifierError):
        mm.retrieve("anything", tenant_id="acme", user_id=bad)
    with pytest.raises(IdentifierError):
        mm.recent(tenant_id=bad, user_id="alice")
    with pytest.raises(IdentifierError):
        Message(tenant_id="acme", user_id=bad, content="x")
    with pytest.raises(IdentifierError):
        mm.erase_user(tenant_id="acme", user_id=bad)


def test_operator_looking_strings_are_taken_literally(make_manager):
    mm = make_manager(MemoryConfig(threshold=0.0))
    mm.add(Message(tenant_id="acme", user_id="alice", content=SECRET, id="a1"))
    for literal in ('{"$ne": ""}', "$or", "$ne"):
        res = mm.retrieve(SECRET, tenant_id="acme", user_id=literal, reinforce=False)
        assert res.blind == [] and res.governed == []
    # the literal "$ne" user is a user of its own, with a collection of its own
    mm.add(Message(tenant_id="acme", user_id="$ne", content="dollar note", id="d1"))
    names = {(t, u): c for t, u, c in mm.store.texts.collections()}
    assert set(names) == {("acme", "alice"), ("acme", "$ne")} and len(set(names.values())) == 2
    assert [r.content for r in mm.records(tenant_id="acme", user_id="$ne")] == ["dollar note"]


def test_each_owner_is_a_collection_of_its_own(make_manager):
    """Physical isolation: an owner's vectors are in the owner's collection and nowhere else."""
    mm = make_manager(MemoryConfig(threshold=0.0))
    for tenant, user in (("acme", "alice"), ("acme", "bob"), ("globex", "alice")):
        for i in range(3):
            mm.add(Message(tenant_id=tenant, user_id=user, content=f"{tenant} {user} note {i}", id=f"{tenant}-{user}-{i}"))
    owners = mm.store.texts.collections()
    assert len({c for _, _, c in owners}) == 3
    for tenant, user, name in owners:
        held = set(mm.store.client.get_collection(name).get(include=[])["ids"])
        assert held == set(mm.store.texts.vector_ids(Owner(tenant, user))) and len(held) == 3
