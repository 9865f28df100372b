"""AppTest: the study page against memory.eval.study.run_study, its caching, and its messages for bad input.

Cheap where the model does not matter: shipped scenarios with the lexical embedder, the LoCoMo sample in
lexical (BM25) mode. One test uses the real MiniLM (the ``minilm`` fixture) on a shipped scenario.
Fixtures and helpers come from tests/test_app.py.
"""

from __future__ import annotations

import json
import math

import pytest

import memory.eval.ranking
from memory.eval.calibration import compare
from memory.eval.datasets import load_dataset
from memory.core.scenario import shipped_scenarios
from memory.eval.study import run_study

from lab.state import KNOBS
from locomo_data import require_locomo
from test_app import frame_with, lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

PAGE = "lab/pages/study.py"
WORKSHOP = str(shipped_scenarios()["workshop_en"])


def _shown_point(at) -> dict:
    return {"threshold": float(metric(at, "Similarity threshold")), "top_k": int(metric(at, "top_k")),
            "decay_rate": float(metric(at, "Decay rate (per day)")), "precision": metric(at, "Precision"),
            "recall": metric(at, "Recall"), "f1": metric(at, "F1")}


def _point(result) -> dict:
    row = result.recommended.row
    return {"threshold": row.threshold, "top_k": row.top_k, "decay_rate": row.decay_rate,
            "precision": f"{row.precision:.3f}", "recall": f"{row.recall:.3f}", "f1": f"{row.f1:.3f}"}


def _count_rank(monkeypatch) -> list[str]:
    calls = []
    original = memory.eval.rank

    def counting(dataset, **kw):
        calls.append(kw.get("mode"))
        return original(dataset, **kw)

    monkeypatch.setattr(memory.eval, "rank", counting)  # the lab's study page calls it from the public surface
    return calls


def test_shipped_scenario_shows_run_studys_recommended_point(monkeypatch):
    expected = run_study(WORKSHOP, mode="dense", embedder="lexical")
    calls = _count_rank(monkeypatch)
    at = open_app(PAGE, embedder="lexical")
    assert _shown_point(at) == _point(expected)
    assert "Rule f1: highest F1" in texts(at.caption)
    assert int(metric(at, "Questions")) == expected.questions and int(metric(at, "No-answer")) == expected.no_answer
    table = frame_with(at, "f1")
    frame = expected.to_frame()
    assert len(table) == len(frame) == 17 * 2
    assert table[["threshold", "top_k", "precision", "recall", "f1"]].equals(
        frame[["threshold", "top_k", "precision", "recall", "f1"]])
    assert [b.label for b in at.get("download_button")] == ["Download the settings file", "Download CSV",
                                                            "Download JSON", "Download report"]  # the first:
    # lab/agents.py; the last: the study as report.md and its charts (lab/report.py, tests/test_slides.py)
    ranked = list(calls)
    assert ranked.count("dense") == 1, "the current study is ranked once"
    at.button(key="study.run").click().run()
    at.text_input(key="study.thresholds").input("0.2:0.6:0.1").run()
    assert not at.exception
    assert calls == ranked, "re-running the page or changing ranges must not rank again"
    narrow = run_study(WORKSHOP, mode="dense", embedder="lexical", thresholds="0.2:0.6:0.1")
    assert _shown_point(at) == _point(narrow)
    assert len(frame_with(at, "f1")) == 5 * 2


def test_precision_rule_mode_and_token_budget_follow_run_study():
    at = open_app(PAGE, embedder="lexical", mode="hybrid")
    assert at.number_input(key="study.min_recall").disabled
    at.selectbox(key="study.rule").set_value("precision").run()
    at.number_input(key="study.min_recall").set_value(0.6)
    at.checkbox(key="study.budget").check()
    at.text_input(key="study.top_ks").input("3,5").run()
    assert not at.exception
    expected = run_study(WORKSHOP, mode="hybrid", embedder="lexical", top_ks="3,5", rule="precision@recall>=0.6",
                         token_budget=400)
    assert _shown_point(at) == _point(expected)
    assert "precision@recall>=0.6" in texts(at.caption)


@pytest.mark.parametrize("field, value, fragment", [
    ("study.thresholds", "", "the range is empty"),
    ("study.thresholds", "0.9:0.1:0.1", "empty (start > stop)"),
    ("study.top_ks", "0", "top_k"),
    ("study.decays", "0,abc", "not a number"),
    ("study.thresholds", "0:1:1e-9", "gives 1,000,000,000 values; the limit is 1,000"),  # once exhausted memory
    ("study.thresholds", "0:1:0.0001", "gives 10,001 values; the limit is 1,000"),  # once blocked a session 47 s
])
def test_empty_or_bad_range_shows_a_message_not_a_chart(field, value, fragment):
    at = open_app(PAGE, embedder="lexical")
    at.text_input(key=field).input(value).run()
    assert not at.exception
    assert fragment in texts(at.warning), texts(at.warning)
    assert not [m for m in at.metric if m.label == "F1"], "no results may be drawn for a bad range"
    assert not at.get("plotly_chart")


