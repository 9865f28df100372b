"""Plotly figure builders: plain functions from DataFrames to figures (tested directly; no Streamlit)."""

from __future__ import annotations

import html
import math
import re
from typing import Callable, Mapping

import pandas as pd
import plotly.graph_objects as go

from .pollution import POLLUTION_KINDS

STAGE_COLORS: dict[str, str] = {
    "governed": "#2e7d32", "threshold": "#9e9e9e", "top_k": "#f9a825", "budget": "#ef6c00",
    "deprecated": "#6a1b9a", "expired": "#4e342e", "archived": "#37474f",
}
MAX_BARS = 80
"""The candidate chart shows at most this many candidates (the most similar)."""
POLLUTION_SERIES = ("blind_before", "governed_before", "blind_after", "governed_after", "sandbox_before",
                    "sandbox_after")
"""The columns of lab.views.pollution_table that pollution_by_kind draws."""
VERDICTS = ("duplicate", "update", "coexist", "new")

WORDS: dict[str, dict[str, str]] = {
    "candidate_scores": {"similarity": "fig.similarity", "score": "fig.score", "threshold": "knob.threshold",
                         "candidate": "fig.candidate", **{f"stage.{s}": f"stage.{s}" for s in STAGE_COLORS}},
    "pollution_by_kind": {**{c: f"pollution.col.{c}" for c in POLLUTION_SERIES}, "count": "fig.memories",
                          **{f"kind.{k}": f"kind.{k}" for k in POLLUTION_KINDS}},
    "erasure_checks": {"before": "erasure.before", "after": "erasure.after", "count": "fig.items"},
    "similarity_axis": {"similarity": "fig.similarity", "expected": "dedup.expected", "new": "dedup.band_new",
                        "update": "dedup.band_update", "duplicate": "dedup.band_duplicate",
                        "conflict_band": "knob.conflict_band", "duplicate_band": "knob.duplicate_band",
                        "unlabelled": "dedup.unlabelled", "wrong": "dedup.wrong_marker", "plain": "fig.plain",
                        "governed": "fig.governed", **{f"kind.{k}": f"verdict.{k}" for k in VERDICTS}},
    "version_timeline": {"version": "dedup.version", "time": "dedup.created_at", "deprecated": "dedup.deprecated",
                         "active": "dedup.active", "superseded_by": "col.superseded_by"},
    "score_distributions": {"relevant": "study.relevant", "irrelevant": "study.irrelevant", "score": "fig.similarity",
                            "threshold": "knob.threshold"},
}
"""The words of each figure (its ``text`` keys) as i18n keys of the catalogue (lab/locales/<lang>.json): ``words(name, t)`` is the ``text``."""
SLIDE_WORDS: dict[str, dict[str, str]] = {
    "candidate_scores": {"title": "fig.title.candidates", "candidate": "fig.candidate_text"},
    "pollution_by_kind": {"title": "fig.title.pollution"},
    "erasure_checks": {"title": "fig.title.erasure"},
    "similarity_axis": {"title": "fig.title.similarity_axis"},
    "version_timeline": {"title": "fig.title.versions"},
    "score_distributions": {"title": "fig.title.calibration"},
}
"""What a chart copied onto a slide needs besides WORDS: its title, and the candidate axis named by the memories'
texts it now shows (merged over WORDS by :func:`words`)."""

SLIDE = {"format": "png", "width": 1280, "height": 720, "scale": 2}
"""The modebar camera's image (plotly's ``toImageButtonOptions``): a 16:9 slide at 1280x720, drawn at twice that
(2560x1440 pixels), so a projector shows the chart's text sharp; the toolbar's default was the chart's size on the
page (666x370 at 1024x768)."""
LABEL_COLUMNS = 20
"""A memory's text on the candidate axis: at most this many columns (a CJK character takes two), then an ellipsis."""


def words(figure: str, say: Callable[[str], str], **keys: str) -> dict[str, str]:
    """A figure's ``text`` in the page's language: ``say`` (lab.i18n.t) of each key of WORDS[figure] and
    SLIDE_WORDS[figure]; ``keys`` replaces some of the i18n keys (the erasure page's "held now" bars and title)."""
    return {name: say(key) for name, key in (WORDS[figure] | SLIDE_WORDS.get(figure, {}) | keys).items()}


