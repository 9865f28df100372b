"""Library validation of hostile inputs: identifiers, times, JSON, lifecycle options, sweep and synth sizes."""

import json
import math
import os
import unicodedata
import uuid

import pytest

from memory import MemoryConfig, MemoryManager, Message, Owner, StoreLocation
from memory.core.errors import ConfigError, DataFileError, IdentifierError, InputError
from memory.runtime.lifecycle import forget, set_valid_until
from memory.core.scenario import MAX_JSON_DEPTH, parse_scenario
from memory.core.schema import FOREVER, MIN_TIME, parse_time, validate_identifier, validate_text
from memory.eval.study import MAX_SWEEP_POINTS, MAX_SWEEP_SETTINGS, parse_range, validate_options
from memory.eval.synth import MAX_MESSAGES, MAX_USER_MESSAGES, MAX_USERS, SynthSpec, generate_scenario

NFC = unicodedata.normalize("NFC", "José Müller")
NFD = unicodedata.normalize("NFD", "José Müller")
HUGE_INT = 10**5000 // 9


def _id(value):
    """pytest ids: a 5,000-digit int cannot be turned into text (Python's int/str limit)."""
    if isinstance(value, int) and value.bit_length() > 1000:
        return "5000-digits"
    if isinstance(value, dict):
        return "-".join(f"{k}={_id(v) or v!r}" for k, v in value.items())
    return None


@pytest.fixture
def mm(lexical):
    m = MemoryManager(MemoryConfig(threshold=0.0), embedder=lexical, location=StoreLocation(),
                      workspace=f"inputs-{uuid.uuid4().hex[:10]}")
    m.add(Message(tenant_id="acme", user_id="alice", id="a1", content="The campaign budget is 300,000 yuan.",
                  timestamp=parse_time("2026-05-01T00:00:00Z", "timestamp")))
    return m


# --- identifiers ------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["al\ud800ice", "\udfff", os.fsdecode(b"al\xffice")])
def test_identifiers_with_lone_surrogates_are_rejected(bad):
    with pytest.raises(IdentifierError, match="user_id holds a lone surrogate"):
        validate_identifier(bad, "user_id")


def test_identifiers_are_normalised_to_nfc():
    assert NFC != NFD
    assert validate_identifier(NFD, "user_id") == NFC
    assert validate_identifier(NFC, "user_id") is NFC
    assert validate_identifier("ALICE", "user_id") == "ALICE"  # nothing else is folded
    m = Message(tenant_id=NFD, user_id=NFD, session_id=NFD, id=NFD, content="x")
    assert (m.tenant_id, m.user_id, m.session_id, m.id) == (NFC, NFC, NFC, NFC)


def test_nfd_added_records_are_read_with_the_nfc_name(mm):
    mm.add(Message(tenant_id="acme", user_id=NFD, id="j1", content="I live in Hangzhou."))
    records = mm.records(tenant_id="acme", user_id=NFC)
    assert [r.message_id for r in records] == ["j1"] and records[0].user_id == NFC
    hits = mm.retrieve("Hangzhou", tenant_id="acme", user_id=NFC, reinforce=False).blind
    assert [h.record.message_id for h in hits] == ["j1"]


def test_the_nfd_name_reads_the_long_term_records_of_the_nfc_name(mm):
    mm.add(Message(tenant_id="acme", user_id=NFC, id="j1", content="I live in Hangzhou."))
    hits = mm.retrieve("Hangzhou", tenant_id="acme", user_id=NFD, reinforce=False).blind
    assert [h.record.message_id for h in hits] == ["j1"]


def test_erasing_the_nfd_name_erases_what_the_nfc_name_added(mm):
    mm.add(Message(tenant_id="acme", user_id=NFC, id="j1", content="I live in Hangzhou."))
    assert len(mm.recent(tenant_id="acme", user_id=NFD)) == 1
    report = mm.erase_user(tenant_id="acme", user_id=NFD)
    assert report.ok
    assert mm.store.count(Owner("acme", NFC)) == 0
    assert mm.recent(tenant_id="acme", user_id=NFC) == []
    assert mm.store.count(Owner("acme", "alice")) == 1


# --- text and times -------------------------------------------------------------------

def test_text_with_lone_surrogates_is_rejected(mm):
    with pytest.raises(InputError, match="query holds a lone surrogate '\\\\udcff' at character 3"):
        validate_text("abc\udcff", "query", max_chars=100)
    with pytest.raises(InputError, match="content holds a lone surrogate"):
        Message(tenant_id="acme", user_id="alice", content="budget \ud800")
    with pytest.raises(InputError, match="labels holds a lone surrogate"):
        Message(tenant_id="acme", user_id="alice", content="x", labels=("no\udc00ise",))
    assert mm.store.count() == 1


