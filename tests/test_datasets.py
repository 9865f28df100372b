"""Labelled datasets: scenarios and LoCoMo files in one form; malformed files name file, item and field.

LoCoMo tests read the shared sample (never copied here); the malformed-file tests write small
made-up LoCoMo-format files whose content is invented for the test.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest

from locomo_data import require_locomo
from memory.eval.datasets import LOCOMO_TENANT, load_dataset, load_locomo, scenario_dataset
from memory.core.errors import DataFileError, InputError
from memory.core.scenario import SCENARIOS_DIR


@pytest.fixture(scope="module")
def locomo_path():
    return require_locomo()


@pytest.fixture(scope="module")
def raw(locomo_path):
    with open(locomo_path, encoding="utf-8") as fh:
        return json.load(fh)


# --- scenarios ---------------------------------------------------------------------

def test_scenario_messages_become_memories_and_queries_questions():
    ds = scenario_dataset(SCENARIOS_DIR / "workshop_en.json")
    raw = json.loads((SCENARIOS_DIR / "workshop_en.json").read_text(encoding="utf-8"))
    assert (ds.kind, ds.unit, ds.name) == ("scenario", "turns", "workshop-en")
    assert [m.id for m in ds.memories] == [m["id"] for m in raw["messages"]]
    assert [q.id for q in ds.questions] == [q["id"] for q in raw["queries"]]
    m1 = ds.memories[0]
    assert (m1.tenant_id, m1.user_id, m1.text) == (raw["messages"][0]["tenant_id"], raw["messages"][0]["user_id"],
                                                  raw["messages"][0]["content"])
    labelled = {m["id"]: tuple(m.get("labels", [])) for m in raw["messages"]}
    assert {m.id: m.labels for m in ds.memories} == labelled
    assert ds.labels == sorted({x for v in labelled.values() for x in v})
    for q, rq in zip(ds.questions, raw["queries"]):
        assert q.relevant == tuple(rq["relevant"]) and q.forbidden == tuple(rq["forbidden"])
        assert q.no_answer == (not rq["relevant"])
        assert q.as_of == datetime.fromisoformat(rq["as_of"].replace("Z", "+00:00")).timestamp()
    assert [q.id for q in ds.questions if q.no_answer] == ["q12"]


def test_a_shipped_scenario_loads_by_name_and_facts_need_locomo():
    assert load_dataset("seed_demo_zh").name == "seed-demo-zh"
    with pytest.raises(InputError, match="unit 'facts' needs a LoCoMo dataset"):
        load_dataset("workshop_en", unit="facts")
    with pytest.raises(InputError, match="unit must be one of"):
        load_dataset("workshop_en", unit="sentences")


def test_a_malformed_scenario_names_file_item_and_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"name": "x", "messages": [
        {"id": "m1", "tenant_id": "t", "user_id": "u", "content": "hello", "timestamp": "2026-01-01T00:00:00Z"},
        {"id": "m2", "tenant_id": "t", "user_id": "u", "timestamp": "2026-01-01T00:00:00Z"},
    ]}))
    with pytest.raises(DataFileError) as err:
        load_dataset(str(path))
    assert str(path) in str(err.value) and "messages[1] (id 'm2')" in str(err.value) and "'content'" in str(err.value)


# --- the LoCoMo sample -------------------------------------------------------------

def _turns(sample):
    conv = sample["conversation"]
    for key, value in conv.items():
        if re.fullmatch(r"session_\d+", key):
            for turn in value:
                yield key, turn


def test_locomo_turns_one_user_per_conversation(raw, locomo_path):
    ds = load_locomo(locomo_path, unit="turns")
    assert ds.kind == "locomo" and ds.unit == "turns"
    assert ds.owners() == sorted((LOCOMO_TENANT, s["sample_id"]) for s in raw)
    assert len(ds.memories) == sum(1 for s in raw for _ in _turns(s))
    assert len(ds.questions) == sum(len(s["qa"]) for s in raw)
    first = raw[0]
    key, turn = next(_turns(first))
    mem = next(m for m in ds.memories if m.user_id == first["sample_id"] and m.id == turn["dia_id"])
    assert mem.text.startswith(f"{turn['speaker']}: {turn['text']}")
    when = datetime.strptime(first["conversation"][f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
    assert mem.timestamp == when.replace(tzinfo=timezone.utc).timestamp()
    captioned = next((s, t) for s in raw for _, t in _turns(s) if t.get("blip_caption"))
    mem = next(m for m in ds.memories if m.user_id == captioned[0]["sample_id"] and m.id == captioned[1]["dia_id"])
    assert captioned[1]["blip_caption"] in mem.text


def test_locomo_questions_evidence_and_no_answer(raw, locomo_path):
    ds = load_locomo(locomo_path)
    questions = iter(ds.questions)
    split = missing = 0
    for sample in raw:
        turn_ids = {t["dia_id"] for _, t in _turns(sample)}
        for qa in sample["qa"]:
            q = next(questions)
            assert q.user_id == sample["sample_id"] and q.text == qa["question"] and q.category == str(qa["category"])
            if qa["category"] == 5:
                assert q.no_answer and q.relevant == ()
                continue
            ids = [i for e in qa.get("evidence", []) for i in re.findall(r"D\d+:\d+", e)]
            split += sum(1 for e in qa.get("evidence", []) if len(re.findall(r"D\d+:\d+", e)) > 1)
            missing += not ids
            assert list(q.relevant) == list(dict.fromkeys(i for i in ids if i in turn_ids))
    assert ds.notes.get("evidence_split", 0) == split
    assert ds.notes.get("evidence_missing", 0) == missing
    # the sample really has the malformed cases this loader must handle
    assert split >= 1 and missing >= 1
    assert sum(q.no_answer for q in ds.questions) == sum(qa["category"] == 5 for s in raw for qa in s["qa"])


def test_locomo_facts_map_back_to_their_source_turns(raw, locomo_path):
    ds = load_locomo(locomo_path, unit="facts")
    turns = load_locomo(locomo_path, unit="turns")
    assert ds.unit == "facts"
    expected_facts = sum(len(f) for s in raw for per in s["observation"].values() for f in per.values())
    assert len(ds.memories) == expected_facts
    turn_ids = {(m.user_id, m.id) for m in turns.memories}
    assert all((m.user_id, src) in turn_ids for m in ds.memories for src in m.sources)
    assert any(len(m.sources) > 1 for m in ds.memories)  # the sample has a fact with two source turns
    by_owner = {}
    for m in ds.memories:
        by_owner.setdefault(m.user_id, []).append(m)
    for q_turns, q_facts in zip(turns.questions, ds.questions):
        assert q_facts.id == q_turns.id and q_facts.no_answer == q_turns.no_answer
        evidence = set(q_turns.relevant)
        expected = {m.id for m in by_owner[q_facts.user_id] if evidence & set(m.sources)}
        assert set(q_facts.relevant) == expected
    without = sum(1 for a, b in zip(turns.questions, ds.questions) if a.relevant and not b.relevant)
    assert ds.notes.get("evidence_without_facts", 0) == without


# --- malformed LoCoMo-format files (made-up content) ----------------------------------

def _sample(**changes):
    sample = {
        "sample_id": "made-up-1",
        "conversation": {
            "speaker_a": "Ada", "speaker_b": "Bo",
            "session_1_date_time": "9:00 am on 2 March, 2024",
            "session_1": [
                {"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a grey cat named Pixel."},
                {"speaker": "Bo", "dia_id": "D1:2", "text": "Lovely! I started learning the cello."},
            ],
            "session_2_date_time": "6:30 pm on 9 March, 2024",
            "session_2": [{"speaker": "Ada", "dia_id": "D2:1", "text": "Pixel knocked over my plant."}],
        },
        "qa": [
            {"question": "What is Ada's cat called?", "answer": "Pixel", "evidence": ["D1:1"], "category": 4},
            {"question": "What did Bo's cat break?", "evidence": ["D2:1"], "category": 5},
        ],
        "observation": {
            "session_1_observation": {"Ada": [["Ada has a grey cat named Pixel.", "D1:1"]],
                                      "Bo": [["Bo is learning the cello.", "D1:2"]]},
            "session_2_observation": {"Ada": [["Pixel knocked over Ada's plant.", "D2:1"]]},
        },
    }
    sample.update(changes)
    return sample


def _write(tmp_path, data, name="made-up.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_made_up_locomo_file_loads(tmp_path):
    ds = load_locomo(_write(tmp_path, [_sample()]), unit="facts")
    assert [m.id for m in ds.memories] == ["O1:1", "O1:2", "O2:1"]
    assert ds.questions[0].relevant == ("O1:1",) and ds.questions[1].no_answer
    assert ds.questions[0].as_of == datetime(2024, 3, 9, 18, 30, tzinfo=timezone.utc).timestamp()


def test_malformed_evidence_is_repaired_and_counted(tmp_path):
    qa = [
        {"question": "Two ids in one string?", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "An id that names no turn?", "evidence": ["D1:1", "D7:7"], "category": 4},
        {"question": "No evidence at all?", "category": 2},
        {"question": "Garbage evidence?", "evidence": ["see above"], "category": 4},
    ]
    ds = load_locomo(_write(tmp_path, [_sample(qa=qa)]))
    assert [q.relevant for q in ds.questions] == [("D1:1", "D2:1"), ("D1:1",), (), ()]
    assert ds.notes == {"evidence_missing": 2, "evidence_split": 1, "evidence_unknown": 1, "evidence_unparsable": 1}
    assert [q.answerable for q in ds.questions] == [True, True, False, False]


@pytest.mark.parametrize("mutate, item, field", [
    (lambda s: s["qa"][1].pop("question"), "qa[1]", "'question'"),
    (lambda s: s["qa"][0].update(category="4"), "qa[0]", "'category'"),
    (lambda s: s["qa"][0].update(category=9), "qa[0]", "'category'"),
    (lambda s: s["conversation"]["session_1"][1].pop("text"), "conversation.session_1[1] (dia_id 'D1:2')", "'text'"),
    (lambda s: s["conversation"]["session_2"][0].pop("dia_id"), "conversation.session_2[0]", "'dia_id'"),
    (lambda s: s["conversation"].update(session_2_date_time="next Tuesday"), "sample_id 'made-up-1'",
     "'conversation.session_2_date_time'"),
    (lambda s: s["conversation"].pop("session_1_date_time"), "sample_id 'made-up-1'", "'conversation.session_1_date_time'"),
    (lambda s: s["conversation"].update(session_1="oops"), "sample_id 'made-up-1'", "'conversation.session_1'"),
    (lambda s: s.pop("qa"), "samples[0]", "'qa'"),
    (lambda s: s.pop("sample_id"), "samples[0]", "'sample_id'"),
])
def test_a_malformed_locomo_file_names_file_item_and_field(tmp_path, mutate, item, field):
    sample = _sample()
    mutate(sample)
    path = _write(tmp_path, [sample])
    with pytest.raises(DataFileError) as err:
        load_locomo(path)
    message = str(err.value)
    assert path in message and item in message and field in message, message


def test_malformed_facts_and_files(tmp_path):
    no_obs = _sample()
    no_obs.pop("observation")
    path = _write(tmp_path, [no_obs])
    assert load_locomo(path).unit == "turns"  # turns do not need observations
    with pytest.raises(DataFileError, match=r"made-up.json: samples\[0\] \(sample_id 'made-up-1'\): field 'observation'"):
        load_locomo(path, unit="facts")
    bad_fact = _sample()
    bad_fact["observation"]["session_1_observation"]["Ada"][0] = "just text"
    with pytest.raises(DataFileError, match=r"observation.session_1_observation.Ada\[0\]"):
        load_locomo(_write(tmp_path, [bad_fact], "f.json"), unit="facts")
    with pytest.raises(DataFileError, match="top level must be a non-empty JSON list"):
        load_locomo(_write(tmp_path, {"samples": []}, "obj.json"))
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"broken.json: invalid JSON at line 1"):
        load_dataset(f"locomo:{broken}")
    with pytest.raises(DataFileError, match="cannot read LoCoMo file"):
        load_dataset(f"locomo:{tmp_path / 'absent.json'}")
    with pytest.raises(DataFileError, match="repeats an earlier sample"):
        load_locomo(_write(tmp_path, [_sample(), _sample()], "dup.json"))


def test_a_missing_sample_skips_unless_ci_requires_it(monkeypatch, tmp_path):
    import locomo_data

    monkeypatch.setattr(locomo_data, "LOCOMO_SAMPLE", str(tmp_path / "absent.json"))
    monkeypatch.delenv(locomo_data.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="LoCoMo sample not found"):
        locomo_data.require_locomo()
    monkeypatch.setenv(locomo_data.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="MEMORY_REQUIRE_DATASETS=1 requires it"):
        locomo_data.require_locomo()
