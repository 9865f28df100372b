"""A study as a report to hand on: ``report.md`` and its chart images in one zip (no Streamlit here; the study page
offers it as a download built when clicked).

The report names the dataset studied (as the participant knows it, with the SHA-256 of the bytes read), the
settings swept, the recommended operating point with its figures, and each chart of the study. The charts are PNG
slides (lab.figures.SLIDE: 1280x720 drawn at 2x) drawn by kaleido, which drives the machine's Chromium
(``/usr/bin/chromium`` on the lab's machines) offline. A server with no Chromium (or no kaleido) still gives the
report: each chart is then a standalone HTML file, with plotly.js once beside them (no request outside the file),
and report.md says why. :func:`chart_pngs` and :func:`study_zip` are tested directly (tests/test_slides.py).
"""

from __future__ import annotations

import asyncio
import html
import io
import re
import threading
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Mapping

import plotly.graph_objects as go

from memory.eval import StudyResult

from . import figures, study_figures
from .safe import literal_figure

CHARTS = ("pr-vs-threshold", "pr-curve", "injected", "by-category")
"""The report's charts (file stems under ``charts/``), in the order the study page shows them."""
KEYS = ("report.title", "report.made", "report.dataset", "report.name", "report.digest", "report.unit",
        "report.settings", "report.mode", "report.embedder", "report.thresholds", "report.top_ks", "report.decays",
        "report.rule", "report.budget", "report.no_budget", "report.recommended", "report.none", "report.charts",
        "report.interactive", "study.m_memories", "study.m_owners", "study.m_questions", "study.m_answerable",
        "study.m_no_answer", "knob.threshold", "knob.decay_rate", "study.precision", "study.recall", "study.injected")
"""The catalogue keys the report is worded with (lab/locales/<lang>.json): :func:`words` reads them in the page's run,
so the download, built later on another thread, is in the page's language."""
ENGINE_TIMEOUT_S = 90.0
"""How long Chromium may take for one chart before the report falls back to HTML charts."""
_ENGINE = threading.Lock()
"""One image engine (one Chromium) at a time in the server process: two clicks in a room do not start two."""


class ImageEngineError(RuntimeError):
    """No chart images on this server: kaleido or Chromium is missing or failed (the message says which, one line)."""


@dataclass(frozen=True)
class Facts:
    """What the page knows of the study that the result does not carry."""

    dataset: str
    """The dataset as the participant knows it (a shipped scenario's name, else the file's name)."""
    digest: str
    """SHA-256 of the bytes studied (memory.eval.content_hash)."""
    rule_words: str
    """The rule and its tie-breaks in the page's language."""
    counts: Mapping[str, int] = field(default_factory=dict)
    """The dataset's summary (memory.eval.Dataset.summary: memories, owners, questions, answerable, no_answer)."""
    made: datetime | None = None
    """When the report was asked for (UTC); now by default."""


def words(say: Callable[[str], str]) -> dict[str, str]:
    """The report's words in the page's language (``say`` is lab.i18n.t_raw), read in the page's run."""
    return {key: say(key) for key in KEYS}


def file_name(result: StudyResult) -> str:
    """The download's name: ``study-report-<dataset>-<mode>-<unit>.zip`` (as the study's CSV is named)."""
    return f"study-report-{_stem(result.dataset)}-{result.mode}-{result.unit}.zip"


def charts(result: StudyResult, phrases: Mapping[str, str]) -> dict[str, go.Figure]:
    """The study's charts by file stem (:data:`CHARTS`), worded with ``phrases`` (lab.i18n.phrases("studyfig")) as the
    page words them, laid out for a whole slide on a white background."""
    built = (study_figures.precision_recall_vs_threshold(result), study_figures.pr_curve(result),
             study_figures.injected_vs_threshold(result), study_figures.category_breakdown(result))
    out = {}
    for name, fig in zip(CHARTS, built):
        fig = figures.localize(literal_figure(fig), phrases)
        fig.update_layout(template="plotly_white", font={"size": 16}, legend={"orientation": "h", "y": -0.15})
        out[name] = fig
    return out


def chart_pngs(figs: Mapping[str, go.Figure], *, timeout: float = ENGINE_TIMEOUT_S) -> dict[str, bytes]:
    """Each figure as a slide PNG (lab.figures.SLIDE), drawn by kaleido in one Chromium for all of them;
    :class:`ImageEngineError` (one line) when kaleido or Chromium is missing or fails."""
    try:
        import kaleido
    except ImportError:
        raise ImageEngineError("kaleido is not installed (pip install -r requirements.txt)") from None
    opts = {key: figures.SLIDE[key] for key in ("format", "width", "height", "scale")}

    async def draw() -> dict[str, bytes]:
        async with kaleido.Kaleido(n=1, timeout=timeout, mathjax=False) as engine:  # no MathJax: nothing fetched
            return {name: await engine.calc_fig(fig, opts=opts) for name, fig in figs.items()}

    box: dict[str, object] = {}

    def run() -> None:  # a thread of its own: the caller (a Streamlit download) may be inside an event loop
        try:
            box["pngs"] = asyncio.run(draw())
        except BaseException as exc:  # noqa: BLE001 - reported to the caller as one line
            box["error"] = exc

    with _ENGINE:
        worker = threading.Thread(target=run, name="report-charts", daemon=True)
        worker.start()
        worker.join()
    if "error" in box:
        exc = box["error"]
        said = " ".join(str(exc).split())[:200]
        raise ImageEngineError(f"{type(exc).__name__}: {said}" if said else type(exc).__name__)
    return box["pngs"]  # type: ignore[return-value]