@pytest.mark.parametrize("value, fragment", [
    (float("nan"), "must be a finite time"), (float("inf"), "must be a finite time"),
    (-float("inf"), "must be a finite time"), (HUGE_INT, "a number too large"), (1e300, "out of range"),
    (FOREVER + 1, "out of range"), (MIN_TIME - 1, "out of range"), ("0000-01-01T00:00:00Z", "not an ISO-8601 time"),
    ("9999-12-31T23:59:59-05:00", "out of range"), ("0001-01-01T00:00:00+05:00", "out of range"),
], ids=_id)
def test_out_of_range_times_name_the_field(value, fragment):
    with pytest.raises(InputError, match=f"timestamp .*{fragment}|timestamp {fragment}"):
        parse_time(value, "timestamp")
    with pytest.raises(InputError, match=f"timestamp .*{fragment}|timestamp {fragment}"):
        Message(tenant_id="acme", user_id="alice", content="x", timestamp=value)


def test_valid_times_still_parse():
    assert parse_time("2026-05-01T00:00:00Z", "t") == 1777593600.0
    assert parse_time(FOREVER, "t") == FOREVER and parse_time(MIN_TIME, "t") == MIN_TIME
    assert Message(tenant_id="a", user_id="b", content="x", timestamp=5).timestamp == 5.0


def test_a_nan_timestamp_is_not_stored_as_1970_and_archived(mm):
    with pytest.raises(InputError, match="timestamp must be a finite time, got nan"):
        mm.add(Message(tenant_id="acme", user_id="alice", id="n1", content="nan time", timestamp=float("nan")))
    assert [r.message_id for r in mm.records(tenant_id="acme", user_id="alice")] == ["a1"]


@pytest.mark.parametrize("as_of", [float("nan"), float("inf"), "0000-01-01T00:00:00Z", 1e20])
def test_as_of_is_validated(mm, as_of):
    with pytest.raises(InputError, match="as_of"):
        mm.retrieve("budget", tenant_id="acme", user_id="alice", as_of=as_of)
    with pytest.raises(InputError, match="as_of"):
        forget(mm, tenant_id="acme", user_id="alice", as_of=as_of)
    assert mm.records(tenant_id="acme", user_id="alice")[0].access_count == 0


@pytest.mark.parametrize("value", [float("nan"), float("-inf"), HUGE_INT, "0.5"], ids=_id)
def test_importance_is_validated(value):
    with pytest.raises(InputError, match="importance must be a number in"):
        Message(tenant_id="acme", user_id="alice", content="x", importance=value)


# --- lifecycle -----------------------------------------------------------------------------

@pytest.mark.parametrize("kw, fragment", [
    ({"decay_rate": -5}, "decay_rate must be a number in [0, 10]"),
    ({"decay_rate": float("nan")}, "decay_rate must be a number"),
    ({"decay_rate": 11}, "decay_rate must be a number in [0, 10]"),
    ({"decay_rate": HUGE_INT}, "decay_rate must be a number"),
    ({"floor": True}, "floor must be a number"), ({"floor": float("nan")}, "floor must be a number"),
    ({"days": float("nan")}, "days must be a number"), ({"days": -1}, "days must be a number"),
], ids=_id)
def test_forget_rejects_bad_options(mm, kw, fragment):
    with pytest.raises(InputError) as info:
        forget(mm, tenant_id="acme", user_id="alice", as_of="2027-01-01T00:00:00Z", **kw)
    assert fragment in str(info.value)
    assert not any(r.archived for r in mm.records(tenant_id="acme", user_id="alice"))


def test_forget_still_archives_with_a_valid_rate(mm):
    report = forget(mm, tenant_id="acme", user_id="alice", as_of="2030-01-01T00:00:00Z", decay_rate=0.5)
    assert len(report.archived) == 1


def test_set_valid_until_validates_before_reading(mm):
    mid = mm.records(tenant_id="acme", user_id="alice")[0].memory_id
    for bad in (float("nan"), float("inf"), "0000-01-01"):
        with pytest.raises(InputError, match="valid_until"):
            set_valid_until(mm, mid, tenant_id="acme", user_id="alice", valid_until=bad)
    with pytest.raises(IdentifierError, match="memory_id"):
        set_valid_until(mm, {"$ne": ""}, tenant_id="acme", user_id="alice", valid_until=0)
    assert mm.records(tenant_id="acme", user_id="alice")[0].valid_until == FOREVER


# --- JSON data files -----------------------------------------------------------------------

def scenario(**message):
    m = {"id": "m1", "tenant_id": "t", "user_id": "u", "content": "c", "timestamp": "2026-01-01T00:00:00Z", **message}
    return json.dumps({"name": "s", "messages": [m]})


