"""The lab in Chinese: drop reasons, stages and pollution kinds are worded from codes, and no page of lab.PAGES shows
an untranslated UI string (data excepted).

``ui_strings`` walks AppTest's element tree and collects what a participant reads as the lab's own words: titles and
headers, captions, markdown, alert bodies, toasts, progress text, the label, help and placeholder of every widget
(buttons, sliders, selectboxes, radios, inputs, toggles, downloads), expander and tab labels, metric labels and
help, the headers of every table and dataframe (as shown: a ``column_config`` label replaces the column's name;
hidden columns and the index are left out) and the words of every plotly chart (title, axis titles, explicit tick
texts, legend title, legend names, annotations), metric values (numbers pass) and the "Choose options" Streamlit
shows in a multiselect given no placeholder. What it leaves out is data: table cells, selectbox and radio options
(users, queries, scenario and model names, codes the URL carries), code blocks (the context) and JSON (the report).
A string passes when it holds a CJK character, is numbers and symbols only, or is in ``ALLOWED`` /
``ALLOWED_PATTERNS``, a short list of codes that are the same in both languages (each entry says why).
"""

from __future__ import annotations

import json
import re

import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import element_tree as et

from lab import PAGES, figures, i18n
from test_app import frame_with, lab_env, open_app  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