def slide_config(name: str) -> dict:
    """``st.plotly_chart``'s ``config`` for a chart: the modebar's camera downloads ``<name>.png`` as a slide
    (:data:`SLIDE`) in one click; no plotly logo in the bar."""
    return {"toImageButtonOptions": {**SLIDE, "filename": name}, "displaylogo": False}


def short_text(text: str, columns: int = LABEL_COLUMNS) -> str:
    """``text`` on one line of at most ``columns`` columns (a CJK character takes two), cut with an ellipsis."""
    one = " ".join(str(text).split())
    if _columns(one) <= columns:
        return one
    kept, used = "", 0
    for ch in one:
        width = 2 if _WIDE.match(ch) else 1
        if used + width > columns - 1:
            break
        kept, used = kept + ch, used + width
    space = kept.rfind(" ")
    if one[len(kept)].isalnum() and kept[-1:].isalnum() and space > len(kept) // 2:
        kept = kept[:space]  # a word cut in two reads as another word: cut before it
    return kept.rstrip() + "…"


def _titled(fig: go.Figure, title: str | None, about: str = "", *, top: int = 30) -> go.Figure:
    """``title`` over the chart, left-aligned (a slide's heading), and ``about`` (data: a query) in small type under
    it, shown as written; the top margin grows to hold them (the chart's height stays: nothing below it moves)."""
    if not title:
        return fig
    fig.update_layout(title={"text": html.escape(title, quote=False), "x": 0.01, "xanchor": "left", "y": 1,
                             "yanchor": "top", "pad": {"t": 8}, "font": {"size": 15},
                             "subtitle": {"text": html.escape(about, quote=False), "font": {"size": 12}}},
                      margin={"t": top + 30 + (16 if about else 0)})
    return fig


def candidate_scores(frame: pd.DataFrame, threshold: float, *, text: Mapping[str, str] | None = None,
                     max_bars: int = MAX_BARS, about: str = "") -> go.Figure:
    """Similarity of every candidate as bars coloured by the stage that decided it, the composite score as
    markers, and the threshold as a dashed line.

    ``frame`` is lab.views.candidate_frame (sorted by similarity); each bar is named by its memory's text (short,
    :func:`short_text`), its id and full text in the hover box. ``text`` overrides the title and axis and legend
    labels (keys: title, similarity, score, threshold, candidate); ``about`` (the query) goes under the title.
    """
    text = {"title": "Each candidate's similarity to the query", "similarity": "similarity",
            "score": "composite score", "threshold": "threshold", "candidate": "candidate memory", **(text or {})}
    shown = frame.head(max_bars)
    names = shown["content"] if "content" in shown else shown["id"]
    # the text as plotly shows it: a caller's escaped ``&lt;`` is cut whole, never inside the entity
    shown = shown.assign(label=unique_labels([html.escape(short_text(html.unescape(str(n))), quote=False)
                                              for n in names]))
    # one construction, the threshold's line and label given as the shape and annotation add_hline would make: a
    # figure built trace by trace (add_bar, add_hline, update_layout) cost about three times as much, on every
    # slider move of every participant (the fragment's largest part)
    data: list[dict] = []
    for stage, color in STAGE_COLORS.items():
        part = shown[shown["stage"] == stage]
        if part.empty:
            continue
        data.append({
            "type": "bar", "x": part["label"], "y": part["similarity"], "name": text.get(f"stage.{stage}", stage),
            "marker": {"color": color}, "customdata": part[["id", "reason", "content"]].to_numpy(),
            "hovertemplate": "%{customdata[0]}<br>" + text["similarity"] + " %{y:.3f}<br>%{customdata[1]}<br>"
            "%{customdata[2]}<extra>" + text.get(f"stage.{stage}", stage) + "</extra>",
        })
    scored = shown[shown["score"].notna()]
    if not scored.empty:
        data.append({"type": "scatter", "x": scored["label"], "y": scored["score"], "mode": "markers",
                     "name": text["score"], "marker": {"symbol": "diamond", "size": 9, "color": "#1565c0"}})
    fig = go.Figure(data=data, layout={
        # the texts slanted under the bars and the legend at the chart's foot: upright at 90 degrees they ran into
        # the legend and left the bars a third of the height at 1024x768
        "barmode": "overlay", "height": 380, "margin": {"l": 10, "r": 10, "t": 30, "b": 130},
        "xaxis": {"title": {"text": text["candidate"], "standoff": 4}, "categoryorder": "array",
                  "categoryarray": list(shown["label"]), "tickangle": -35, "tickfont": {"size": 11},
                  "automargin": False},
        "yaxis": {"title": {"text": text["similarity"]}},
        "legend": {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0, "xanchor": "left"},
        "shapes": [{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": threshold,
                    "y1": threshold, "line": {"color": "#c62828", "dash": "dash"}}],
        "annotations": [{"text": f"{text['threshold']} {threshold:.2f}", "showarrow": False, "xref": "x domain",
                         "x": 1, "xanchor": "right", "yref": "y", "y": threshold, "yanchor": "bottom"}],
    })
    return _titled(fig, text["title"], about)


