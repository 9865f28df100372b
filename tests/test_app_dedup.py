"""AppTest: the dedup page against memory.eval.pairs's own computation, and its pure parts (lab.dedup, figures).

Real parts: the real MiniLM (the ``minilm`` fixture; the app's cache wraps the same process-wide model) where
the plain rule's failures depend on the model, the lexical embedder where only the arithmetic of the bands
is tested; real Chroma for the version chains. Fixtures and helpers come from tests/test_app.py.
"""

from __future__ import annotations

import json
import math
import uuid

import numpy as np
import pytest

from memory import DEFAULT_JUDGE, LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, make_judge
from lab.reasons import reason_in, say
from memory.write.adjudicate import judge, judge_reason, plain_rule
from memory.eval.pairs import error_kind, evaluate_pairs, load_pairs, shipped_pair_files
from memory.write.ingest import Ingestor
from memory.runtime.lifecycle import version_chain

from lab import dedup, figures
from lab.state import DEFAULTS
from test_app import frame_with, lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

PAGE = "lab/pages/dedup.py"
EN = shipped_pair_files()["dedup_pairs_en"]


def _table(at):
    return frame_with(at, "plain_error").set_index("id")


def _wrong(report) -> int:
    return sum(r.plain_rule != r.expected for r in report.labelled)


# --- the page follows memory.eval.pairs ---------------------------------------------------------------------

def test_decision_table_and_metrics_follow_memory_dedup(minilm):
    report = evaluate_pairs(load_pairs(EN), embedder=minilm, config=DEFAULTS)
    at = open_app(PAGE, embedder="minilm")
    table = _table(at)
    assert list(table.index) == [r.id for r in report.results]
    for r in report.results:
        row = table.loc[r.id]
        assert math.isclose(row["similarity"], r.similarity, abs_tol=1e-6), r.id
        assert (row["plain_rule"], row["governed"], row["expected"]) == (r.plain_rule, r.decision, r.expected), r.id
        assert row["plain_error"] == ("" if r.plain_rule == r.expected else error_kind(r.expected, r.plain_rule))
        assert row["reason"] == r.reason
    labelled = len(report.labelled)
    assert metric(at, "Plain rule accuracy") == f"{report.accuracy('plain'):.1%}"
    assert metric(at, "Governed accuracy") == f"{report.accuracy('governed'):.1%}"
    assert metric(at, "Plain wrong, these bands") == f"{_wrong(report)} / {labelled}"
    errors = frame_with(at, "what_it_does").set_index("kind")
    assert errors["plain_rule"].to_dict() == report.errors("plain")
    assert errors["governed"].to_dict() == report.errors("governed")
    assert report.errors("plain")["silent_loss"] >= 1, "MiniLM puts an update above the duplicate band"
    at.toggle(key="dedup.only_wrong").set_value(True).run()
    assert set(_table(at).index) == {r.id for r in report.labelled if r.plain_rule != r.expected}


def test_band_sliders_change_the_wrong_count_without_embedding(monkeypatch):
    pairs = load_pairs(EN)
    sims = [r.similarity for r in evaluate_pairs(pairs, embedder=LexicalEmbedder()).results]
    at = open_app(PAGE, embedder="lexical")
    calls = []
    original = LexicalEmbedder.embed
    monkeypatch.setattr(LexicalEmbedder, "embed", lambda self, batch: calls.append(len(batch)) or original(self, batch))
    shown = {}
    for conflict, duplicate in ((0.3, 0.6), (0.0, 1.0), (0.5, 0.5), (0.2, 0.95), (0.78, 0.92)):
        at.sidebar.slider(key="conflict_band").set_value(conflict)
        at.sidebar.slider(key="duplicate_band").set_value(duplicate).run()
        assert not at.exception
        config = DEFAULTS.replace(conflict_band=conflict, duplicate_band=duplicate)
        expected = sum(plain_rule(s, config) != p.expected for s, p in zip(sims, pairs))
        shown[(conflict, duplicate)] = metric(at, "Plain wrong, these bands")
        assert shown[(conflict, duplicate)] == f"{expected} / {len(pairs)}", (conflict, duplicate)
        table = _table(at)
        assert list(table["plain_rule"]) == [plain_rule(s, config) for s in sims]
        assert list(table["governed"]) == [judge(p.existing, p.incoming, s, config=config)[0] for p, s in zip(pairs, sims)]
    assert len(set(shown.values())) > 1, "moving the bands must move the count"
    assert calls == [], "a band move embedded something: similarities must come from the cache"


