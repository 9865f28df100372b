"""Scenario files: the shipped ones load; malformed ones name the file, the item and the field."""

import json

import pytest

from memory import DataFileError, load_scenario, parse_scenario
from memory.core.scenario import shipped_scenarios

GOOD = {
    "name": "t", "language": "en", "owner_note": "kept",
    "messages": [
        {"id": "m1", "tenant_id": "acme", "user_id": "alice", "session_id": "s1", "role": "user",
         "content": "The budget is 300,000 yuan.", "timestamp": "2026-05-01T10:00:00Z", "labels": [], "mood": "kept"},
    ],
    "queries": [{"id": "q1", "tenant_id": "acme", "user_id": "alice", "query": "budget?", "relevant": ["m1"]}],
}


def _bad(mutate):
    data = json.loads(json.dumps(GOOD))
    mutate(data)
    with pytest.raises(DataFileError) as err:
        parse_scenario(json.dumps(data), source="x.json")
    return str(err.value)


def test_shipped_scenarios_load_and_are_labelled():
    found = shipped_scenarios()
    assert {"seed_demo_zh", "workshop_en"} <= set(found)
    en = load_scenario(found["workshop_en"])
    assert len(en.messages) >= 60 and len(en.queries) >= 10
    assert len(en.owners()) >= 3 and len({t for t, _ in en.owners()}) >= 2
    labels = {label for m in en.messages for label in m.labels}
    assert {"noise", "private", "stale", "contradiction"} <= labels


def test_unknown_fields_are_kept():
    sc = parse_scenario(json.dumps(GOOD), source="x.json")
    assert sc.extra == {"owner_note": "kept"}
    assert sc.queries[0].model_extra == {} and sc.messages[0].labels == ()


def test_missing_field_names_file_item_and_field():
    msg = _bad(lambda d: d["messages"][0].pop("content"))
    assert msg == "x.json: messages[0] (id 'm1'): field 'content' is required"


def test_wrong_type_is_named():
    msg = _bad(lambda d: d["messages"][0].update(user_id=7))
    assert "x.json: messages[0] (id 'm1'): field 'user_id'" in msg


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["messages"][0].update(timestamp="yesterday"), "not an ISO-8601 time"),
    (lambda d: d["messages"][0].update(role="robot"), "field 'role'"),
    (lambda d: d["messages"][0].update(content="   "), "field 'content' is empty"),
    (lambda d: d["messages"][0].update(tenant_id={"$ne": ""}), "field 'tenant_id'"),
    (lambda d: d["messages"].append(dict(d["messages"][0])), "repeats an earlier message id"),
    (lambda d: d["queries"][0].update(relevant=["m9"]), "queries[0] (id 'q1'): field 'relevant' names unknown message id 'm9'"),
    (lambda d: d["queries"][0].update(user_id="bob"), "a message of another (tenant, user)"),
    (lambda d: d.pop("messages"), "top level: field 'messages' is required"),
])
def test_semantic_errors_are_named(mutate, fragment):
    assert fragment in _bad(mutate)


def test_bad_bytes_and_bad_json(tmp_path):
    p = tmp_path / "bad.json"
    p.write_bytes(b'{"name": "\xff\xfe"}')
    with pytest.raises(DataFileError, match=r"bad.json: not UTF-8"):
        load_scenario(p)
    p.write_text('{"name": "t", "messages": [', encoding="utf-8")
    with pytest.raises(DataFileError, match=r"bad.json: invalid JSON at line 1"):
        load_scenario(p)
    with pytest.raises(DataFileError, match="cannot read"):
        load_scenario(tmp_path / "missing.json")
    with pytest.raises(DataFileError, match="top level must be a JSON object"):
        parse_scenario("[]", source="list.json")