def unique_labels(ids) -> list[str]:
    """Axis labels for ids that may repeat (several facts of one message keep its id): ``m3``, ``m3·2``, ..."""
    seen: dict[str, int] = {}
    out = []
    for value in ids:
        seen[value] = seen.get(value, 0) + 1
        out.append(value if seen[value] == 1 else f"{value}·{seen[value]}")
    return out


def pollution_by_kind(table: pd.DataFrame, *, text: Mapping[str, str] | None = None) -> go.Figure:
    """Grouped bars: polluted memories per kind for each column of lab.views.pollution_table (``text``: the series'
    names, ``count`` for the axis and ``kind.<kind>`` for each kind's name on the axis)."""
    series = [c for c in table.columns if c != "kind"]
    text = {c: c.replace("_", " ") for c in series} | {"title": "Polluted memories by kind"} | dict(text or {})
    fig = go.Figure()
    palette = ["#bdbdbd", "#a5d6a7", "#616161", "#2e7d32", "#ffcc80", "#ef6c00"]
    for column, color in zip(series, palette):
        fig.add_bar(x=[text.get(f"kind.{k}", k) for k in table["kind"]], y=table[column], name=text[column],
                    marker_color=color)
    fig.update_layout(barmode="group", height=360, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      yaxis={"title": text.get("count", "memories"), "rangemode": "tozero", "dtick": 1},
                      legend={"orientation": "h", "y": -0.2})
    return _titled(fig, text["title"])


def erasure_checks(frame: pd.DataFrame, *, text: Mapping[str, str] | None = None) -> go.Figure:
    """What each path held before the erasure and what remained after (columns path, before, and after
    once the user was erased)."""
    text = {"title": "What each path holds of the user", "before": "before", "after": "after", "count": "items",
            **(text or {})}
    fig = go.Figure()
    fig.add_bar(x=frame["path"], y=frame["before"], name=text["before"], marker_color="#ef6c00")
    if "after" in frame:
        fig.add_bar(x=frame["path"], y=frame["after"], name=text["after"], marker_color="#2e7d32")
    fig.update_layout(barmode="group", height=320, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      yaxis={"title": text["count"], "rangemode": "tozero"}, legend={"orientation": "h", "y": -0.25})
    return _titled(fig, text["title"])


KIND_COLORS: dict[str, str] = {
    "duplicate": "#1565c0", "update": "#c62828", "coexist": "#6a1b9a", "new": "#2e7d32", "": "#757575",
}
"""Colour of each expected kind on the similarity axis ("" = unlabelled)."""
BAND_FILLS = (("new", "#e8f5e9"), ("update", "#fff3e0"), ("duplicate", "#e3f2fd"))