def test_apply_puts_the_recommended_point_into_the_sidebar():
    at = open_app(PAGE, embedder="lexical")
    point = _shown_point(at)
    at.button(key="study.apply").click().run()
    assert not at.exception
    for key in ("threshold", "top_k", "decay_rate"):
        assert math.isclose(at.sidebar.slider(key=key).value, point[key]), key
    assert at.session_state["lab.settings"].config.threshold == point["threshold"]
    assert "The sidebar now has threshold" in texts(at.success)
    knob = {k.key: k for k in KNOBS}["top_k"]
    assert knob.bounds[0] <= point["top_k"] <= knob.bounds[1]


def test_compare_overlays_a_second_mode():
    at = open_app(PAGE, embedder="lexical")
    at.selectbox(key="study.other").set_value(("lexical", "lexical")).run()
    assert not at.exception
    rows = frame_with(at, "configuration").set_index("configuration")
    for name, mode in (("dense · lexical (current)", "dense"), ("lexical", "lexical")):
        row = run_study(WORKSHOP, mode=mode, embedder="lexical").recommended.row
        assert rows.loc[name, "threshold"] == row.threshold and rows.loc[name, "f1"] == f"{row.f1:.3f}", mode
    assert len(at.get("plotly_chart")) == 6, "four study figures, the comparison and the score distributions"


def test_minilm_study_and_comparison(minilm):
    """The one MiniLM study test: a shipped scenario, dense vs hybrid."""
    at = open_app(PAGE, embedder="minilm")
    assert _shown_point(at) == _point(run_study(WORKSHOP, mode="dense", embedder=minilm))
    at.selectbox(key="study.other").set_value(("hybrid", "minilm")).run()
    row = run_study(WORKSHOP, mode="hybrid", embedder=minilm).recommended.row
    assert frame_with(at, "configuration").set_index("configuration").loc["hybrid · minilm", "f1"] == f"{row.f1:.3f}"


def test_comparing_another_embedder_shows_its_recall_and_threshold(minilm):
    """Same mode, another model: its recall@k and the threshold keeping the chosen share of relevant pairs, as
    memory.eval.calibration.compare computes them on the same file."""
    at = open_app(PAGE, embedder="minilm")
    at.selectbox(key="study.other").set_value(("dense", "e5")).run()
    assert not at.exception, [e.value for e in at.exception]
    expected = {c.embedder: c for c in compare(load_dataset(WORKSHOP), runs=[("dense", "minilm"), ("dense", "e5")])}
    rows = frame_with(at, "configuration").set_index("configuration")
    for name, model in (("dense · minilm (current)", "minilm"), ("dense · e5", "e5")):
        assert rows.loc[name, "recall@1"] == f"{expected[model].at_k[1].recall:.3f}", name
    target = at.slider(key="study.target_recall").value
    thresholds = frame_with(at, f"threshold keeping {target:.0%}").set_index("configuration")
    for name, model in (("dense · minilm (current)", "minilm"), ("dense · e5", "e5")):
        assert thresholds.loc[name, f"threshold keeping {target:.0%}"] == \
            f"{expected[model].threshold_for_recall(target):.3f}", name
    assert expected["e5"].threshold_for_recall(target) > expected["minilm"].threshold_for_recall(target) + 0.2


def test_scenario_uploaded_in_the_sidebar_can_be_studied(tmp_path, monkeypatch):
    """The sidebar's upload is offered (and preselected) on the study page; it runs on the button, like run_study
    on the same file."""
    messages = [
        ("a1", "The project budget is 300,000 dollars.", []), ("a2", "Lunch at the cafe was nice.", ["noise"]),
        ("a3", "The launch date moved to May 4.", []), ("a4", "I prefer tea over coffee.", []),
        ("a5", "The weather was grey all week.", ["noise"]), ("a6", "The budget review is on Friday.", []),
    ]
    data = json.dumps({"name": "mini-study", "language": "en", "messages": [
        {"id": i, "tenant_id": "t1", "user_id": "u1", "content": text, "timestamp": f"2026-01-0{n + 1}T00:00:00Z",
         "labels": labels} for n, (i, text, labels) in enumerate(messages)
    ], "queries": [
        {"id": "q1", "tenant_id": "t1", "user_id": "u1", "query": "what is the project budget",
         "relevant": ["a1", "a6"]},
        {"id": "q2", "tenant_id": "t1", "user_id": "u1", "query": "when is the launch", "relevant": ["a3"]},
        {"id": "q3", "tenant_id": "t1", "user_id": "u1", "query": "what does the user like to drink",
         "relevant": ["a4"]},
    ]})
    (tmp_path / "mini.json").write_text(data)
    at = open_app(embedder="lexical")
    at.sidebar.file_uploader[0].set_value(("mini.json", data.encode(), "application/json")).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert at.selectbox(key="dataset").value == "uploaded-scenario"
    assert "uploaded scenario: mini-study" in at.selectbox(key="dataset").format_func("uploaded-scenario")
    calls = _count_rank(monkeypatch)
    assert "Run study" in texts(at.info) and calls == [], "an upload waits for the button"
    assert int(metric(at, "Questions")) == 3
    at.button(key="study.run").click().run()
    assert not at.exception and calls == ["dense"]
    assert _shown_point(at) == _point(run_study(str(tmp_path / "mini.json"), mode="dense", embedder="lexical"))


