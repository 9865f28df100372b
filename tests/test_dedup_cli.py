"""`python -m memory dedup`: the shipped pair sets, both accuracies, and malformed pair files. One run is a real
``python -m memory dedup`` subprocess; the others run the command in the test process (tests/cli_inprocess.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_inprocess import run_cli
from memory.eval.pairs import evaluate_pairs, load_pairs, parse_pairs, shipped_pair_files
from memory.core.errors import DataFileError

ROOT = Path(__file__).resolve().parent.parent


def _process(*args):
    return subprocess.run([sys.executable, "-m", "memory", "dedup", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def _cli(*args):
    return run_cli("dedup", *args, cwd=ROOT)


@pytest.mark.model
@pytest.mark.parametrize("name", ["dedup_pairs_en", "dedup_pairs_zh"])
def test_cli_json_governed_beats_plain_without_losing_or_retiring(name):
    path = shipped_pair_files()[name]
    run = _cli("--pairs", str(path), "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    pairs = json.loads(path.read_text(encoding="utf-8"))
    assert len(out["pairs"]) == out["labelled"] == len(pairs) >= 30
    assert {p["expected"] for p in pairs} == {"duplicate", "update", "coexist", "new"}
    assert out["accuracy"]["governed"] > out["accuracy"]["plain"]
    governed = out["errors"]["governed"]
    assert governed["silent_loss"] == 0, "an update was taken for a duplicate"
    assert governed["wrong_retire"] == 0, "a coexisting or new fact retired a valid one"
    assert out["errors"]["plain"]["silent_loss"] + out["errors"]["plain"]["wrong_retire"] > 0  # the plain rule does fail
    row = out["pairs"][0]
    assert set(row) >= {"id", "similarity", "plain_rule", "decision", "reason", "expected"}
    assert row["plain_rule"] in {"duplicate", "update", "new"} and row["reason"]


@pytest.mark.process
def test_cli_text_prints_both_accuracies(tmp_path):
    """``python -m memory dedup`` end to end in a new interpreter: exit 0, the table and both accuracies on stdout."""
    pairs = tmp_path / "p.json"
    pairs.write_text(json.dumps([
        {"id": "a", "existing": "The campaign budget is 500,000 yuan.", "incoming": "The campaign budget is 300,000 yuan.",
         "expected": "update"},
        {"id": "b", "existing": "The user lives in Hangzhou.", "incoming": "Hangzhou is where the user lives.",
         "expected": "duplicate"},
        {"id": "c", "existing": "The user lives in Hangzhou.", "incoming": "The user works as a nurse."},
    ]), encoding="utf-8")
    run = _process("--pairs", str(pairs), "--embedder", "lexical")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].split()[:5] == ["id", "similarity", "plain_rule", "decision", "expected"]
    assert any(line.startswith("accuracy plain:") for line in lines)
    governed = [line for line in lines if line.startswith("accuracy governed:")]
    assert governed and "1.000 (2/2)" in governed[0]  # the unlabelled pair is listed, not scored
    assert any(line.split()[0] == "c" for line in lines[1:4])


@pytest.mark.parametrize("content, words", [
    ('[{"id": "p1", "existing": "a"}]', ["pairs[0] (id 'p1')", "'incoming'", "required"]),
    ('[{"id": "p1", "existing": "a", "incoming": "b", "expected": "maybe"}]', ["pairs[0]", "'expected'", "maybe"]),
    ('[{"id": "p1", "existing": 5, "incoming": "b"}]', ["pairs[0]", "'existing'"]),
    ('[{"id": "p1", "existing": " ", "incoming": "b"}]', ["pairs[0]", "'existing' is empty"]),
    ('[{"id": "p1", "existing": "a", "incoming": "b"}, {"id": "p1", "existing": "a", "incoming": "b"}]', ["pairs[1]", "repeats"]),
    ('{"pairs": []}', ["top level must be a JSON list"]),
    ("[]", ["no pairs"]),
    ('[{"id": "p1", ', ["invalid JSON", "line 1"]),
])
def test_cli_malformed_pair_file_exits_2_with_one_line(tmp_path, content, words):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    run = _cli("--pairs", str(bad), "--embedder", "lexical")
    assert run.returncode == 2 and run.stdout == ""
    message = run.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in run.stderr
    assert str(bad) in message and all(w in message for w in words), message


def test_cli_missing_file_and_missing_option():
    run = _cli("--pairs", "/nonexistent/pairs.json", "--embedder", "lexical")
    assert run.returncode == 2 and "cannot read pair file" in run.stderr
    run = _cli()
    assert run.returncode == 2 and "--pairs" in run.stderr


def test_parse_pairs_names_file_item_and_field():
    with pytest.raises(DataFileError, match=r"upload\.json: pairs\[1\] \(id 'x'\): field 'incoming' is required"):
        parse_pairs('[{"id": "w", "existing": "a", "incoming": "b"}, {"id": "x", "existing": "a"}]', source="upload.json")
    assert [p.id for p in parse_pairs('[{"id": "w", "existing": "a", "incoming": "b", "note": "kept"}]', source="s")] == ["w"]


def test_evaluate_in_process_matches_the_shipped_labels(minilm):
    report = evaluate_pairs(load_pairs(shipped_pair_files()["dedup_pairs_en"]), embedder=minilm)
    assert report.accuracy("governed") > report.accuracy("plain")
    by_id = {r.id: r for r in report.results}
    # the three traps
    assert (by_id["p12"].plain_rule, by_id["p12"].decision) == ("duplicate", "update")
    assert (by_id["p13"].plain_rule, by_id["p13"].decision) == ("new", "update")
    assert (by_id["p23"].plain_rule, by_id["p23"].decision) == ("update", "coexist")


@pytest.mark.model
def test_cli_judges_e5_pairs_with_the_bands_on_e5s_scale():
    """MemoryConfig's dedup bands are on MiniLM's scale; ``dedup --embedder e5`` carries them to e5's scale for the
    pairs' language, as the write path does (it judged e5's cosines with MiniLM's bands: 203 of 240 plain-rule
    decisions changed)."""
    from memory import MemoryConfig
    from memory.eval.calibration import config_for

    path = shipped_pair_files()["dedup_pairs_zh"]
    run = _cli("--pairs", str(path), "--embedder", "e5", "--json")
    assert run.returncode == 0, run.stderr
    bands = json.loads(run.stdout)["config"]
    expected = config_for("e5", language="zh")
    assert bands == {"duplicate_band": expected.duplicate_band, "conflict_band": expected.conflict_band}
    assert bands != {"duplicate_band": MemoryConfig().duplicate_band, "conflict_band": MemoryConfig().conflict_band}