def similarity_axis(frame: pd.DataFrame, *, conflict_band: float, duplicate_band: float,
                    text: Mapping[str, str] | None = None) -> go.Figure:
    """Every pair as a point on the similarity axis, one row per expected kind, coloured by it; a cross where the
    plain rule is wrong at these bands. The three regions of the plain rule are shaded, the two bands drawn.

    ``frame`` is lab.dedup.decision_frame; ``text`` overrides labels (keys: similarity, expected, wrong, right,
    new, update, duplicate, conflict_band, duplicate_band, unlabelled, plain, governed, and ``kind.<kind>`` for an
    expected kind's name in the legend and on the axis).
    """
    text = {"title": "Pairs on the similarity axis", "similarity": "similarity", "expected": "expected",
            "wrong": "plain rule wrong", "right": "plain rule right",
            "new": "plain: new", "update": "plain: update (conflict)", "duplicate": "plain: duplicate",
            "conflict_band": "conflict band", "duplicate_band": "duplicate band", "unlabelled": "unlabelled",
            "plain": "plain", "governed": "governed", **(text or {})}
    kinds = [k for k in KIND_COLORS if k in set(frame["expected"])]
    # the axis spans the pairs and the bands, not 0 to 1: with e5 (pairs above 0.8) the three regions were slivers
    # whose labels ran into each other at 1024x768; on the right, room for the duplicate band's label
    lowest = min(float(frame["similarity"].min()) if len(frame) else 0.0, conflict_band)
    low = math.floor((lowest - 0.03) * 20) / 20
    high = max(1.02, duplicate_band + 0.08)
    fig = go.Figure()
    for (region, fill), (x0, x1) in zip(BAND_FILLS, ((low, conflict_band), (conflict_band, duplicate_band),
                                                     (duplicate_band, high))):
        if x1 > x0:  # the duplicate region's label at its right end, a line lower: a narrow middle region's label
            # runs past its right edge and would cover it
            right = region == "duplicate"
            fig.add_vrect(x0=x0, x1=x1, fillcolor=fill, opacity=0.8, layer="below", line_width=0,
                          annotation_text=text[region], annotation_position="top right" if right else "top left",
                          annotation={"yshift": -16} if right else None)
    for row, kind in enumerate(kinds):
        part = frame[frame["expected"] == kind]
        jitter = [((i * 0.618) % 1.0 - 0.5) * 0.5 for i in range(len(part))]
        part = part.assign(y=[row + j for j in jitter])
        name = text.get(f"kind.{kind}", kind) if kind else text["unlabelled"]
        _legend_key(fig, name, KIND_COLORS[kind], "circle", group=name)
        for wrong, symbol in ((False, "circle"), (True, "x")):
            points = part[(part["plain_error"] != "") == wrong]
            fig.add_scatter(
                x=points["similarity"], y=points["y"], mode="markers", name=name, legendgroup=name,
                showlegend=False, marker={"color": KIND_COLORS[kind], "size": 11, "symbol": symbol,
                                          "line": {"width": 1, "color": "white"}},
                customdata=points[["id", "plain_rule", "governed", "existing", "incoming"]].to_numpy(),
                hovertemplate="%{customdata[0]}: " + text["similarity"] + " %{x:.3f}<br>" + text["plain"]
                + " %{customdata[1]}, " + text["governed"] + " %{customdata[2]}<br>%{customdata[3]}<br>→ "
                "%{customdata[4]}<extra>" + name + "</extra>",
            )
    _legend_key(fig, text["wrong"], "#424242", "x")
    # both bands' labels left of their lines, the duplicate band's a line higher: right of its line it ran off the
    # chart at 1024x768
    for band, key, shift in ((conflict_band, "conflict_band", 0), (duplicate_band, "duplicate_band", 16)):
        fig.add_vline(x=band, line_dash="dash", line_color="#c62828", annotation_text=f"{text[key]} {band:.2f}",
                      annotation_position="bottom left",
                      annotation={"yshift": shift, "bgcolor": "rgba(255, 255, 255, 0.75)"})  # readable over points
    fig.update_layout(
        height=360, margin={"l": 10, "r": 10, "t": 40, "b": 10}, legend={"orientation": "h", "y": -0.2,
                                                                         "title": {"text": text["expected"]}},
        xaxis={"title": text["similarity"], "range": [low, high]},
        yaxis={"tickvals": list(range(len(kinds))),
               "ticktext": [text.get(f"kind.{k}", k) if k else text["unlabelled"] for k in kinds],
               "range": [-0.6, len(kinds) - 0.4], "title": text["expected"]},
    )
    return _titled(fig, text["title"], top=40)