def test_locomo_sample_runs_on_the_button(monkeypatch):
    sample = require_locomo()
    at = open_app(PAGE, embedder="lexical", dataset="locomo-sample", mode="lexical")
    calls = _count_rank(monkeypatch)
    assert "Run study" in texts(at.info) and calls == [], "LoCoMo waits for the button"
    assert int(metric(at, "Questions")) == 304
    at.button(key="study.run").click().run()
    assert not at.exception
    assert _shown_point(at) == _point(run_study(f"locomo:{sample}", mode="lexical"))
    at.radio(key="study.unit").set_value("facts").run()
    assert "Run study" in texts(at.info)
    at.button(key="study.run").click().run()
    assert _shown_point(at) == _point(run_study(f"locomo:{sample}", mode="lexical", unit="facts"))
    assert calls == ["lexical", "lexical"]


def test_missing_sample_is_noted(monkeypatch, tmp_path):
    import lab

    monkeypatch.setattr(lab, "LOCOMO_SAMPLE", tmp_path / "nowhere" / "locomo-sample.json")
    at = open_app(PAGE, embedder="lexical")
    assert "not at" in texts(at.info) and "locomo-sample.json" in texts(at.info)
    assert str(tmp_path) not in texts(at.info), "the notice names the file, never the server's folder"
    assert "locomo-sample" not in at.selectbox(key="dataset").options


def test_bad_dataset_file_shows_a_message(tmp_path, monkeypatch):
    """A malformed file of the instructor's datasets folder (MEMORY_DATASETS_DIR, tests/test_room_inputs.py) is
    named, with its item and field; there is no path field to type another."""
    monkeypatch.setenv("MEMORY_DATASETS_DIR", str(tmp_path))
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "s1", "conversation": {}, "qa": []}]', encoding="utf-8")
    at = open_app(PAGE, embedder="lexical", dataset="bad.json")
    assert not at.exception
    assert "bad.json" in texts(at.error) and "session_" in texts(at.error)
    assert str(tmp_path) not in texts(at.error), "a file of the folder is named by its name alone"
    assert not at.get("plotly_chart")
    bad.unlink()
    at.run()
    assert not at.exception and at.selectbox(key="dataset").value != "bad.json"


def test_a_participant_brings_a_locomo_file_and_studies_it(monkeypatch):
    """Issue 25, item 9: step 7 answers "which threshold for my data" for a participant's own LoCoMo-format file
    (the page's uploader, within the upload cap): the study runs on it and shows run_study's recommended point."""
    sample = require_locomo()
    with open(sample, "rb") as handle:
        raw = handle.read()
    at = open_app(PAGE, embedder="lexical", mode="lexical")
    at.file_uploader(key="study.own").set_value(("my-locomo.json", raw, "application/json")).run()
    assert not at.exception
    assert at.selectbox(key="dataset").value == "own-file"
    assert int(metric(at, "Questions")) == 304
    at.button(key="study.run").click().run()
    assert not at.exception
    assert _shown_point(at) == _point(run_study(f"locomo:{sample}", mode="lexical"))


def test_a_bad_or_oversized_own_file_is_one_line_naming_it(monkeypatch):
    at = open_app(PAGE, embedder="lexical")
    bad = b'[{"sample_id": "s1", "conversation": {}, "qa": []}]'
    at.file_uploader(key="study.own").set_value(("broken.json", bad, "application/json")).run()
    assert not at.exception
    assert "broken.json" in texts(at.error) and "session_" in texts(at.error)
    assert not at.get("plotly_chart")
    monkeypatch.setenv("MEMORY_MAX_FILE_MB", "0.01")
    at.file_uploader(key="study.own").set_value(("big.json", b" " * 20_000 + bad, "application/json")).run()
    assert not at.exception and "big.json" in texts(at.error)
    assert not at.get("plotly_chart")
