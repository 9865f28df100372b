"""Charts for slides and the study's report (issue 51): every chart has a title and readable labels in the page's
language, the modebar camera gives a 1280x720 slide at 2x, the study page's report names the dataset and the
recommended point and carries every chart, and the lesson's study step recommends inside its sweep.

Figure builders are tested directly (plotly figures are opaque to AppTest); the pages' chart calls through the
chart element AppTest records; the report's PNGs with the real image engine (kaleido driving the machine's
Chromium, as the lab's server does); the lesson's step through AppTest with the real models. The camera's PNG in a
real browser: tests/test_browser.py."""

from __future__ import annotations

import ast
import io
import json
import re
import struct
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from lab import figures, i18n, lesson, report
from memory.core.scenario import SCENARIOS_DIR
from memory.eval import content_hash, parse_range, run_study

ROOT = Path(__file__).resolve().parent.parent
IDS = re.compile(r"^m\d+(·\d+)?$")


def _say(lang: str):
    return lambda key: i18n.TEXT[key][lang]


def _candidates() -> pd.DataFrame:
    long = "The campaign budget was cut from 500,000 to 300,000 yuan in the May review"
    return pd.DataFrame({
        "id": ["m4", "m54", "m7", "m8"], "stage": ["governed", "threshold", "top_k", "governed"],
        "similarity": [0.8, 0.2, 0.5, 0.7], "score": [0.7, None, 0.4, 0.6], "reason": ["", "below", "k", ""],
        "content": [long, "预算削减到三十万元，推广活动从下周开始执行", long, "a &lt;b&gt; tag"],
    })


def _built(lang: str) -> dict:
    """Every chart of lab/figures.py as its page builds it, worded in ``lang``."""
    say = _say(lang)
    pollution = pd.DataFrame({"kind": ["noise", "stale"], "blind_before": [1, 0], "governed_before": [0, 0],
                              "blind_after": [2, 1], "governed_after": [0, 1], "sandbox_before": [1, 0],
                              "sandbox_after": [2, 1]})
    pairs = pd.DataFrame({"id": ["p1", "p2"], "similarity": [0.95, 0.3], "expected": ["update", ""],
                          "plain_rule": ["duplicate", "new"], "plain_error": ["silent_loss", ""],
                          "governed": ["update", "new"], "existing": ["a", "c"], "incoming": ["d", "f"]})
    chain = pd.DataFrame({"version": [1, 2], "created_at": ["2026-05-04T09:00:00Z", "2026-05-10T09:00:00Z"],
                          "content": ["budget 500,000", "budget 300,000"], "is_deprecated": [True, False],
                          "superseded_by": ["f2", None]})
    return {
        "candidate_scores": figures.candidate_scores(_candidates(), 0.3, text=figures.words("candidate_scores", say),
                                                     about="What is the campaign budget now?"),
        "pollution_by_kind": figures.pollution_by_kind(pollution, text=figures.words("pollution_by_kind", say)),
        "erasure_checks": figures.erasure_checks(pd.DataFrame({"path": ["summary"], "before": [1], "after": [0]}),
                                                 text=figures.words("erasure_checks", say)),
        "similarity_axis": figures.similarity_axis(pairs, conflict_band=0.78, duplicate_band=0.92,
                                                   text=figures.words("similarity_axis", say)),
        "version_timeline": figures.version_timeline(chain, text=figures.words("version_timeline", say)),
        "score_distributions": figures.score_distributions({"dense · e5": ([0.9, 0.8], [0.1, 0.2], 0.5)},
                                                           text=figures.words("score_distributions", say)),
    }


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lab_chart_has_its_title_in_the_pages_language(lang):
    """A chart copied onto a slide says what it shows: each builder's title is the catalogue's, in each language."""
    built = _built(lang)
    assert set(built) == set(figures.WORDS) == set(figures.SLIDE_WORDS)
    for name, fig in built.items():
        title = fig.layout.title.text
        expected = i18n.TEXT[figures.SLIDE_WORDS[name]["title"]][lang]
        assert title and title.split("<br>")[0] == expected.replace("&", "&amp;"), (name, title)
        assert fig.layout.margin.t >= 50, (name, "the title needs room above the plot")
    assert built["candidate_scores"].layout.title.subtitle.text == "What is the campaign budget now?"  # under it


