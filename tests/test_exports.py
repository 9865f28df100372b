"""CSV exports a spreadsheet opens safely (issue 28): no cell of any CSV the lab or the CLI writes is a formula.

OWASP's rule: a text cell beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a ``'`` in
front. Fed messages (and a dataset name) beginning with each of them, the lab's candidate, inspector and study CSVs
and the CLI's ``study --out x.csv`` hold 0 formula cells; numbers stay numbers; the JSON keeps the raw text.
"""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from pathlib import Path

import pandas as pd
import pytest

from cli_inprocess import run_cli
from memory import (
    LexicalEmbedder, MemoryConfig, MemoryManager, Message, StoreLocation, csv_bytes, formula_safe, govern, write_csv,
)
from memory.core.exports import FORMULA_PREFIXES, formula_safe_frame
from memory.eval import run_study

from lab import teaching, views

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = [f"{p}cmd|' /C calc'!A0 budget {i}" for i, p in enumerate(FORMULA_PREFIXES)] + [
    "=HYPERLINK(\"https://evil.example\", \"budget\")", "@SUM(1+1) budget", "-2+3 budget", "+1 budget"]


def formula_cells(data: bytes | str) -> list[str]:
    """The cells a spreadsheet would evaluate: text beginning with a formula character that is not a number."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    found = []
    for row in csv.reader(io.StringIO(text, newline="")):
        for cell in row:
            if cell.startswith(FORMULA_PREFIXES):
                try:
                    float(cell)
                except ValueError:
                    found.append(cell)
    return found


def test_formula_safe_quotes_text_and_leaves_numbers():
    for prefix in FORMULA_PREFIXES:
        assert formula_safe(prefix + "x") == "'" + prefix + "x"
    assert formula_safe("budget = 3") == "budget = 3" and formula_safe("") == ""
    assert formula_safe(-0.5) == -0.5 and formula_safe(3) == 3 and formula_safe(None) is None
    frame = pd.DataFrame({"text": ["=1+1", "ok", None], "n": [-0.5, 1.0, 2.0], "mixed": ["-x", 2, -3.5],
                          "=head": [1, 2, 3]})
    safe = formula_safe_frame(frame)
    assert safe["text"].tolist()[:2] == ["'=1+1", "ok"] and safe["text"].isna().tolist()[2]
    assert safe["n"].tolist() == [-0.5, 1.0, 2.0] and safe["mixed"].tolist() == ["'-x", 2, -3.5]
    assert list(safe.columns) == ["text", "n", "mixed", "'=head"]
    assert frame["text"][0] == "=1+1", "a copy"
    written = csv_bytes(frame).decode()
    assert formula_cells(written) == [] and "-0.5" in written.splitlines()[1]


def test_formula_cells_counts_what_a_spreadsheet_runs():
    raw = pd.DataFrame({"content": HOSTILE, "n": range(len(HOSTILE))}).to_csv(index=False, lineterminator="\r\n")
    assert len(formula_cells(raw)) == len(HOSTILE), "the check itself sees every formula of an unguarded CSV"


@pytest.fixture(scope="module")
def hostile_lab():
    """A manager (lexical, in memory) holding one user's messages, each beginning with a formula character."""
    manager = MemoryManager(MemoryConfig(threshold=0.0, top_k=50), embedder=LexicalEmbedder(),
                            location=StoreLocation(), workspace=f"exports-{uuid.uuid4().hex[:8]}")
    manager.add_many([Message(tenant_id="=acme", user_id="@bob", content=text, id=f"-m{i}", timestamp=1_000.0 + i)
                      for i, text in enumerate(HOSTILE)])
    return manager


def test_the_lab_candidate_csv_has_no_formula_cell(hostile_lab):
    candidates = hostile_lab.candidates("budget", tenant_id="=acme", user_id="@bob", as_of=2_000.0, pool=100)
    result = govern(candidates, hostile_lab.config)
    frame = views.candidate_frame(result, lambda record: ())
    assert len(frame) == len(HOSTILE)
    assert len(formula_cells(frame.to_csv(index=False))) >= len(HOSTILE), "unguarded, the page's table runs"
    assert formula_cells(teaching.candidate_csv(frame)) == []


def test_the_inspector_csv_has_no_formula_cell(hostile_lab):
    frame = views.records_frame(hostile_lab.records(tenant_id="=acme", user_id="@bob"), {})
    assert len(formula_cells(frame.to_csv(index=False))) >= len(HOSTILE)
    assert formula_cells(csv_bytes(frame)) == []  # what lab/pages/inspector.py offers


@pytest.fixture(scope="module")
def hostile_scenario(tmp_path_factory) -> Path:
    scenario = json.loads((ROOT / "memory" / "scenarios" / "workshop_en.json").read_text(encoding="utf-8"))
    scenario["name"] = "=HYPERLINK(\"https://evil.example\")"
    for message, text in zip(scenario["messages"], HOSTILE):
        message["content"] = text
        message["labels"] = ["-label"]
    path = tmp_path_factory.mktemp("exports") / "hostile.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return path


def test_the_study_csv_has_no_formula_cell_and_the_json_keeps_the_text(hostile_scenario, tmp_path):
    result = run_study(str(hostile_scenario), mode="lexical", thresholds="0.2,0.4", top_ks="3")
    frame = result.to_frame()
    assert formula_cells(frame.to_csv(index=False)), "the dataset's name is a formula, unguarded"
    assert formula_cells(csv_bytes(frame)) == []  # what lab/pages/study.py offers
    assert formula_cells(write_csv(frame, tmp_path / "sub" / "s.csv").read_bytes()) == []
    assert result.to_dict()["dataset"] == "=HYPERLINK(\"https://evil.example\")", "JSON keeps the raw text"


def test_the_cli_study_csv_has_no_formula_cell(hostile_scenario, tmp_path):
    out, as_json = tmp_path / "w.csv", tmp_path / "w.json"
    for path in (out, as_json):
        proc = run_cli("study", "--dataset", str(hostile_scenario), "--mode", "lexical", "--threshold", "0.2,0.4",
                       "--top-k", "3", "--out", str(path), cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    assert len(rows) == 2 and rows[0]["dataset"] == "'=HYPERLINK(\"https://evil.example\")"
    assert float(rows[0]["threshold"]) == 0.2 and formula_cells(out.read_bytes()) == []
    assert json.loads(as_json.read_text())["dataset"] == "=HYPERLINK(\"https://evil.example\")"


def test_every_csv_is_written_through_the_helper():
    """The lab and the library write CSV only through memory.core.exports (csv_bytes, write_csv): no other to_csv or
    csv writer anywhere else (StudyResult.write, which the CLI's study --out x.csv uses, included), so a new export
    cannot skip the rule."""
    found = []
    helper = ROOT / "memory" / "core" / "exports.py"
    for path in sorted([*ROOT.glob("lab/**/*.py"), ROOT / "app.py", *ROOT.glob("memory/**/*.py")]):
        if path == helper:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.to_csv\(|csv\.(writer|DictWriter)\(", line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], found
