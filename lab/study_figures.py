"""Plotly figures of a :class:`memory.eval.study.StudyResult` (no Streamlit here; pages call these).

Every builder returns a ``plotly.graph_objects.Figure``. Curves are drawn per *slice*: the
sweep rows sharing one (top_k, decay_rate), ordered by threshold. ``top_k=`` / ``decay_rate=``
keep one slice; by default every slice is drawn. Undefined values (precision when nothing
was injected) are gaps, not zeros. The recommended operating point is a marker trace named
``recommended``.
"""

from __future__ import annotations

import math
from typing import Sequence

import plotly.graph_objects as go

from memory.eval import AT_K, StudyResult, SweepRow

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def slices(result: StudyResult, *, top_k: int | None = None, decay_rate: float | None = None) -> dict[tuple[int, float], list[SweepRow]]:
    """(top_k, decay_rate) -> rows by threshold; filtered when ``top_k`` / ``decay_rate`` are given."""
    out: dict[tuple[int, float], list[SweepRow]] = {}
    for r in result.sweep:
        if top_k is not None and r.top_k != top_k:
            continue
        if decay_rate is not None and not math.isclose(r.decay_rate, decay_rate, abs_tol=1e-9):
            continue
        out.setdefault((r.top_k, r.decay_rate), []).append(r)
    if not out:
        raise KeyError(f"the sweep has no rows with top_k={top_k}, decay_rate={decay_rate}")
    return {k: sorted(v, key=lambda r: r.threshold) for k, v in sorted(out.items())}


def _slice_name(key: tuple[int, float], result: StudyResult) -> str:
    decays = {r.decay_rate for r in result.sweep}
    return f"top_k={key[0]}" + (f", decay={key[1]:g}" if len(decays) > 1 else "")


def _title(result: StudyResult, what: str) -> str:
    return f"{what}: {result.dataset} ({result.unit}), {result.mode}" + (f" / {result.embedder}" if result.embedder else "")


def _recommended(fig: go.Figure, result: StudyResult, x: str, y: str) -> None:
    row = result.recommended.row
    if row is None or getattr(row, y) is None:
        return
    fig.add_trace(go.Scatter(
        x=[getattr(row, x)], y=[getattr(row, y)], mode="markers", name="recommended",
        marker={"symbol": "star", "size": 16, "color": "black"},
        hovertext=[f"{result.recommended.rule}: threshold {row.threshold:g}, top_k {row.top_k}, decay {row.decay_rate:g}"],
    ))


def _layout(fig: go.Figure, title: str, x: str, y: str, *, y_range: Sequence[float] | None = (0, 1.02)) -> go.Figure:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, legend_title_text="", hovermode="closest",
                      margin={"l": 50, "r": 20, "t": 60, "b": 40})
    if y_range is not None:
        fig.update_yaxes(range=list(y_range))
    return fig


def _against_threshold(
    result: StudyResult, top_k: int | None, decay_rate: float | None, solid: tuple[str, str],
    second: tuple[str, str] | None, dash: str,
) -> go.Figure:
    """Per slice, one solid line and (optionally) one ``dash``-styled line of sweep-row attributes vs threshold."""
    fig = go.Figure()
    for i, (key, rows) in enumerate(slices(result, top_k=top_k, decay_rate=decay_rate).items()):
        color = PALETTE[i % len(PALETTE)]
        name = _slice_name(key, result)
        xs = [r.threshold for r in rows]
        for line, style in ((solid, {}), (second, {"dash": dash})):
            if line is not None:
                label, attr = line
                fig.add_trace(go.Scatter(x=xs, y=[getattr(r, attr) for r in rows], name=f"{label} ({name})",
                                         mode="lines+markers", line={"color": color, **style}))
    return fig


def precision_recall_vs_threshold(result: StudyResult, *, top_k: int | None = None, decay_rate: float | None = None) -> go.Figure:
    """Precision (solid) and recall (dashed) against the threshold, one pair of lines per slice."""
    fig = _against_threshold(result, top_k, decay_rate, ("precision", "precision"), ("recall", "recall"), "dash")
    _recommended(fig, result, "threshold", "precision")
    return _layout(fig, _title(result, "Precision and recall vs threshold"), f"threshold on {result.scorer}", "value")