def test_typed_facts_show_the_budget_trap(minilm):
    at = open_app(PAGE, embedder="minilm")
    a, b = "The campaign budget is 500,000 yuan.", "The campaign budget is 300,000 yuan."
    assert (at.text_input(key="dedup.existing").value, at.text_input(key="dedup.incoming").value) == (a, b)
    vecs = minilm.embed([a, b])
    sim = float(vecs[0] @ vecs[1])
    assert metric(at, "Similarity") == f"{sim:.3f}"
    assert metric(at, "Plain rule") == plain_rule(sim, DEFAULTS) == "duplicate", "DESIGN.md: about 0.93 with MiniLM"
    assert metric(at, "Governed") == judge(a, b, sim)[0] == "update"
    assert "would say duplicate" in texts(at.warning)


def test_chinese_ui_gives_the_reasons_in_chinese():
    """lang=zh: the decision table, the typed pair and the write-path log give memory.write.adjudicate's Chinese reason."""
    report = evaluate_pairs(load_pairs(shipped_pair_files()["dedup_pairs_zh"]), embedder=LexicalEmbedder(),
                            config=DEFAULTS, judge=make_judge(DEFAULT_JUDGE))  # the page's judge: the default
    at = open_app(PAGE, embedder="lexical", lang="zh")
    table = _table(at)
    assert [table.loc[r.id, "reason"] for r in report.results] == [say(r.why, "zh") for r in report.results]
    assert all(say(r.why, "zh") != r.reason for r in report.results)
    a, b = at.text_input(key="dedup.existing").value, at.text_input(key="dedup.incoming").value
    sim = float(np.dot(*LexicalEmbedder().embed([a, b])))
    assert say(make_judge(DEFAULT_JUDGE)(a, b, sim)[1], "zh") in texts(at.warning) + texts(at.success)
    assert "旧事实被停用" in texts(at.warning) + texts(at.success)
    manager = MemoryManager(MemoryConfig(), embedder=LexicalEmbedder(), location=StoreLocation(),
                            workspace=f"zh-log-{uuid.uuid4().hex[:8]}")
    ingestor = Ingestor(manager)
    ingestor.ingest_many(dedup.chat_messages("zh"))
    entries = ingestor.decisions(tenant_id=dedup.CHAT_OWNER[0], user_id=dedup.CHAT_OWNER[1])
    assert list(frame_with(at, "candidate")["reason"]) == [reason_in(e, "zh") for e in entries]


def test_typed_facts_bad_input_shows_a_message():
    at = open_app(PAGE, embedder="lexical")
    at.text_input(key="dedup.incoming").input("   ").run()
    assert not at.exception and "Type both facts" in texts(at.warning)
    at.text_input(key="dedup.incoming").input("y" * 10_001).run()
    assert not at.exception and "10,000" in texts(at.error)
    at.text_input(key="dedup.incoming").input("The user lives in Shanghai now.").run()
    assert not at.exception and metric(at, "Governed") in ("duplicate", "update", "coexist", "new")