def study_zip(result: StudyResult, facts: Facts, *, say: Mapping[str, str], phrases: Mapping[str, str],
              draw: Callable[[Mapping[str, go.Figure]], dict[str, bytes]] = chart_pngs) -> bytes:
    """The report as a zip: ``report.md`` and ``charts/<name>.png`` (or ``charts/<name>.html`` and
    ``charts/plotly.min.js`` when ``draw`` raises :class:`ImageEngineError`). ``say`` is :func:`words`."""
    figs = charts(result, phrases)
    try:
        images, why = {f"{name}.png": png for name, png in draw(figs).items()}, ""
    except ImageEngineError as exc:
        images, why = _html_charts(figs), str(exc)
    titles = {name: _title(fig) for name, fig in figs.items()}
    text = markdown(result, facts, say=say, titles=titles, images=images, why=why)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("report.md", text)
        for name, data in images.items():
            zipped.writestr(f"charts/{name}", data)
    return out.getvalue()


def markdown(result: StudyResult, facts: Facts, *, say: Mapping[str, str], titles: Mapping[str, str],
             images: Mapping[str, bytes], why: str = "") -> str:
    """``report.md``: the dataset, the settings, the recommended point and its figures, then each chart (an image,
    or a link to its HTML file with ``why`` there are no images). Data (names, the rule) is in code spans."""
    made = (facts.made or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M")
    lines = [f"# {say['report.title']}: {_code(facts.dataset)}", "", say["report.made"].format(when=made), "",
             f"## {say['report.dataset']}", "",
             f"- {say['report.name']}: {_code(facts.dataset)} ({say['report.unit']}: {_code(result.unit)})",
             f"- {say['report.digest']}: {_code(facts.digest)}"]
    for key, count in (("study.m_memories", "memories"), ("study.m_owners", "owners"),
                       ("study.m_questions", "questions"), ("study.m_answerable", "answerable"),
                       ("study.m_no_answer", "no_answer")):
        if count in facts.counts:
            lines.append(f"- {say[key]}: {facts.counts[count]}")
    budget = f"{result.token_budget:,}" if result.token_budget else say["report.no_budget"]
    lines += ["", f"## {say['report.settings']}", "",
              f"- {say['report.mode']}: {_code(result.mode)}",
              f"- {say['report.embedder']}: {_code(result.embedder or '-')} ({_code(result.scorer)})",
              f"- {say['report.thresholds']}: {_swept(result, 'threshold')}",
              f"- {say['report.top_ks']}: {_swept(result, 'top_k')}",
              f"- {say['report.decays']}: {_swept(result, 'decay_rate')}",
              f"- {say['report.rule']}: {_code(result.recommended.rule)} ({facts.rule_words})",
              f"- {say['report.budget']}: {budget}", "", f"## {say['report.recommended']}", ""]
    row = result.recommended.row
    if row is None:
        lines.append(say["report.none"].format(note=result.recommended.note))
    else:
        heads = (say["knob.threshold"], "top_k", say["knob.decay_rate"], say["study.precision"], say["study.recall"],
                 "F1", say["study.injected"])
        cells = (f"{row.threshold:g}", str(row.top_k), f"{row.decay_rate:g}", _fmt(row.precision), _fmt(row.recall),
                 _fmt(row.f1), f"{row.avg_injected:.2f}")
        lines += ["| " + " | ".join(heads) + " |", "|" + " ---: |" * len(heads), "| " + " | ".join(cells) + " |"]
    lines += ["", f"## {say['report.charts']}", ""]
    if why:
        lines += [say["report.interactive"].format(reason=why), ""]
    for name, title in ((name, _text(title)) for name, title in titles.items()):
        if f"{name}.png" in images:
            lines += [f"### {title}", "", f"![{title}](charts/{name}.png)", ""]
        else:
            lines += [f"### {title}", "", f"[{title}](charts/{name}.html)", ""]
    return "\n".join(lines)


def _html_charts(figs: Mapping[str, go.Figure]) -> dict[str, bytes]:
    """Each chart as a standalone HTML file that loads ``plotly.min.js`` from beside it (included once)."""
    from plotly.offline import get_plotlyjs

    out = {f"{name}.html": fig.to_html(include_plotlyjs="directory", full_html=True).encode("utf-8")
           for name, fig in figs.items()}
    out["plotly.min.js"] = get_plotlyjs().encode("utf-8")
    return out


_TAGS = re.compile(r"<[^>]*>")


def _title(fig: go.Figure) -> str:
    """A chart's title as plain text on one line (its markup and line breaks gone, entities read)."""
    return " ".join(html.unescape(_TAGS.sub(" ", fig.layout.title.text or "")).split())


_MARKDOWN = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~&])")


def _text(value: str) -> str:
    """``value`` as literal Markdown text (a chart's title names the dataset, which is data): every character that
    could start a link, an image, HTML, emphasis or code is backslash-escaped."""
    return _MARKDOWN.sub(r"\\\1", value)


def _code(value: object) -> str:
    """``value`` as a Markdown code span (a fence longer than any run of backticks in it): shown as written."""
    text = " ".join(str(value).split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _swept(result: StudyResult, knob: str) -> str:
    """The values of ``knob`` the sweep covered, in order."""
    return ", ".join(f"{v:g}" for v in sorted({getattr(row, knob) for row in result.sweep}))


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _stem(name: str) -> str:
    return re.sub(r"[^\w.-]+", "-", name).strip("-") or "dataset"