def test_the_candidate_chart_names_each_bar_by_its_memorys_text_and_keeps_the_id_in_the_hover_box():
    """The room reads the memories' texts, not m4 and m54: each bar's label is its text, shortened with an ellipsis
    (a CJK character counts two columns), unique when two texts are the same; the id and the whole text stay in the
    hover box. Text the caller escaped for plotly (``&lt;``) is cut whole, never inside an entity."""
    fig = figures.candidate_scores(_candidates(), 0.3)
    labels = [x for trace in fig.data if trace.type == "bar" for x in trace.x]
    assert labels and not [x for x in labels if IDS.match(x)], labels
    assert "The campaign budget…" in labels and "The campaign budget…·2" in labels, labels
    assert "预算削减到三十万元…" in labels, labels  # 9 wide characters (18 columns) and the ellipsis
    assert "a &lt;b&gt; tag" in labels, labels
    assert all(figures._columns(x.split("·")[0].replace("&lt;", "<").replace("&gt;", ">")) <= figures.LABEL_COLUMNS
               for x in labels)
    hover = {row[0]: row[2] for trace in fig.data if trace.type == "bar" for row in trace.customdata}
    assert set(hover) == {"m4", "m54", "m7", "m8"} and hover["m4"].endswith("May review")
    assert sorted(fig.layout.xaxis.categoryarray) == sorted(labels)  # the axis keeps the frame's (similarity) order
    assert fig.layout.xaxis.title.text == "candidate memory"


def test_short_text_keeps_short_texts_and_cuts_long_ones_by_columns():
    assert figures.short_text("budget  300,000\nyuan") == "budget 300,000 yuan"
    assert figures.short_text("x" * 40, 10) == "x" * 9 + "…"
    assert figures.short_text("The campaign budget was cut", 22) == "The campaign budget…"  # not "budget w…"
    assert figures.short_text("预算" * 10, 10) == "预算预算…"  # 4 wide characters (8 columns) and the ellipsis


