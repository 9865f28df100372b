"""The operating-point file (memory/eval/operating_point.py): a study's answer that the library, the CLI, the lab and
the agent adapters load. The file's checks need no model; the study -> file -> recall round trip uses MiniLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_inprocess import run_cli

from memory import DEFAULT_JUDGE, DataFileError, InputError, MemoryConfig, StoreLocation
from memory.core.scenario import load_scenario, shipped_scenarios
from memory.eval import OperatingPoint, load_operating_point, operating_point_from_study, parse_operating_point, run_study
from memory.eval.conformance import plain_judge
from memory.write.adjudicate import judge_reason

ROOT = Path(__file__).resolve().parent.parent
POINT = OperatingPoint("minilm", "facts", "rules", MemoryConfig(threshold=0.42, top_k=4, decay_rate=0.0),
                       {"dataset": "workshop-en", "rule": "f1", "recall": 0.5, "questions": 16})
GOOD = json.loads(POINT.dumps("json"))


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_a_point_round_trips_through_its_file(tmp_path, fmt):
    path = POINT.save(tmp_path / f"point.{fmt}")
    assert load_operating_point(path) == POINT
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary file left behind"


def test_a_file_may_name_only_some_fields():
    point = parse_operating_point(json.dumps({"format": GOOD["format"], "version": 1, "embedder": "e5",
                                              "config": {"threshold": 0.82}}))
    assert (point.embedder, point.write_path, point.judge) == ("e5", "facts", DEFAULT_JUDGE) == ("e5", "facts", "learned")
    assert point.config == MemoryConfig(threshold=0.82)


def _with(**changes):
    data = json.loads(json.dumps(GOOD))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        target = data
        for name in parents:
            target = target[name]
        if value is ...:
            del target[last]
        else:
            target[last] = value
    return json.dumps(data)


@pytest.mark.parametrize("text, named", [
    ("[1]", "an object"),
    (_with(format="something-else"), "format"),
    (_with(version=2), "version"),
    (_with(extra=1), "'extra'"),
    (_with(embedder="gpt-4"), "embedder"),
    (_with(embedder=...), "embedder"),
    (_with(write_path="everything"), "write_path"),
    (_with(judge="llm"), "judge"),
    (_with(config=[0.3]), "config"),
    (_with(config__threshold=1.5), "threshold"),
    (_with(config__threshold="0.3"), "config.threshold"),
    (_with(config__threshold=True), "config.threshold"),
    (_with(config__treshold=0.3), "config.treshold"),
    (_with(config__top_k=0), "top_k"),
    (_with(provenance__recall="high"), "provenance.recall"),
    (_with(provenance__author="me"), "provenance.author"),
    ('{"format": "memory-governance-lab/operating-point", "version": 1, "embedder": "minilm", "config": '
     '{"threshold": NaN}}', "NaN"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_field(text, named):
    with pytest.raises(DataFileError) as caught:
        parse_operating_point(text, source="/srv/private/point.json")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("point.json: ") and named in message, message
    assert "/srv/private" not in message


def test_bad_toml_and_bad_bytes_are_one_line_errors():
    for raw, toml, named in ((b"threshold = = 1", True, "not TOML"), (b"\xff\xfe{", False, "UTF-8"),
                             (b"\xff", True, "UTF-8")):
        with pytest.raises(DataFileError, match=named):
            parse_operating_point(raw, source="p", toml=toml)


def test_the_judge_and_the_model_it_names_are_the_ones_used(lexical):
    assert OperatingPoint(judge="rules").make_judge() is judge_reason
    assert OperatingPoint(judge="bands").make_judge() is plain_judge
    with pytest.raises(InputError, match="minilm's scale"):
        OperatingPoint("minilm").open(embedder=lexical)
    manager, ingestor = OperatingPoint("lexical", "raw").open(embedder=lexical)  # in memory
    assert ingestor is None and manager.config == MemoryConfig() and manager.embedder is lexical


def test_cli_recall_refuses_a_bad_settings_file_in_one_line(tmp_path):
    bad = tmp_path / "point.json"
    bad.write_text(_with(config__threshold=7), encoding="utf-8")
    done = run_cli("recall", "--scenario", "memory/scenarios/workshop_en.json", "--tenant", "acme", "--user", "alice",
                   "--query", "budget", "--settings", str(bad), cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "config" in done.stderr, done.stderr
    done = run_cli("study", "--dataset", "workshop_en", "--mode", "lexical", "--export-point", str(tmp_path / "p.json"),
                   cwd=ROOT)
    assert done.returncode == 2 and "--mode dense" in done.stderr and not (tmp_path / "p.json").exists()


def test_a_study_exports_its_recommended_point_and_the_cli_recalls_with_it(minilm, tmp_path):
    """study --export-point writes the recommended setting; recall --settings uses that model and that config, and
    gives what the library gives with OperatingPoint.open on the same file."""
    out = tmp_path / "point.toml"
    done = run_cli("study", "--dataset", "workshop_en", "--threshold", "0.2:0.6:0.1", "--top-k", "3,5",
                   "--write-path", "raw", "--export-point", str(out), "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    study = json.loads(done.stdout)
    point = load_operating_point(out)
    chosen = study["recommended"]
    assert (point.config.threshold, point.config.top_k) == (chosen["threshold"], chosen["top_k"])
    assert (point.embedder, point.write_path, point.provenance["dataset"]) == ("minilm", "raw", "workshop-en")
    assert point.provenance["f1"] == pytest.approx(chosen["f1"], abs=1e-6)

    query = "What is the campaign budget now?"
    done = run_cli("recall", "--scenario", "memory/scenarios/workshop_en.json", "--tenant", "acme", "--user", "alice",
                   "--query", query, "--settings", str(out), "--json", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    assert cli["config"] == point.config.to_dict()

    scenario = load_scenario(shipped_scenarios()["workshop_en"])
    manager, ingestor = point.open(location=StoreLocation(data_dir=tmp_path / "lib"), embedder=minilm)
    assert ingestor is None
    manager.add_many(list(scenario.messages))
    mine = manager.retrieve(query, tenant_id="acme", user_id="alice", as_of=scenario.last_time, reinforce=False)
    assert [h["id"] for h in cli["governed"]] == [h.record.message_id or h.record.memory_id for h in mine.governed]
    assert len(cli["governed"]) <= point.config.top_k


def test_a_study_without_a_recommendation_or_a_model_exports_nothing():
    result = run_study("workshop_en", mode="lexical", thresholds=[0.3], top_ks=[5], decay_rates=[0])
    with pytest.raises(InputError, match="dense"):
        operating_point_from_study(result)