@pytest.mark.parametrize("payload, fragment", [
    (b"[{not json", "invalid JSON"),
    (json.dumps([{"id": "p1", "existing": "a"}]).encode(), "'incoming' is required"),
    (json.dumps([{"id": "p1", "existing": "a", "incoming": "b", "expected": "maybe"}]).encode(), "must be one of"),
    (json.dumps({"pairs": []}).encode(), "JSON list"),
])
def test_malformed_pair_upload_shows_the_data_file_error(payload, fragment):
    at = open_app(PAGE, embedder="lexical")
    at.file_uploader(key="dedup.upload").set_value(("broken-pairs.json", payload, "application/json")).run()
    assert not at.exception
    message = texts(at.error)
    assert "broken-pairs.json" in message and fragment in message, message
    assert len(_table(at)) == len(load_pairs(EN)), "the shipped set stays in use"


def test_uploaded_pair_file_replaces_the_set():
    pairs = [{"id": "u1", "existing": "The user lives in Hangzhou.", "incoming": "The user lives in Shanghai now.",
              "expected": "update"},
             {"id": "u2", "existing": "The user likes tea.", "incoming": "The user likes tea a lot."}]
    at = open_app(PAGE, embedder="lexical")
    at.file_uploader(key="dedup.upload").set_value(("mine.json", json.dumps(pairs).encode(), "application/json")).run()
    assert not at.exception and not at.error
    table = _table(at)
    assert list(table.index) == ["u1", "u2"] and list(table["expected"]) == ["update", ""]
    assert metric(at, "Governed wrong") == "0 / 1"


# --- the version chain --------------------------------------------------------------------------------

def scripted_chain(embedder, language: str):
    """The newest fact's version chain after the scripted conversation, computed with the library alone."""
    manager = MemoryManager(MemoryConfig(), embedder=embedder, location=StoreLocation(),
                            workspace=f"chain-{uuid.uuid4().hex[:8]}")
    Ingestor(manager).ingest_many(dedup.chat_messages(language))
    tenant_id, user_id = dedup.CHAT_OWNER
    newest = dedup.fact_choices(manager.records(tenant_id=tenant_id, user_id=user_id))[0]
    return version_chain(manager, newest.memory_id, tenant_id=tenant_id, user_id=user_id)


def test_version_chain_of_the_scripted_conversation(lexical):
    expected = scripted_chain(lexical, "en")
    at = open_app(PAGE, embedder="lexical", write_path="raw")
    chain = frame_with(at, "superseded_by")
    assert list(chain["version"]) == [r.version for r in expected] == [1, 2, 3]
    assert list(chain["content"]) == [r.content for r in expected]
    assert list(chain["is_deprecated"]) == [True, True, False]
    assert list(chain["superseded_by"])[:2] == list(chain["memory_id"])[1:]
    log = frame_with(at, "candidate")
    assert list(log["decision"]) == ["new", "new", "new", "update", "duplicate", "update", "coexist", "update"]
    assert at.radio(key="dedup.chain_source").options == ["a scripted conversation"], \
        "the lab's facts are offered only with the facts write path"


def test_version_chain_from_the_lab_with_the_facts_write_path():
    at = open_app(PAGE, embedder="lexical", write_path="facts")
    at.radio(key="dedup.chain_source").set_value("lab").run()
    assert not at.exception
    assert at.selectbox(key="user").value == "acme/alice"
    chain = frame_with(at, "superseded_by")
    assert len(chain) >= 2 and chain["version"].tolist() == list(range(1, len(chain) + 1))
    assert chain["is_deprecated"].tolist() == [True] * (len(chain) - 1) + [False]
    assert set(frame_with(at, "candidate")["decision"]) >= {"new", "update"}


# --- pure parts, computed directly ----------------------------------------------------------------------