def _legend_key(fig: go.Figure, name: str, color: str, symbol: str, *, group: str | None = None) -> None:
    """A legend entry with no point of its own (so a kind shows even when all its points are crosses)."""
    fig.add_scatter(x=[None], y=[None], mode="markers", name=name, legendgroup=group, hoverinfo="skip",
                    marker={"color": color, "size": 11, "symbol": symbol})


def version_timeline(chain: pd.DataFrame, *, text: Mapping[str, str] | None = None) -> go.Figure:
    """The versions of one fact over time (lab.dedup.chain_frame): retired versions grey, the live one green."""
    text = {"title": "The versions of one fact", "version": "version", "time": "created at",
            "deprecated": "deprecated", "active": "active",
            "superseded_by": "superseded_by", **(text or {})}
    times = pd.to_datetime(chain["created_at"])
    labels = [f"v{v}: {c if len(c) <= 48 else c[:47] + '…'}" for v, c in zip(chain["version"], chain["content"])]
    # the first version's label to the right of its point, the last one's to the left: centred, both ran off the
    # chart's edges in the lab's narrow column at 1024x768
    last = len(chain) - 1
    places = ["top center" if last == 0 else "top right" if i == 0 else "top left" if i == last else "top center"
              for i in range(len(chain))]
    fig = go.Figure()
    fig.add_scatter(x=times, y=chain["version"], mode="lines", line={"color": "#9e9e9e", "shape": "hv"},
                    showlegend=False, hoverinfo="skip")
    for deprecated, name, color in ((True, text["deprecated"], "#9e9e9e"), (False, text["active"], "#2e7d32")):
        mask = chain["is_deprecated"] == deprecated
        if mask.any():
            fig.add_scatter(x=times[mask], y=chain["version"][mask], mode="markers+text", name=name,
                            text=[label for label, m in zip(labels, mask) if m],
                            textposition=[place for place, m in zip(places, mask) if m],
                            marker={"size": 16, "color": color}, customdata=chain.loc[mask, ["superseded_by"]],
                            hovertemplate="%{text}<br>" + text["superseded_by"] + " %{customdata[0]}<extra></extra>")
    top = int(chain["version"].max()) if len(chain) else 1
    pad = max(times.max() - times.min(), pd.Timedelta(days=2)) * 0.35  # room for the labels at both ends
    fig.update_layout(height=300, margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": -0.3},
                      xaxis={"title": text["time"], "range": [times.min() - pad, times.max() + pad]},
                      yaxis={"title": text["version"], "dtick": 1, "range": [0.5, top + 0.8]})
    return _titled(fig, text["title"])


def score_distributions(runs: Mapping[str, tuple], *, text: Mapping[str, str] | None = None) -> go.Figure:
    """Per configuration (one row each), histograms of the scores of relevant and of irrelevant
    (question, memory) pairs, and a dashed line at the threshold that keeps ``recall`` of the relevant ones.

    ``runs`` maps a name to (relevant scores, irrelevant scores, that threshold or None). Each row has its own
    x axis: the point is where each model's scores lie, not one scale for all.
    """
    from plotly.subplots import make_subplots

    text = {"title": "Where each model's scores lie", "relevant": "relevant", "irrelevant": "irrelevant",
            "score": "score", "threshold": "threshold", **(text or {})}
    fig = make_subplots(rows=len(runs), cols=1, subplot_titles=list(runs), vertical_spacing=0.18)
    for row, (relevant, irrelevant, threshold) in enumerate(runs.values(), start=1):
        for name, values, color in ((text["irrelevant"], irrelevant, "#9e9e9e"), (text["relevant"], relevant, "#2e7d32")):
            fig.add_histogram(x=list(values), name=name, marker_color=color, opacity=0.7, histnorm="probability",
                              nbinsx=40, showlegend=row == 1, legendgroup=name, row=row, col=1)
        if threshold is not None:
            fig.add_vline(x=threshold, line_dash="dash", line_color="#c62828", row=row, col=1,
                          annotation_text=f"{text['threshold']} {threshold:.2f}", annotation_position="top left")
        fig.update_xaxes(title_text=text["score"], row=row, col=1)
    fig.update_layout(barmode="overlay", height=220 + 200 * len(runs), margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.12})
    return _titled(fig, text["title"], top=40)


