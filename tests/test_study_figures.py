"""Figure builders: each trace carries the sweep's own numbers (plotly figures are checked directly)."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest

from memory.eval.datasets import load_dataset
from memory.eval.study import run_study
from lab.study_figures import (
    category_breakdown, compare, injected_vs_threshold, pr_curve, precision_recall_vs_threshold, slices,
)


@pytest.fixture(scope="module")
def lexical_result():
    return run_study(load_dataset("workshop_en"), mode="lexical", thresholds="0.1:0.9:0.1", top_ks="3,5")


@pytest.fixture(scope="module")
def dense_result():
    """Dense mode with the seed's lexical embedder (no model needed), two decay rates."""
    return run_study(load_dataset("workshop_en"), mode="dense", embedder="lexical", thresholds="0.1:0.9:0.1",
                     top_ks="5", decay_rates="0,0.1")


def _trace(fig: go.Figure, name: str):
    found = [t for t in fig.data if t.name == name]
    assert len(found) == 1, [t.name for t in fig.data]
    return found[0]


def test_slices_group_rows_by_top_k_and_decay(lexical_result, dense_result):
    assert list(slices(lexical_result)) == [(3, 0.0), (5, 0.0)]
    assert [r.threshold for r in slices(lexical_result, top_k=5)[(5, 0.0)]] == pytest.approx([i / 10 for i in range(1, 10)])
    assert list(slices(dense_result)) == [(5, 0.0), (5, 0.1)]
    with pytest.raises(KeyError):
        slices(lexical_result, top_k=7)


def test_precision_and_recall_vs_threshold(lexical_result):
    fig = precision_recall_vs_threshold(lexical_result)
    assert isinstance(fig, go.Figure)
    rows = slices(lexical_result, top_k=5)[(5, 0.0)]
    precision = _trace(fig, "precision (top_k=5)")
    recall = _trace(fig, "recall (top_k=5)")
    assert list(precision.x) == [r.threshold for r in rows]
    assert list(precision.y) == [r.precision for r in rows]
    assert list(recall.y) == [r.recall for r in rows]
    star = _trace(fig, "recommended")
    rec = lexical_result.recommended.row
    assert (star.x[0], star.y[0]) == (rec.threshold, rec.precision)
    assert len(precision_recall_vs_threshold(lexical_result, top_k=3).data) == 3  # one slice + the marker


def test_pr_curve(lexical_result):
    fig = pr_curve(lexical_result, top_k=3)
    rows = slices(lexical_result, top_k=3)[(3, 0.0)]
    curve = _trace(fig, "top_k=3")
    assert list(curve.x) == [r.recall for r in rows] and list(curve.y) == [r.precision for r in rows]
    assert list(curve.text) == [f"{r.threshold:g}" for r in rows]


def test_injected_vs_threshold_shows_no_answer_questions(lexical_result, dense_result):
    fig = injected_vs_threshold(lexical_result)
    rows = slices(lexical_result, top_k=5)[(5, 0.0)]
    assert list(_trace(fig, "all questions (top_k=5)").y) == [r.avg_injected for r in rows]
    assert list(_trace(fig, "no-answer questions (top_k=5)").y) == [r.no_answer_avg_injected for r in rows]
    fig = injected_vs_threshold(dense_result)
    decayed = slices(dense_result, decay_rate=0.1)[(5, 0.1)]
    assert list(_trace(fig, "all questions (top_k=5, decay=0.1)").y) == [r.avg_injected for r in decayed]


def test_category_breakdown(lexical_result):
    fig = category_breakdown(lexical_result)
    row = lexical_result.recommended.row
    cats = lexical_result.categories
    assert list(_trace(fig, "recall").x) == cats
    assert list(_trace(fig, "recall").y) == [row.by_category[c].recall for c in cats]
    assert list(_trace(fig, "precision").y) == [row.by_category[c].precision for c in cats]
    assert list(_trace(fig, "recall@10 (ranking)").y) == [lexical_result.at_k_by_category[c][10].recall for c in cats]
    other = lexical_result.sweep[0]
    fig = category_breakdown(lexical_result, row=other)
    assert list(_trace(fig, "recall").y) == [other.by_category[c].recall for c in cats]


def test_two_configurations_overlaid(lexical_result, dense_result):
    fig = compare(lexical_result, dense_result, names=("BM25", "TF cosine"))
    a, b = _trace(fig, "BM25"), _trace(fig, "TF cosine")
    rows_a = slices(lexical_result, top_k=lexical_result.recommended.row.top_k)
    rows_a = next(iter(rows_a.values()))
    assert list(a.x) == [r.recall for r in rows_a] and list(a.y) == [r.precision for r in rows_a]
    rec_b = dense_result.recommended.row
    rows_b = slices(dense_result, top_k=rec_b.top_k, decay_rate=rec_b.decay_rate)
    assert list(b.y) == [r.precision for r in next(iter(rows_b.values()))]
    fig = compare(lexical_result, dense_result, kind="threshold", top_k=5)
    assert {t.name for t in fig.data} == {"precision: lexical (turns)", "recall: lexical (turns)",
                                         "precision: dense/lexical (turns)", "recall: dense/lexical (turns)"}
    with pytest.raises(ValueError):
        compare(lexical_result, dense_result, kind="bars")