def test_best_bands_is_the_true_minimum_of_the_plain_rule():
    pairs = load_pairs(EN)
    sims = [r.similarity for r in evaluate_pairs(pairs, embedder=LexicalEmbedder()).results]
    expected = [p.expected for p in pairs]
    fit = dedup.best_bands(sims, expected)
    grid = [round(i * 0.05, 2) for i in range(21)]
    brute = {}
    for c in grid:
        for d in grid:
            if c <= d:
                cfg = MemoryConfig(conflict_band=c, duplicate_band=d)
                brute[(c, d)] = sum(plain_rule(s, cfg) != e for s, e in zip(sims, expected))
    counts = dedup.plain_wrong_grid(sims, expected, np.array(grid))
    for (c, d), n in brute.items():
        assert counts[grid.index(c), grid.index(d)] == n, (c, d)
    cfg = MemoryConfig(conflict_band=fit.conflict_band, duplicate_band=fit.duplicate_band)
    assert fit.wrong == sum(plain_rule(s, cfg) != e for s, e in zip(sims, expected))
    assert fit.wrong <= min(brute.values()) and fit.wrong > 0, "no band setting makes the plain rule right"
    assert dedup.best_bands(sims, [None] * len(sims)) is None


def test_similarity_axis_draws_the_bands_and_crosses_the_wrong_pairs():
    pairs = load_pairs(EN)
    config = DEFAULTS.replace(conflict_band=0.4, duplicate_band=0.7)
    report = dedup.decide(pairs, dedup.similarities(pairs, LexicalEmbedder()), config, source="en", embedder="lexical")
    fig = figures.similarity_axis(dedup.decision_frame(report), conflict_band=0.4, duplicate_band=0.7)
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert sorted(s.x0 for s in lines) == [0.4, 0.7]
    points = [tr for tr in fig.data if tr.showlegend is False]  # the others are legend keys without points
    crosses = sum(len(tr.x) for tr in points if tr.marker.symbol == "x")
    assert crosses == _wrong(report) == dedup.wrong(report, "plain")
    assert sum(len(tr.x) for tr in points) == len(pairs)
    assert [tr.name for tr in fig.data if tr.showlegend is not False] == ["duplicate", "update", "coexist", "new",
                                                                          "plain rule wrong"]


def test_version_timeline_and_unique_labels(lexical):
    chain = dedup.chain_frame(scripted_chain(lexical, "zh"))
    fig = figures.version_timeline(chain)
    points = {tr.name: list(tr.y) for tr in fig.data if tr.mode == "markers+text"}
    assert points == {"deprecated": [1, 2], "active": [3]}
    assert figures.unique_labels(["m1", "m2", "m1", "m1"]) == ["m1", "m2", "m1·2", "m1·3"]


# --- the instructor picks the judge -------------------------------------------------------------------------

def test_the_sidebar_judge_decides_and_the_page_says_which_judge_decided():
    """judge=learned: the pair set's governed column is the learned judge's (memory.write.judges), pair by pair, and
    a typed pair the two judges decide differently gets the learned verdict with its reason; judge=rules brings the
    rules' verdict back. The caption names the judge."""
    from memory import make_judge
    from memory.tools.train_judge import TRAINING_DIR

    lexical = LexicalEmbedder()
    learned = evaluate_pairs(load_pairs(EN), embedder=lexical, config=DEFAULTS, judge=make_judge("learned"))
    at = open_app(PAGE, embedder="lexical", judge="learned")
    table = _table(at)
    assert [table.loc[r.id]["governed"] for r in learned.results] == [r.decision for r in learned.results]
    assert any("learned judge" in c.value for c in at.caption)
    apart = next(r for r in evaluate_pairs(load_pairs(TRAINING_DIR / "train_en_1.json")[:60], embedder=lexical,
                                           config=DEFAULTS, judge=make_judge("learned")).results
                 if r.why.code == "learned.overruled")
    at.text_input(key="dedup.existing").input(apart.existing).run()
    at.text_input(key="dedup.incoming").input(apart.incoming).run()
    assert metric(at, "Governed").lower() == apart.decision
    assert "learned judge decided" in texts(at.warning) + texts(at.success)
    at.sidebar.selectbox(key="judge").set_value("rules").run()
    rules_verdict = judge_reason(apart.existing, apart.incoming, apart.similarity, config=DEFAULTS)[0]
    assert rules_verdict != apart.decision and metric(at, "Governed").lower() == rules_verdict
    assert any("rules judge" in c.value for c in at.caption)