def _chart_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted((ROOT / "lab" / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "plotly_chart":
                calls.append((path.name, node))
    return calls


def test_every_pages_chart_gives_the_camera_a_named_slide_at_2x():
    """Every st.plotly_chart of the pages passes figures.slide_config with its own file name: the modebar camera
    downloads ``<name>.png`` at 1280x720 drawn at 2x (2560x1440), not the chart's size on the page (666x370)."""
    calls = _chart_calls()
    assert len(calls) >= 9, calls  # every page's charts (the study's four curves share one call site)
    names = []
    for page, call in calls:
        config = next((k.value for k in call.keywords if k.arg == "config"), None)
        assert isinstance(config, ast.Call) and ast.unparse(config.func) == "figures.slide_config", (page, call.lineno)
        names.append(ast.unparse(config.args[0]))
    assert len(set(names)) == len(names), names
    options = figures.slide_config("recall-candidates")["toImageButtonOptions"]
    assert options == {"format": "png", "width": 1280, "height": 720, "scale": 2, "filename": "recall-candidates"}


@pytest.mark.app
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_recall_pages_chart_element_carries_the_title_the_texts_and_the_slide_config(lang):
    """What the recall page sends the browser: its chart titled in the page's language, bars named by texts, and
    the camera's slide options (AppTest keeps the chart's spec and config as sent)."""
    from tests.test_app import open_app

    at = open_app(lang=lang)
    charts = at.get("plotly_chart")
    assert charts, lang
    spec, config = json.loads(charts[0].proto.spec), json.loads(charts[0].proto.config)
    assert spec["layout"]["title"]["text"].startswith(i18n.TEXT["fig.title.candidates"][lang])
    labels = [x for trace in spec["data"] if trace["type"] == "bar" for x in trace["x"]]
    assert labels and not [x for x in labels if IDS.match(x)], labels
    assert config["toImageButtonOptions"]["scale"] == 2 and config["toImageButtonOptions"]["width"] == 1280


# --- the study's report -------------------------------------------------------------------------------------------

def _study():
    path = SCENARIOS_DIR / "workshop_en.json"
    result = run_study(str(path), mode="lexical", thresholds="0.1:0.9:0.1", top_ks="5,10")
    facts = report.Facts(dataset="workshop-en", digest=content_hash(path.read_bytes()), rule_words="highest F1",
                         counts={"memories": 78, "questions": 12})
    return result, facts


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def _words(lang: str) -> tuple[dict, dict]:
    return ({key: i18n.TEXT[key][lang] for key in report.KEYS},
            {v["en"]: v[lang] for k, v in i18n.TEXT.items() if k.startswith("studyfig.")})


@pytest.mark.process  # Chromium
def test_the_study_report_names_the_dataset_and_the_point_and_carries_every_chart_as_a_slide_png():
    """report.md names the dataset (with the file's SHA-256), the settings swept and the recommended point with its
    figures, and shows each of the study's charts as an image of the zip: a PNG of 2560x1440 (1280x720 at 2x)
    drawn by the real image engine (kaleido and the machine's Chromium, offline)."""
    pytest.importorskip("kaleido", reason="kaleido is in requirements.txt")
    result, facts = _study()
    say, phrases = _words("en")
    zipped = zipfile.ZipFile(io.BytesIO(report.study_zip(result, facts, say=say, phrases=phrases)))
    text = zipped.read("report.md").decode("utf-8")
    row = result.recommended.row
    assert "# Threshold study: `workshop-en`" in text and f"`{facts.digest}`" in text
    assert f"| {row.threshold:g} | {row.top_k} | {row.decay_rate:g} | {row.precision:.3f} | {row.recall:.3f} |" in text
    assert "0.1, 0.2, 0.3" in text and "- top_k values: 5, 10" in text
    assert sorted(zipped.namelist()) == sorted(["report.md", *(f"charts/{c}.png" for c in report.CHARTS)])
    for chart in report.CHARTS:
        assert re.search(rf"!\[[^\]]+\]\(charts/{chart}\.png\)", text), chart
        assert _png_size(zipped.read(f"charts/{chart}.png")) == (2560, 1440), chart
    assert report.file_name(result) == "study-report-workshop-en-lexical-turns.zip"


def test_without_an_image_engine_the_report_says_why_and_carries_each_chart_as_a_standalone_html_file():
    """A server without Chromium still gives the report, in Chinese on a Chinese page: each chart an interactive HTML
    file that loads plotly.js from beside it (nothing fetched), and one line saying why there are no images."""
    result, facts = _study()
    say, phrases = _words("zh")

    def no_engine(figs):
        raise report.ImageEngineError("ChromeNotFoundError: no Chrome")

    zipped = zipfile.ZipFile(io.BytesIO(report.study_zip(result, facts, say=say, phrases=phrases, draw=no_engine)))
    text = zipped.read("report.md").decode("utf-8")
    assert text.startswith("# 阈值研究：") or text.startswith("# 阈值研究: "), text[:40]
    assert "ChromeNotFoundError: no Chrome" in text and "推荐的工作点" in text
    assert "charts/plotly.min.js" in zipped.namelist()
    for chart in report.CHARTS:
        page = zipped.read(f"charts/{chart}.html").decode("utf-8")
        assert f"](charts/{chart}.html)" in text
        assert 'src="plotly.min.js"' in page and not re.search(r"src=\"https?:", page), chart
    assert "精确率" in zipped.read("charts/pr-vs-threshold.html").decode("utf-8")  # the chart in the page's words


def test_the_reports_data_cannot_become_markdown():
    """A file's name is data: in report.md it is a code span where the report names it, and escaped in the charts'
    titles that name it (no link, no image, no HTML), whatever it holds."""
    from dataclasses import replace

    result, facts = _study()
    say, phrases = _words("en")
    name = "x](http://evil)`![i](y)<img src=z>"
    hostile = report.Facts(dataset=name, digest=facts.digest, rule_words="highest F1")

    def no_engine(figs):
        raise report.ImageEngineError("none")

    zipped = report.study_zip(replace(result, dataset=name), hostile, say=say, phrases=phrases, draw=no_engine)
    text = zipfile.ZipFile(io.BytesIO(zipped)).read("report.md").decode("utf-8")
    assert f"``{name}``" in text
    titles = [line for line in text.splitlines() if line.startswith(("### ", "[", "!["))]
    assert len(titles) == 2 * len(report.CHARTS), titles
    for line in titles:  # every special character of the name escaped: a backslash before it
        assert not re.search(r"(?<!\\)(<img|\]\(http|!\[i)", line.split("](charts/")[0][1:]), line
    assert "### Precision and recall vs threshold: x\\]\\(http://evil\\)" in text


# --- the lesson's study step ----------------------------------------------------------------------------------------

@pytest.mark.app
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_lessons_study_step_recommends_a_threshold_strictly_inside_its_sweep(lang):
    """Step 7 in each language sweeps over its model's scale (e5's Chinese scale: 0.79 to 0.97), so the recommended
    threshold is a point the curves chose, not the sweep's edge (0.9 was, over e5 curves flat below 0.8); the page
    offers the report."""
    from tests.test_app import metric, open_app

    at = open_app(lang=lang)
    at.sidebar.button(key=f"lesson.step.{len(lesson.STEPS) - 1}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    swept = parse_range(at.text_input(key=lesson.STUDY_THRESHOLDS_KEY).value, name="threshold")
    assert at.text_input(key=lesson.STUDY_THRESHOLDS_KEY).value == lesson.study_thresholds(lang)
    chosen = float(metric(at, i18n.TEXT["knob.threshold"][lang]))
    assert min(swept) < chosen < max(swept), (lang, chosen, swept)
    assert [b for b in at.get("download_button") if b.proto.id and "report" in b.proto.id], "the report's button"


def test_the_chinese_sweep_covers_e5s_scale():
    from memory.eval import load_scales, scale_name

    scale = load_scales()[scale_name("e5", "zh")]
    swept = parse_range(lesson.study_thresholds("zh"), name="threshold")
    assert min(swept) <= scale[0] and max(swept) >= scale[-1] and len(swept) <= 25
    assert lesson.study_thresholds("en") == "0.1:0.9:0.05"