CJK = re.compile(r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
NUMBERS = re.compile(r"[\s\d.,:;/%+\-–−·×=<>≥≤()\[\]@#*]*")
"""Numbers, ranges and symbols only ("0.30", "12 / 107", "83.2%", "3/2000", "–"): nothing to translate."""
ALLOWED: dict[str, str] = {
    # names a participant types or reads in the code, the docs and the URL, the same in both languages
    "top_k": "the knob's name (sidebar slider, stage, metric, sweep column): zh text of knob.top_k is top_k too",
    "F1": "the metric's name, written so in Chinese texts too",
    "k": "the rank cut-off of the ranking-quality table (recall@k), a variable",
    "A": "the pinned settings of the A/B comparison, named A in both languages",
    "B": "the current settings of the A/B comparison",
}
ALLOWED_PATTERNS: dict[re.Pattern, str] = {
    # legend names of the study's precision-recall curves: one curve per slice of the sweep, named by its setting
    re.compile(r"top_k=\d+(, decay=[\d.e-]+)?"): "a sweep slice named by its parameters (lab/study_figures.py)",
    # the study page's configurations, named by retrieval mode and model as its pickers list them (codes)
    re.compile(r"(dense|lexical|hybrid)( · [\w:/.-]+)?"): "a study configuration: mode · model, as picked",
    # the canary strings the erasure page plants and lists: random codes, data
    re.compile(r"CANARY-[0-9A-F]{12}"): "a planted canary code (data)",
}


def _cells(node) -> list[tuple[str, str]]:
    """(what, text) of one element: the UI words it shows."""
    proto, kind = getattr(node, "proto", None), node.type
    if kind in ("title", "header", "subheader", "markdown", "caption", "error", "warning", "info", "success"):
        return [(kind, node.value)]
    if kind == "toast":
        return [(kind, proto.body)]
    if kind == "progress":
        return [(kind, proto.text)]
    if kind == "metric":
        return [("metric", proto.label), ("metric.help", proto.help), ("metric.value", proto.body)]
    if kind in ("dataframe", "table"):
        return [(f"{kind}.column", name) for name in _headers(node)]
    if kind == "plotly_chart":
        return [("chart", text) for text in chart_words(json.loads(proto.spec))]
    if kind in ("text", "code", "json", "exception", "space", "html"):
        return []  # the context to be injected (st.text, the recall page's only one), the EraseReport: data
    fields = proto.DESCRIPTOR.fields_by_name if proto is not None and hasattr(proto, "DESCRIPTOR") else {}
    found = [(f"{kind}.{name}", getattr(proto, name)) for name in ("label", "help", "placeholder") if name in fields]
    if kind == "multiselect" and not proto.placeholder:
        found.append(("multiselect.placeholder", "Choose options"))  # what Streamlit shows when none is given
    return found


def _headers(node) -> list[str]:
    """A table's column headers as the page shows them: the column_config label where one is set, not hidden ones."""
    frame: pd.DataFrame = node.value
    config = json.loads(node.proto.columns or "{}") if node.type == "dataframe" else {}
    shown = []
    for name in map(str, frame.columns):
        options = config.get(name, {})
        if not options.get("hidden"):
            shown.append(options.get("label") or name)
    if node.type == "table" and not isinstance(frame.index, pd.RangeIndex):
        shown += [str(label) for label in frame.index]  # row headers (the A/B comparison's settings)
    return shown


def chart_words(spec: dict) -> list[str]:
    """Title, axis titles, explicit tick labels, legend title, legend names and annotations of a plotly figure spec."""
    layout, words = spec.get("layout", {}), []

    def title(value) -> str | None:
        return value.get("text") if isinstance(value, dict) else value

    words.append(title(layout.get("title")))
    words.append(title(layout.get("legend", {}).get("title")))
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            words.append(title(axis.get("title")))
            words += list(axis.get("ticktext") or [])
    words += [a.get("text") for a in layout.get("annotations") or []]
    words += [trace.get("name") for trace in spec.get("data", []) if trace.get("showlegend", True) is not False]
    return [w for w in words if isinstance(w, str) and w]


def ui_strings(at: AppTest) -> list[tuple[str, str]]:
    """Every (what, text) the app shows now, main area and sidebar, in page order, without repeats."""
    found: list[tuple[str, str]] = []

    def walk(node) -> None:
        if isinstance(node, et.Block):
            if isinstance(node, (et.Expander, et.Tab, et.Status)):
                found.append((node.type, node.label))
            for index in sorted(node.children):
                walk(node.children[index])
        else:
            found.extend(_cells(node))

    walk(at._tree)
    return list(dict.fromkeys((what, text) for what, text in found if text))


def untranslated(strings: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The strings with no CJK character that are neither numbers and symbols nor allowed."""
    def ok(text: str) -> bool:
        return bool(CJK.search(text) or NUMBERS.fullmatch(text) or text in ALLOWED
                    or any(p.fullmatch(text) for p in ALLOWED_PATTERNS))
    return [(what, text) for what, text in strings if not ok(text.strip())]


def _run(at: AppTest, action=None) -> AppTest:
    if action is not None:
        action(at)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _click(key: str):
    return lambda at: at.button(key=key).click()


def _user(at: AppTest) -> str:
    return at.selectbox(key="user").value


def _write(at: AppTest, text: str) -> None:
    """The recall page's "add a message" form: type, then submit (one run, as a form sends both)."""
    at.text_input(key="add.text").input(text)
    next(b for b in at.button if b.proto.is_form_submitter).click()


# What each page shows beyond its first screen: every state with words of its own, reached by clicks.
PAGE_STEPS = {
    "recall-view": [_click("ab.pin"), lambda at: _write(at, "活动预算现在是 35 万元。"),
                    lambda at: _write(at, "活动预算现在是 35 万元。" * 4_000)],  # 52,000 characters: read in part
    "pollution-view": [_click(f"pollution.inject.{k}") for k in ("noise", "private", "stale", "contradiction", "erased")],
    "dedup-view": [lambda at: at.radio(key="dedup.chain_source").set_value("lab")],
    "erasure-view": [_click("erasure.plant"), lambda at: _click(f"erasure.erase.{_user(at)}")(at),
                     lambda at: _click(f"erasure.confirm.{_user(at)}")(at)],
    "study-view": [lambda at: at.radio(key="study.compare_kind").set_value("threshold")],
    "inspector-view": [lambda at: at.selectbox(key="scope").set_value("inactive")],
}


REACHED = {
    "recall-view": ("table.column", i18n.TEXT["add.col.decision"]["zh"]),  # the written message's decisions
    "pollution-view": ("dataframe.column", i18n.TEXT["col.in_sandbox"]["zh"]),  # what the lab injected
    "dedup-view": ("chart", i18n.TEXT["dedup.active"]["zh"]),  # a fact's version timeline
    "erasure-view": ("dataframe.column", i18n.TEXT["col.canary"]["zh"]),  # the erasure's canary table
    "study-view": ("chart", i18n.TEXT["studyfig.pr_threshold_two"]["zh"]),  # the comparison, vs threshold
    "inspector-view": ("dataframe.column", i18n.TEXT["col.tenant_id"]["zh"]),
}
"""One string per page that only its last state shows: PAGE_STEPS got there."""


def every_page_in_chinese(**params: str) -> tuple[AppTest, dict[str, list[tuple[str, str]]]]:
    """page url path -> the UI strings it showed, over its first screen and the states PAGE_STEPS reach."""
    at = open_app(lang="zh", lesson="1", **params)  # the lesson banner stays above every page
    shown: dict[str, list[tuple[str, str]]] = {}
    for spec in PAGES:
        at.switch_page(spec.path)
        _run(at)
        strings = ui_strings(at)
        for step in PAGE_STEPS[spec.url_path]:
            strings += ui_strings(_run(at, step))
        shown[spec.url_path] = list(dict.fromkeys(strings))
    return at, shown


def test_the_walk_covers_every_page():
    assert set(PAGE_STEPS) == set(REACHED) == {spec.url_path for spec in PAGES}


@pytest.mark.parametrize("embedder", ["lexical", "minilm", None], ids=["lexical", "minilm", "default"])
def test_no_page_shows_an_untranslated_ui_string(embedder):
    """Every page of lab.PAGES in Chinese, with the lexical embedder, MiniLM and the default (``auto``: e5 for a
    Chinese page): every UI string is Chinese or allowed."""
    i18n.MISSING.clear()
    at, shown = every_page_in_chinese(**({"embedder": embedder} if embedder else {}))
    assert not i18n.MISSING, f"keys the catalogue lacks: {sorted(i18n.MISSING)}"
    assert embedder is None or at.session_state["lab.settings"].embedder == embedder
    for spec in PAGES:  # the walk saw the page's words: its title, lead, a table's headers and its chart
        kinds = {what for what, _ in shown[spec.url_path]}
        assert {"title", "caption", "dataframe.column", "button.label"} <= kinds, (spec.url_path, kinds)
        assert not spec.has_chart or "chart" in kinds, spec.url_path
        assert REACHED[spec.url_path] in shown[spec.url_path], spec.url_path
    english = {page: untranslated(strings) for page, strings in shown.items()}
    assert {page: found for page, found in english.items() if found} == {}


def test_the_check_catches_an_english_string(monkeypatch):
    """The check has teeth: one translation put back to English is reported, with where it shows."""
    monkeypatch.setitem(i18n.TEXT["recall.candidates"], "zh", i18n.TEXT["recall.candidates"]["en"])
    monkeypatch.setitem(i18n.TEXT["col.reason"], "zh", "reason")
    at = open_app(lang="zh", embedder="lexical")
    found = untranslated(ui_strings(at))
    assert ("subheader", i18n.TEXT["recall.candidates"]["en"]) in found
    assert ("dataframe.column", "reason") in found


def test_figures_built_for_chinese_have_chinese_titles_and_legends(monkeypatch):
    """lab/figures.py draws with the page's words: built in Chinese, every title, axis and legend name is Chinese."""
    monkeypatch.setattr(i18n, "language", lambda: "zh")
    candidates = pd.DataFrame({"id": ["m1", "m2", "m3"], "stage": ["governed", "threshold", "top_k"],
                               "similarity": [0.8, 0.2, 0.5], "score": [0.7, None, 0.4], "reason": ["", "r", "r"],
                               "content": ["a", "b", "c"]})
    pollution = pd.DataFrame({"kind": ["noise", "stale"], "blind_before": [1, 0], "governed_before": [0, 0],
                              "blind_after": [2, 1], "governed_after": [0, 1], "sandbox_before": [1, 0],
                              "sandbox_after": [2, 1]})
    checks = pd.DataFrame({"path": ["summary", "disk"], "before": [1, 4], "after": [0, 0]})
    pairs = pd.DataFrame({"id": ["p1", "p2", "p3"], "similarity": [0.95, 0.85, 0.3], "expected": ["update", "duplicate", ""],
                          "plain_rule": ["duplicate", "update", "new"], "plain_error": ["silent_loss", "wrong_retire", ""],
                          "governed": ["update", "duplicate", "new"], "existing": ["a", "b", "c"],
                          "incoming": ["d", "e", "f"]})
    chain = pd.DataFrame({"version": [1, 2], "created_at": ["2026-05-04T09:00:00Z", "2026-05-10T09:00:00Z"],
                          "content": ["预算是50万元。", "预算削减到30万元。"], "is_deprecated": [True, False],
                          "superseded_by": ["f2", None]})
    built = {
        "candidate_scores": figures.candidate_scores(candidates, 0.3, text=figures.words("candidate_scores", i18n.t)),
        "pollution_by_kind": figures.pollution_by_kind(pollution, text=figures.words("pollution_by_kind", i18n.t)),
        "erasure_checks": figures.erasure_checks(checks, text=figures.words("erasure_checks", i18n.t)),
        "similarity_axis": figures.similarity_axis(pairs, conflict_band=0.78, duplicate_band=0.92,
                                                   text=figures.words("similarity_axis", i18n.t)),
        "version_timeline": figures.version_timeline(chain, text=figures.words("version_timeline", i18n.t)),
        "score_distributions": figures.score_distributions(
            {"dense · e5 (当前)": ([0.9, 0.8], [0.1, 0.2], 0.5)}, text=figures.words("score_distributions", i18n.t)),
    }
    for name, fig in built.items():
        words = chart_words(json.loads(fig.to_json()))
        assert words, name
        assert untranslated([("chart", w) for w in words]) == [], name
    assert [tr.name for tr in built["pollution_by_kind"].data][:2] == ["盲目，注入前", "治理，注入前"]
    assert list(built["pollution_by_kind"].data[0].x) == ["噪声", "过时"]  # the kinds on the axis, in Chinese
    assert built["similarity_axis"].layout.yaxis.ticktext == ("重复", "更新", "无标注")


def test_study_figures_are_worded_in_chinese(monkeypatch):
    """lab/study_figures.py words its figures in English; the study page relabels them (lab.figures.localize)."""
    from lab import study_figures
    from memory.eval.datasets import scenario_dataset
    from memory.eval.ranking import rank
    from memory.core.scenario import load_scenario, shipped_scenarios
    from memory.eval.study import sweep

    monkeypatch.setattr(i18n, "language", lambda: "zh")
    result = sweep(rank(scenario_dataset(load_scenario(shipped_scenarios()["recall_zh"])), mode="lexical"),
                   thresholds=(0.2, 0.5), top_ks=(5, 10), decay_rates=(0.0, 0.1), rule="f1")
    phrases = i18n.phrases("studyfig")
    built = [study_figures.precision_recall_vs_threshold(result), study_figures.pr_curve(result),
             study_figures.injected_vs_threshold(result), study_figures.category_breakdown(result),
             study_figures.compare(result, result, names=("a", "b"), kind="pr"),
             study_figures.compare(result, result, names=("a", "b"), kind="threshold")]
    for fig in built:
        english = chart_words(json.loads(fig.to_json()))
        words = chart_words(json.loads(figures.localize(fig, phrases).to_json()))
        assert len(words) == len(english)
        assert untranslated([("chart", w) for w in words if w not in ("a", "b")]) == [], words
    assert "recall-zh" in built[0].layout.title.text, "a dataset's name is data: never translated"


def test_localize_leaves_an_english_figure_as_it_was():
    fig = go.Figure(go.Scatter(x=[1], y=[1], name="precision (top_k=5)"))
    fig.update_layout(title="Precision-recall: recall-zh (turns), dense / e5", xaxis_title="recall (macro)")
    english = {k: v["en"] for k, v in i18n.TEXT.items() if k.startswith("studyfig.")}
    same = figures.localize(go.Figure(fig), {e: e for e in english.values()})
    assert same.to_json() == fig.to_json()


# --- drop reasons, stages and pollution kinds -----------------------------------------------------------

def test_recall_page_words_reasons_stages_and_kinds_in_chinese():
    at = open_app(lang="zh", embedder="minilm", threshold="0.5")
    frame = frame_with(at, "reason")
    dropped = frame[frame["stage"] == i18n.TEXT["stage.threshold"]["zh"]]
    assert not dropped.empty, frame["stage"].tolist()  # the stage column is in Chinese
    assert all(r.startswith("相似度 ") and "< 阈值 0.500" in r for r in dropped["reason"]), dropped["reason"].tolist()
    assert "threshold" not in set(frame["stage"]) and "governed" not in set(frame["stage"])
    english = {"noise", "stale", "private", "contradiction", "forbidden", "erased"}
    shown = {k for cell in frame["pollution"] for k in cell.split(", ") if k}
    assert shown and not shown & english, shown  # labels exist at this setting, all in Chinese


def test_english_page_keeps_the_librarys_reason_sentence():
    at = open_app(embedder="minilm", threshold="0.5")
    frame = frame_with(at, "reason")
    dropped = frame[frame["stage"] == "threshold"]
    assert not dropped.empty and all(r.startswith("similarity ") for r in dropped["reason"])
