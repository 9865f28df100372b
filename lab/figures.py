"""Plotly figure builders: plain functions from DataFrames to figures (tested directly; no Streamlit)."""

from __future__ import annotations

from typing import Mapping

import pandas as pd
import plotly.graph_objects as go

STAGE_COLORS: dict[str, str] = {
    "governed": "#2e7d32", "threshold": "#9e9e9e", "top_k": "#f9a825", "budget": "#ef6c00",
    "deprecated": "#6a1b9a", "expired": "#4e342e", "archived": "#37474f",
}
MAX_BARS = 80
"""The candidate chart shows at most this many candidates (the most similar)."""


def candidate_scores(frame: pd.DataFrame, threshold: float, *, text: Mapping[str, str] | None = None,
                     max_bars: int = MAX_BARS) -> go.Figure:
    """Similarity of every candidate as bars coloured by the stage that decided it, the composite score as
    markers, and the threshold as a dashed line.

    ``frame`` is lab.views.candidate_frame (sorted by similarity); ``text`` overrides axis and legend labels
    (keys: similarity, score, threshold, candidate).
    """
    text = {"similarity": "similarity", "score": "composite score", "threshold": "threshold",
            "candidate": "candidate", **(text or {})}
    shown = frame.head(max_bars)
    fig = go.Figure()
    for stage, color in STAGE_COLORS.items():
        part = shown[shown["stage"] == stage]
        if part.empty:
            continue
        fig.add_bar(
            x=part["id"], y=part["similarity"], name=stage, marker_color=color,
            customdata=part[["reason", "content"]].to_numpy(),
            hovertemplate="%{x}<br>" + text["similarity"] + " %{y:.3f}<br>%{customdata[0]}<br>%{customdata[1]}<extra>"
            + stage + "</extra>",
        )
    scored = shown[shown["score"].notna()]
    if not scored.empty:
        fig.add_scatter(x=scored["id"], y=scored["score"], mode="markers", name=text["score"],
                        marker={"symbol": "diamond", "size": 9, "color": "#1565c0"})
    fig.add_hline(y=threshold, line_dash="dash", line_color="#c62828",
                  annotation_text=f"{text['threshold']} {threshold:.2f}", annotation_position="top right")
    fig.update_layout(
        barmode="overlay", height=380, margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": text["candidate"], "categoryorder": "array", "categoryarray": list(shown["id"])},
        yaxis={"title": text["similarity"]}, legend={"orientation": "h", "y": -0.25},
    )
    return fig


def pollution_by_kind(table: pd.DataFrame, *, text: Mapping[str, str] | None = None) -> go.Figure:
    """Grouped bars: polluted memories per kind for each column of lab.views.pollution_table."""
    series = [c for c in table.columns if c != "kind"]
    text = {c: c.replace("_", " ") for c in series} | dict(text or {})
    fig = go.Figure()
    palette = ["#bdbdbd", "#a5d6a7", "#616161", "#2e7d32", "#ffcc80", "#ef6c00"]
    for column, color in zip(series, palette):
        fig.add_bar(x=table["kind"], y=table[column], name=text[column], marker_color=color)
    fig.update_layout(barmode="group", height=360, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      yaxis={"title": text.get("count", "memories"), "rangemode": "tozero", "dtick": 1},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def erasure_checks(frame: pd.DataFrame, *, text: Mapping[str, str] | None = None) -> go.Figure:
    """What each path held before the erasure and what remained after (columns path, before, and after
    once the user was erased)."""
    text = {"before": "before", "after": "after", "count": "items", **(text or {})}
    fig = go.Figure()
    fig.add_bar(x=frame["path"], y=frame["before"], name=text["before"], marker_color="#ef6c00")
    if "after" in frame:
        fig.add_bar(x=frame["path"], y=frame["after"], name=text["after"], marker_color="#2e7d32")
    fig.update_layout(barmode="group", height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      yaxis={"title": text["count"], "rangemode": "tozero"}, legend={"orientation": "h", "y": -0.25})
    return fig