@pytest.mark.parametrize("raw, fragment", [
    ("[" * 100_000 + "]" * 100_000, "f.json: JSON nested too deeply"),
    ('{"name": "s", "messages": [], "x": ' + "[" * (MAX_JSON_DEPTH + 5) + "]" * (MAX_JSON_DEPTH + 5) + "}",
     "f.json: x[0][0]"),
    (scenario(importance=0.5).replace("0.5", "1" * 5000), "f.json: unusable JSON value: a number has more than 4,300"),
    (scenario(importance=0.5).replace("0.5", "NaN"), "NaN is not a number JSON allows"),
    (scenario(importance=0.5).replace("0.5", "-Infinity"), "-Infinity is not a number JSON allows"),
    (scenario(content="a@b").replace("@", "\\ud800"), "f.json: messages[0].content: lone surrogate '\\ud800'"),
    (scenario(id="m@").replace("@", "\\udc00"), "f.json: messages[0].id: lone surrogate"),
    (scenario(timestamp="0000-01-01T00:00:00Z"), "f.json: messages[0] (id 'm1'): timestamp is not an ISO-8601 time"),
    (scenario(timestamp="9999-12-31T23:59:59-01:00"), "messages[0] (id 'm1'): timestamp is out of range"),
])
def test_hostile_json_names_file_item_and_field(raw, fragment):
    with pytest.raises(DataFileError) as info:
        parse_scenario(raw, source="f.json")
    assert fragment in str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_a_valid_surrogate_pair_is_text_not_a_lone_surrogate():
    s = parse_scenario(scenario(content="smile @").replace("@", "\\ud83d\\ude00"), source="f.json")
    assert s.messages[0].content == "smile \U0001F600"


def test_nfc_and_nfd_message_ids_are_one_id():
    data = json.loads(scenario(id=NFC))
    data["messages"].append({**data["messages"][0], "id": NFD, "content": "d"})
    with pytest.raises(DataFileError, match="repeats an earlier message id"):
        parse_scenario(json.dumps(data), source="f.json")
    data["messages"].pop()
    data["queries"] = [{"id": "q1", "tenant_id": "t", "user_id": "u", "query": "c", "relevant": [NFD]}]
    s = parse_scenario(json.dumps(data), source="f.json")
    assert s.queries[0].relevant == [NFC] and s.messages[0].id == NFC


# --- sweeps, synth, config ------------------------------------------------------------------

@pytest.mark.parametrize("spec, fragment", [
    ("0:1:1e-9", "gives 1,000,000,000 values; the limit is 1,000"), ("0:1:1e-300", "about 1e+300 values"),
    ("0:inf:0.1", "the stop of '0:inf:0.1' must be a finite number"), ("-inf:1:0.1", "the start"),
    ("0:1:nan", "the step"), ("nan", "nan is not a finite number"), ("1e5000", "inf is not a finite number"),
    (",".join(["0.5"] * (MAX_SWEEP_POINTS + 1)), "the comma list gives 1,001 values"),
    ([0.5] * (MAX_SWEEP_POINTS + 1), "the sequence gives more than 1,000 values"),
])
def test_sweep_ranges_are_bounded_and_finite(spec, fragment):
    with pytest.raises(InputError) as info:
        parse_range(spec, name="threshold")
    assert str(info.value).startswith("threshold: ") and fragment in str(info.value)


def test_an_endless_iterator_is_refused_without_being_exhausted():
    with pytest.raises(InputError, match="more than 1,000"):
        parse_range(iter(lambda: 0.5, None), name="threshold")


def test_the_largest_allowed_range_and_grid_pass():
    assert len(parse_range(f"0:1:{1 / (MAX_SWEEP_POINTS - 1)}", name="threshold")) == MAX_SWEEP_POINTS
    validate_options(thresholds="0:1:0.01", top_ks="1:99:1", decay_rates="0")  # 101 x 99 = 9,999 settings
    with pytest.raises(InputError, match=f"the limit is {MAX_SWEEP_SETTINGS:,}"):
        validate_options(thresholds="0:1:0.01", top_ks="1:100:1", decay_rates="0")


@pytest.mark.parametrize("kw, fragment", [
    ({"users": MAX_USERS + 1}, "users must be a whole number in [1, 1,000]"),
    ({"users": 10**12}, "users must be a whole number"),
    ({"messages": MAX_MESSAGES + 1}, "messages must be a whole number in [1, 100,000]"),
    ({"users": 1000, "messages": MAX_MESSAGES}, f"at most {MAX_USER_MESSAGES:,}"),
    ({"users": HUGE_INT}, "users must be a whole number in [1, 1,000], got a number of about 5000 digits"),
    ({"users": True}, "users must be a whole number"), ({"noise_share": float("nan")}, "noise_share must be in"),
], ids=_id)
def test_synth_sizes_are_bounded(kw, fragment):
    with pytest.raises(InputError) as info:
        SynthSpec(**kw)
    assert fragment in str(info.value)


def test_synth_at_its_bound_generates_quickly_enough_to_finish():
    data = generate_scenario(SynthSpec(users=20, tenants=2, messages=20_000, seed=1))
    assert len(data["messages"]) == 20_000
    stale = sum(m["labels"] == ["stale"] for m in data["messages"])
    assert stale > 0


@pytest.mark.parametrize("field", ["top_k", "threshold", "token_budget"])
def test_config_rejects_5000_digit_ints_without_overflow(field):
    with pytest.raises(ConfigError, match=f"MemoryConfig.{field} must be in .* about 5000 digits"):
        MemoryConfig(**{field: HUGE_INT})
    assert math.isfinite(MemoryConfig().threshold)
