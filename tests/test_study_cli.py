"""`python -m memory study`: exit codes, one-line errors, JSON shape, --out. One bad input runs through a real
``python -m memory study`` subprocess; the others run the command in the test process (tests/cli_inprocess.py)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_inprocess import run_cli
from locomo_data import require_locomo

ROOT = Path(__file__).resolve().parent.parent


def study_process(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memory", "study", *args], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def study(*args: str) -> subprocess.CompletedProcess:
    return run_cli("study", *args, cwd=ROOT)


def check_shape(data: dict) -> None:
    assert {"dataset", "unit", "mode", "embedder", "questions", "at_k", "sweep", "recommended"} <= data.keys()
    assert set(data["at_k"]) == {"1", "5", "10"}
    assert all({"recall", "precision"} <= set(v) for v in data["at_k"].values())
    for row in data["sweep"]:
        assert {"threshold", "top_k", "decay_rate", "precision", "recall", "f1", "avg_injected",
                "no_answer_empty_rate", "forbidden_hits"} <= row.keys()
    assert {"rule", "description", "found"} <= data["recommended"].keys()


def check_one_line_exit(proc: subprocess.CompletedProcess, words: list[str]) -> None:
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "it/s" not in ln]
    assert len(lines) == 1, proc.stderr
    assert all(w in lines[0] for w in words), lines[0]
    assert proc.stdout == ""


def test_lexical_study_of_a_shipped_scenario_as_json(tmp_path):
    out = tmp_path / "w.csv"
    proc = study("--dataset", "memory/scenarios/workshop_en.json", "--mode", "lexical", "--threshold", "0.2:0.8:0.2",
                 "--top-k", "3,5", "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    check_shape(data)
    assert (data["dataset"], data["mode"], data["embedder"], data["questions"]) == ("workshop-en", "lexical", None, 16)
    assert [(r["threshold"], r["top_k"]) for r in data["sweep"]] == [
        (t, k) for k in (3, 5) for t in (0.2, 0.4, 0.6, 0.8)]
    assert data["recommended"]["found"] and data["recommended"]["rule"] == "f1"
    with out.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 8 and float(rows[0]["recall"]) == data["sweep"][0]["recall"]
    assert "written:" in proc.stderr


@pytest.mark.model
def test_dense_study_with_minilm_and_a_precision_rule(tmp_path):
    out = tmp_path / "s.json"
    proc = study("--dataset", "seed_demo_zh", "--threshold", "0.2,0.4", "--top-k", "5", "--decay-rate", "0,0.1",
                 "--rule", "precision@recall>=0.5", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "recommended (precision@recall>=0.5" in proc.stdout and "recall@10" in proc.stdout
    data = json.loads(out.read_text())
    check_shape(data)
    assert data["embedder"] == "minilm" and data["mode"] == "dense" and len(data["sweep"]) == 4
    assert "study:" in proc.stderr  # the tqdm bar (the temp folder's name holds "study" too)


def test_locomo_facts_study(tmp_path):
    path = require_locomo()
    proc = study("--dataset", f"locomo:{path}", "--unit", "facts", "--mode", "lexical", "--threshold", "0.5",
                 "--top-k", "10", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    check_shape(data)
    assert data["unit"] == "facts" and data["questions"] == 304 and data["no_answer"] > 0
    assert data["dataset_notes"]["evidence_without_facts"] > 0


@pytest.mark.parametrize("args, words", [
    (["--dataset", "workshop_en", "--threshold", "0.9:0.1:0.1"], ["threshold", "empty"]),
    (["--dataset", "workshop_en", "--top-k", ""], ["top_k", "empty"]),
    (["--dataset", "workshop_en", "--rule", "best"], ["rule must be"]),
    (["--dataset", "workshop_en", "--out", "x.txt"], [".json or .csv"]),
    (["--dataset", "workshop_en", "--mode", "sparse"], ["invalid choice"]),
    (["--dataset", "locomo:/nonexistent/locomo.json", "--mode", "lexical"], ["/nonexistent/locomo.json", "cannot read"]),
    (["--dataset", "workshop_en", "--unit", "facts", "--mode", "lexical"], ["needs a LoCoMo dataset"]),
])
def test_bad_input_exits_2_with_one_line(args, words):
    check_one_line_exit(study(*args), words)


@pytest.mark.process
def test_bad_input_through_a_real_process_exits_2_with_one_line():
    """A bad sweep range through ``python -m memory study`` in a new interpreter: the process exits 2 with one line
    on its stderr and nothing on its stdout."""
    check_one_line_exit(study_process("--dataset", "workshop_en", "--threshold", "0.5,2"), ["threshold", "must be in"])


def test_a_malformed_dataset_names_file_item_and_field(tmp_path):
    bad = tmp_path / "bad-locomo.json"
    bad.write_text(json.dumps([{"sample_id": "s1", "conversation": {
        "session_1_date_time": "9:00 am on 2 March, 2024",
        "session_1": [{"speaker": "Ada", "dia_id": "D1:1"}]}, "qa": []}]))
    proc = study("--dataset", f"locomo:{bad}", "--mode", "lexical")
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert str(bad) in line and "conversation.session_1[0] (dia_id 'D1:1')" in line and "'text'" in line