def pr_curve(result: StudyResult, *, top_k: int | None = None, decay_rate: float | None = None) -> go.Figure:
    """Precision against recall as the threshold moves (each point's text is its threshold)."""
    fig = go.Figure()
    for i, (key, rows) in enumerate(slices(result, top_k=top_k, decay_rate=decay_rate).items()):
        fig.add_trace(go.Scatter(
            x=[r.recall for r in rows], y=[r.precision for r in rows], text=[f"{r.threshold:g}" for r in rows],
            name=_slice_name(key, result), mode="lines+markers", line={"color": PALETTE[i % len(PALETTE)]},
            hovertemplate="threshold %{text}<br>recall %{x:.3f}<br>precision %{y:.3f}",
        ))
    _recommended(fig, result, "recall", "precision")
    fig = _layout(fig, _title(result, "Precision-recall"), "recall (macro)", "precision (micro)")
    fig.update_xaxes(range=[0, 1.02])
    return fig


def injected_vs_threshold(result: StudyResult, *, top_k: int | None = None, decay_rate: float | None = None) -> go.Figure:
    """Mean injected memories per question (solid) and per no-answer question (dotted) against the threshold."""
    no_answer = ("no-answer questions", "no_answer_avg_injected") if result.no_answer else None
    fig = _against_threshold(result, top_k, decay_rate, ("all questions", "avg_injected"), no_answer, "dot")
    _recommended(fig, result, "threshold", "avg_injected")
    return _layout(fig, _title(result, "Injected memories vs threshold"), f"threshold on {result.scorer}",
                   "memories injected per question", y_range=None)


def category_breakdown(result: StudyResult, *, row: SweepRow | None = None, k: int = 10) -> go.Figure:
    """Per question category at one setting (default: the recommended one): recall, precision,
    the no-answer empty rate, and recall@k of the ranking."""
    row = row or result.recommended.row or result.sweep[0]
    cats = result.categories
    metrics = [row.by_category.get(c) for c in cats]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=cats, y=[m.recall if m else None for m in metrics], name="recall"))
    fig.add_trace(go.Bar(x=cats, y=[m.precision if m else None for m in metrics], name="precision"))
    if result.no_answer:
        fig.add_trace(go.Bar(x=cats, y=[m.no_answer_empty_rate if m else None for m in metrics], name="no-answer: empty context"))
    if k in AT_K:
        fig.add_trace(go.Bar(x=cats, y=[result.at_k_by_category[c][k].recall for c in cats], name=f"recall@{k} (ranking)"))
    fig.update_layout(barmode="group")
    setting = f"threshold {row.threshold:g}, top_k {row.top_k}, decay {row.decay_rate:g}"
    return _layout(fig, _title(result, f"By category at {setting}"), "question category", "value")


def compare(
    a: StudyResult, b: StudyResult, *, names: tuple[str, str] | None = None, kind: str = "pr", top_k: int | None = None,
) -> go.Figure:
    """Two studies' curves overlaid: ``kind="pr"`` (precision vs recall) or ``"threshold"``
    (precision and recall vs threshold). Each study contributes the slice of its recommended
    setting (or ``top_k`` when given)."""
    if kind not in ("pr", "threshold"):
        raise ValueError(f"kind must be 'pr' or 'threshold', got {kind!r}")
    names = names or (_label(a), _label(b))
    fig = go.Figure()
    for i, (result, name) in enumerate(zip((a, b), names)):
        rows = _default_slice(result, top_k)
        color = PALETTE[i]
        if kind == "pr":
            fig.add_trace(go.Scatter(x=[r.recall for r in rows], y=[r.precision for r in rows], name=name,
                                     text=[f"{r.threshold:g}" for r in rows], mode="lines+markers", line={"color": color}))
        else:
            xs = [r.threshold for r in rows]
            fig.add_trace(go.Scatter(x=xs, y=[r.precision for r in rows], name=f"precision: {name}",
                                     mode="lines+markers", line={"color": color}))
            fig.add_trace(go.Scatter(x=xs, y=[r.recall for r in rows], name=f"recall: {name}",
                                     mode="lines+markers", line={"color": color, "dash": "dash"}))
    if kind == "pr":
        fig = _layout(fig, "Precision-recall, two configurations", "recall (macro)", "precision (micro)")
        fig.update_xaxes(range=[0, 1.02])
        return fig
    return _layout(fig, "Precision and recall vs threshold, two configurations", "threshold", "value")


def _label(result: StudyResult) -> str:
    return f"{result.mode}" + (f"/{result.embedder}" if result.embedder else "") + f" ({result.unit})"


def _default_slice(result: StudyResult, top_k: int | None) -> list[SweepRow]:
    row = result.recommended.row or result.sweep[0]
    k = top_k if top_k is not None else row.top_k
    return next(iter(slices(result, top_k=k, decay_rate=row.decay_rate).values()))