def localize(fig: go.Figure, phrases: Mapping[str, str]) -> go.Figure:
    """A figure of lab/study_figures.py (worded in English there) in the page's language, in place.

    ``phrases`` maps an English phrase to its wording (lab.i18n.phrases("studyfig")); each is replaced as a whole
    word, the longest first, in the legend names, the axis and legend titles and the title up to its first ": "
    (what follows names the dataset, unit, mode and model: data, never translated). English phrases: unchanged."""
    swaps = {en: said for en, said in phrases.items() if en != said}
    if not swaps:
        return fig

    def edge(phrase: str) -> str:
        start = r"(?<![\w-])" if phrase[0].isalnum() else ""
        end = r"(?![\w-])" if phrase[-1].isalnum() else ""
        return start + re.escape(phrase) + end

    pattern = re.compile("|".join(f"({edge(p)})" for p in sorted(swaps, key=len, reverse=True)))

    def say(text: str | None) -> str | None:
        return pattern.sub(lambda m: swaps[m.group(0)], text) if text else text

    title = fig.layout.title.text
    if title:
        head, sep, tail = title.partition(": ")
        tail = re.sub(r"\((\w+)\)", lambda m: f"({swaps.get(m.group(1), m.group(1))})", tail, count=1)  # the unit
        fig.update_layout(title_text=say(head) + sep + tail)
    fig.for_each_xaxis(lambda axis: axis.update(title_text=say(axis.title.text)))
    fig.for_each_yaxis(lambda axis: axis.update(title_text=say(axis.title.text)))
    if fig.layout.legend.title.text:
        fig.update_layout(legend_title_text=say(fig.layout.legend.title.text))
    fig.for_each_trace(lambda trace: trace.update(name=say(trace.name)))
    for trace in fig.data:  # the words of a hover box and a category axis (a question without one: "default")
        if trace.hovertemplate:
            trace.hovertemplate = say(trace.hovertemplate)
        if trace.type == "bar" and trace.x is not None and all(isinstance(x, str) for x in trace.x):
            trace.x = [swaps.get(x, x) for x in trace.x]
    return fig


_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` on lines of at most ``width`` columns (a CJK character takes two), broken between words or
    between CJK characters."""
    lines, line = [], ""
    for token in re.findall(_WIDE.pattern + r"|[^\s" + _WIDE.pattern[1:-1] + r"]+\s*|\s+", text):
        if line.strip() and _columns(line + token.rstrip()) > width:
            lines.append(line.rstrip())
            line = token.lstrip()
        else:
            line += token
    return [*lines, line.rstrip()] if line.strip() else lines


def _columns(text: str) -> int:
    return sum(2 if _WIDE.match(ch) else 1 for ch in text)


def for_half_width(fig: go.Figure, *, width: int = 30) -> go.Figure:
    """A figure of lab/study_figures.py for half of the page (two charts side by side), in place.

    At 1024x768 half the page is about 270 pixels: the title ran off the chart and the legend on the right left
    the plot a sliver. The title is put on short lines with what follows its first ": " (dataset, unit, mode,
    model) in small type under it, and the legend goes under the plot."""
    title = fig.layout.title.text or ""
    head, sep, tail = title.partition(": ")
    lines = _wrapped(head, width) if head else []
    text = "<br>".join(lines) + (f"<br><sup>{tail}</sup>" if sep else "")
    fig.update_layout(title={"text": text, "font": {"size": 14}, "x": 0.02, "xanchor": "left"},
                      legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.22, "yanchor": "top"},
                      margin={"l": 50, "r": 10, "t": 30 + 18 * (len(lines) + bool(sep)), "b": 40}, height=500)
    fig.update_xaxes(title_font_size=12)
    fig.update_yaxes(title_font_size=12)  # "memories injected per question" ran past the plot's height
    return fig
