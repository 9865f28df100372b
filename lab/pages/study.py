"""Study: threshold-sweep curves and the recommended operating point, from memory.eval.study on labelled data.

The expensive part (memory.eval.ranking.rank: writing the dataset and scoring every question once) is cached
per (dataset file, unit, mode, embedder) for the whole server process; a sweep then re-runs govern only.
Results of this session are kept per request, so re-running the page recomputes nothing.

On lesson step 7 what its line points at (lab.lesson.target_box) comes first, right under the title, on a projector's
first screen: precision and recall against the threshold across the page's width, the recommended point starred on
it, then the recommendation; the agent snippets, the study's controls and the other charts follow.
"""

from __future__ import annotations

import json
import threading
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import streamlit as st

from lab import (DATASETS_DIR_ENV, LOCOMO_SAMPLE, agents, dataset_names, datasets_dir, engine, figures, lesson, state,
                 study_figures)
from lab.i18n import headers, labels, phrases, t, t_raw
from lab import report
from lab.safe import Markup, literal_figure
from memory import MemoryLabError, Scenario, csv_bytes, parse_scenario, read_regular_file, shipped_scenarios
from memory.eval import (
    content_hash,
    parse_rule,
    DEFAULT_DECAY_RATES,
    DEFAULT_THRESHOLDS,
    DEFAULT_TOP_KS,
    LOCOMO_PREFIX,
    MODES,
    Dataset,
    Rankings,
    StudyResult,
    calibrate,
    is_locomo,
    parse_locomo,
    parse_range,
    rank,
    scenario_dataset,
    sweep,
    validate_options,
)

PAGE = "study"
URL_PATH = "study-view"  # this page's url path (lab.PAGES): what a lesson step names
TARGET = "curves"  # the section lesson step 7 points at (lab.lesson.TARGETS)
# Pixels of the precision-and-recall chart as a lesson step's target: the whole chart on a projector's first screen
# under the lesson's line and the page's title (the page's half-width charts are 500).
TARGET_CHART_HEIGHT = 320
SAMPLE = "locomo-sample"
UPLOADED = "uploaded-scenario"
UPLOAD_PREFIX = "upload:"
OWN = "own-file"  # the dataset option of a file the participant uploads on this page (LoCoMo or scenario JSON)
OWN_KEY = f"{PAGE}.own"
RESULTS = f"{PAGE}.results"
# (No bare string literals at module level in pages: Streamlit's "magic" would draw them.)
KEPT_RESULTS = 8  # study results a session keeps (one per request: dataset, unit, mode, ranges, rule, budget)
KEPT_RANKINGS = 6  # rankings the server process keeps (LoCoMo with MiniLM: tens of MB each)
RULES = ("f1", "precision")
PRECISION_TARGET = 0.8  # the calibration table's second column: the threshold reaching this precision


@dataclass(frozen=True)
class Request:
    """One study as the page's controls describe it (hashable: the session's result cache key)."""

    spec: str
    """The dataset: a scenario (its file name, or its name in the datasets folder), ``locomo:`` and a LoCoMo file's
    name, or ``upload:<key>`` for the scenario uploaded in the sidebar (never a server path: errors name it)."""
    digest: str
    """sha256 of the bytes read (memory.core.safefile.read_regular_file, size-capped), so an edited file is studied
    afresh; the settings file names the data by it (memory.eval.content_hash)."""
    unit: str
    mode: str
    embedder: str
    thresholds: tuple[float, ...]
    top_ks: tuple[int, ...]
    decay_rates: tuple[float, ...]
    rule: str
    token_budget: int | None
    quick: bool
    """A shipped scenario: small enough to run without pressing the button."""
    scenario: Scenario | None = field(default=None, compare=False, hash=False)
    """The sidebar's uploaded scenario (``spec`` and ``digest`` identify it)."""
    raw: bytes | None = field(default=None, compare=False, hash=False, repr=False)
    """The file's bytes as read for ``digest`` (parsed from these, never read again); not kept with results."""
    name: str = field(default="", compare=False)
    """The dataset as the participant knows it (lab.agents.Studied): a shipped scenario's name, else the file's name
    (``locomo:`` and the name for a LoCoMo file)."""

    @property
    def settings(self) -> int:
        return len(self.thresholds) * len(self.top_ks) * len(self.decay_rates)

    @property
    def key(self) -> tuple:
        """The session's result cache key: the compared fields as a plain tuple. A page's classes are defined again
        on every run, and a dataclass equals only an instance of its own class: keyed by Request, a result was never
        found again after a rerun (an uploaded file's study asked to be run again after "Apply")."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.compare)


# --- cached work ------------------------------------------------------------------------------------------

@st.cache_resource(show_spinner=False, max_entries=8)
def _cached_dataset(spec: str, unit: str, digest: str, _scenario: Scenario | None, _raw: bytes | None) -> Dataset:
    if _scenario is not None:
        return scenario_dataset(_scenario)
    if spec.startswith(LOCOMO_PREFIX):
        return parse_locomo(_raw, source=spec[len(LOCOMO_PREFIX):], unit=unit)
    return scenario_dataset(parse_scenario(_raw, source=spec))


def _dataset(req: Request) -> Dataset:
    return _cached_dataset(req.spec, req.unit, req.digest, req.scenario, req.raw)


@dataclass
class _Rankings:
    """The process-wide ranking cache: (dataset file, unit, mode, embedder) -> Rankings, oldest first.

    Not an ``st.cache_resource`` function itself: those replay the elements their body touched, and the
    ranking feeds the caller's progress bar, which does not exist on a later run.
    """

    entries: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


@st.cache_resource(show_spinner=False)
def _ranking_cache() -> _Rankings:
    return _Rankings()


def _rankings(req: Request, progress) -> Rankings:
    """The expensive part, once per (dataset file, unit, mode, embedder) in this server process."""
    cache = _ranking_cache()
    key = (req.spec, req.unit, req.digest, req.mode, req.embedder if req.mode != "lexical" else None)
    with cache.lock:
        found = cache.entries.get(key)
    if found is None:
        found = rank(_dataset(req), mode=req.mode, embedder=req.embedder,
                     progress=progress)
        with cache.lock:
            cache.entries[key] = found
            while len(cache.entries) > KEPT_RANKINGS:
                cache.entries.pop(next(iter(cache.entries)))
    return found


def _run(req: Request) -> StudyResult:
    """Rank (or reuse the cached ranking) and sweep, with one progress bar over both, as run_study counts it."""
    data = _dataset(req)
    ranked_total = len(data.memories) + len(data.questions)
    total = ranked_total + req.settings
    bar = st.progress(0.0, text=t("study.progress", done=0, total=total))

    def report(done: int) -> None:
        bar.progress(min(done / total, 1.0), text=t("study.progress", done=done, total=total))

    rankings = _rankings(req, lambda done, _total: report(done))
    result = sweep(rankings, thresholds=req.thresholds, top_ks=req.top_ks, decay_rates=req.decay_rates,
                   rule=req.rule, token_budget=req.token_budget,
                   progress=lambda done, _total: report(ranked_total + done))
    bar.empty()
    return result


def _result(req: Request, *, run: bool) -> StudyResult | None:
    """This session's result for the request; computed now when ``run`` (else None when there is none yet)."""
    results: dict[tuple, StudyResult] = st.session_state.setdefault(RESULTS, {})
    if req.key not in results and run:
        results[req.key] = _run(req)  # the key keeps no file bytes
        while len(results) > KEPT_RESULTS:
            results.pop(next(iter(results)))
    return results.get(req.key)


def _settled(req: Request, *, run: bool, hint: str) -> StudyResult | None:
    """The result, or None after a message: what went wrong, or ``hint`` (press a button) when not run yet."""
    try:
        result = _result(req, run=run)
    except MemoryLabError as exc:
        st.error(t("study.data_error", error=exc))
        return None
    if result is None:
        st.info(hint)
    return result


# --- controls ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Picked:
    spec: str
    quick: bool
    digest: str
    scenario: Scenario | None = None
    raw: bytes | None = None
    name: str = ""


def _folder_names() -> tuple[Path | None, list[str]]:
    """The instructor's datasets folder (MEMORY_DATASETS_DIR) and its files by name; a message when it is set but
    cannot be listed."""
    folder = datasets_dir()
    if folder is None:
        return None, []
    try:
        return folder, dataset_names(folder)
    except OSError as exc:
        st.warning(t("study.folder_error", env=DATASETS_DIR_ENV, error=exc.strerror or type(exc).__name__))
        return folder, []


def _own_changed() -> None:
    """on_change of the page's uploader: a new file becomes the dataset studied; a removed one gives the choice back."""
    if st.session_state.get(OWN_KEY) is not None:
        st.session_state["dataset"] = OWN
    elif st.session_state.get("dataset") == OWN:
        del st.session_state["dataset"]


def _own_dataset(own) -> _Picked | None:
    """A participant's own dataset file (LoCoMo or scenario JSON) from the page's uploader, within the lab's upload cap
    (MEMORY_MAX_FILE_MB and server.maxUploadSize); None with a one-line message naming the file when it is over the cap.
    Named by its file name alone; a malformed file is named with its item and field where the study reads it."""
    try:
        too_big = state.oversized(own)
    except MemoryLabError as exc:
        st.error(t("study.data_error", error=exc))
        return None
    if too_big:
        st.error(too_big)
        return None
    raw = own.getvalue()  # parsed once per file and unit by the page's dataset cache, which names a malformed one
    spec = (LOCOMO_PREFIX if is_locomo(raw) else "") + Path(own.name).name
    return _Picked(spec, quick=False, digest=content_hash(raw), raw=raw, name=spec)


def _pick_dataset(current: state.Settings) -> _Picked | None:
    """What to study, chosen by name: a shipped scenario, the sidebar's uploaded scenario, the LoCoMo sample or a
    file of the instructor's datasets folder. The file is read once, size-capped (memory.core.safefile); None with a
    one-line message when it cannot be."""
    shipped = shipped_scenarios()
    uploaded = current.scenario_key.startswith(state.UPLOAD_PREFIX)
    folder, names = _folder_names()
    own = st.file_uploader(t("study.own"), type=["json"], key=OWN_KEY, help=t("study.own_help"), on_change=_own_changed)
    options = [*([OWN] if own is not None else []), *shipped, *([UPLOADED] if uploaded else []),
               *([SAMPLE] if LOCOMO_SAMPLE.is_file() else []), *names]
    default = OWN if own is not None else current.scenario_key if current.scenario_key in shipped else (
        UPLOADED if uploaded else state.DEFAULT_SCENARIO)
    names_of = {UPLOADED: t_raw("study.uploaded", name=current.scenario.name),
                OWN: t_raw("study.own_option", name=own.name if own is not None else "")}
    choice = st.selectbox(t("study.dataset"), options, key="dataset", bind="query-params",  # options: plain text
                          index=options.index(default) if default in options else 0, help=t("study.dataset_help"),
                          format_func=lambda o: names_of.get(o, o))
    if not LOCOMO_SAMPLE.is_file():
        st.info(t("study.no_sample", path=LOCOMO_SAMPLE.name))  # the file's name, never the server's folder
    if choice == OWN and own is not None:
        return _own_dataset(own)
    if choice == UPLOADED:
        key, upload = current.scenario_key, st.session_state.get(state.UPLOAD_KEY)
        if upload is None:  # not reached: the sidebar's scenario is an upload only while the uploader holds it
            return _Picked(UPLOAD_PREFIX + key, quick=False, digest=key[len(state.UPLOAD_PREFIX):],
                           scenario=current.scenario, name=current.scenario.name)
        return _Picked(UPLOAD_PREFIX + key, quick=False, digest=content_hash(upload.getvalue()),
                       scenario=current.scenario, name=Path(upload.name).name)
    if choice in shipped:
        path, root, what = shipped[choice], None, "scenario file"
    elif choice == SAMPLE:
        path, root, what = LOCOMO_SAMPLE, None, "LoCoMo file"
    else:  # a name listed in the folder: only a regular file inside it is read (no symlink out, no device)
        path, root, what = folder / choice, folder, "dataset file"
    try:
        raw = read_regular_file(path, what=what, root=root)
    except MemoryLabError as exc:
        st.error(t("study.data_error", error=exc))
        return None
    locomo = choice == SAMPLE or (choice in names and is_locomo(raw))
    source = choice if choice in names else path.name  # named by its file name alone, never a server path
    spec = (LOCOMO_PREFIX if locomo else "") + source
    # a shipped scenario by its own name (as `python -m memory study --export-point` names it), a file by its name
    known = state.load_shipped(str(path)).name if choice in shipped else spec
    return _Picked(spec, quick=choice in shipped, digest=content_hash(raw), raw=raw, name=known)


def _request(current: state.Settings, config) -> Request | None:
    """The study the controls describe, validated (bad ranges or files show a message and give None)."""
    picked = _pick_dataset(current)
    if picked is None:
        return None
    spec, quick = picked.spec, picked.quick
    turns_only = not spec.startswith(LOCOMO_PREFIX)
    c1, c2, c3 = st.columns(3)
    mode = c1.selectbox(t("study.mode"), MODES, key="mode", bind="query-params", help=t("study.mode_help"))
    unit = c2.radio(t("study.unit"), ("turns", "facts"), key=f"{PAGE}.unit", horizontal=True, disabled=turns_only,
                    format_func=labels("study.unit", ("turns", "facts")),
                    help=t("study.unit_help"))
    c3.caption(t("study.embedder", embedder=current.embedder))
    r1, r2, r3 = st.columns(3)
    thresholds = r1.text_input(t("study.thresholds"), DEFAULT_THRESHOLDS, key=f"{PAGE}.thresholds",
                               help=t("study.range_help"))
    top_ks = r2.text_input(t("study.top_ks"), DEFAULT_TOP_KS, key=f"{PAGE}.top_ks", help=t("study.range_help"))
    decays = r3.text_input(t("study.decays"), DEFAULT_DECAY_RATES, key=f"{PAGE}.decays", help=t("study.range_help"))
    o1, o2, o3 = st.columns(3)
    rule_kind = o1.selectbox(t("study.rule"), RULES, key=f"{PAGE}.rule", format_func=labels("study.rule", RULES))
    min_recall = o2.number_input(t("study.min_recall"), 0.0, 1.0, 0.5, 0.05, key=f"{PAGE}.min_recall",
                                 disabled=rule_kind != "precision")
    budget = o3.checkbox(t("study.budget", budget=config.token_budget), key=f"{PAGE}.budget")
    rule = "f1" if rule_kind == "f1" else f"precision@recall>={min_recall:g}"
    token_budget = config.token_budget if budget else None
    try:
        validate_options(thresholds=thresholds, top_ks=top_ks, decay_rates=decays, rule=rule, token_budget=token_budget)
    except MemoryLabError as exc:
        st.warning(t("study.bad_options", error=exc))
        return None
    return Request(
        spec=spec, digest=picked.digest, unit="turns" if turns_only else unit, mode=mode,
        embedder=current.embedder,
        thresholds=parse_range(thresholds, name="threshold"), top_ks=parse_range(top_ks, name="top_k", integer=True),
        decay_rates=parse_range(decays, name="decay_rate"), rule=rule, token_budget=token_budget, quick=quick,
        scenario=picked.scenario, raw=picked.raw, name=picked.name or spec,
    )


def _render_dataset(data: Dataset) -> None:
    info = data.summary()
    cols = st.columns(5)
    cols[0].metric(t("study.m_memories"), info["memories"])
    cols[1].metric(t("study.m_owners"), info["owners"])
    cols[2].metric(t("study.m_questions"), info["questions"])
    cols[3].metric(t("study.m_answerable"), info["answerable"])
    cols[4].metric(t("study.m_no_answer"), info["no_answer"])
    if info["notes"]:
        st.caption(t("study.notes", notes=", ".join(f"{k} {v}" for k, v in info["notes"].items())))


# --- results ----------------------------------------------------------------------------------------------

def _apply(values: dict) -> None:
    """on_click: the recommended setting into the sidebar's bound sliders (and so into the URL)."""
    for key, value in values.items():
        st.session_state[key] = value
    st.session_state[f"{PAGE}.applied"] = values


def _slider_values(row) -> tuple[dict, str | None]:
    """The recommended (threshold, top_k, decay_rate) as sidebar values, or the reason they do not fit the sliders."""
    values = {"threshold": row.threshold, "top_k": row.top_k, "decay_rate": row.decay_rate}
    for knob in state.KNOBS:
        if knob.key in values:
            low, high = knob.bounds
            if not low <= values[knob.key] <= high:
                return values, t("study.apply_out_of_range", key=knob.key, value=values[knob.key], low=low, high=high)
    return values, None


def _render_recommendation(result: StudyResult) -> None:
    rec = result.recommended
    st.subheader(t("study.recommended"))
    st.caption(t("study.rule_stated", rule=Markup(parse_rule(rec.rule).name), description=_rule_words(rec.rule)))
    if rec.row is None:
        st.warning(t("study.none_recommended", note=rec.note))
        return
    row = rec.row
    # two rows (the setting, then what it gives): seven in a row cut labels and values ("0.…") at 1024x768
    top, bottom = st.columns(4), st.columns(4)
    cols = [*top[:3], *bottom]
    cols[0].metric(t("knob.threshold"), f"{row.threshold:g}")
    cols[1].metric("top_k", row.top_k)
    cols[2].metric(t("knob.decay_rate"), f"{row.decay_rate:g}")
    cols[3].metric(t("study.precision"), _fmt(row.precision))
    cols[4].metric(t("study.recall"), _fmt(row.recall))
    cols[5].metric("F1", _fmt(row.f1))
    cols[6].metric(t("study.injected"), f"{row.avg_injected:.2f}")
    values, problem = _slider_values(row)
    st.button(t("study.apply"), key=f"{PAGE}.apply", on_click=_apply, args=(values,), disabled=problem is not None,
              icon=":material/tune:", type="primary")
    if problem:
        st.caption(problem)
    applied = st.session_state.get(f"{PAGE}.applied")
    if applied == values:
        st.success(t("study.applied", **values))


def _worded(fig):
    """A figure of lab/study_figures.py (English there) in the page's language; its data (the dataset's name, its
    categories) shown as written, never as plotly markup."""
    return figures.localize(literal_figure(fig), phrases("studyfig"))


def _half(fig):
    """A study figure in the page's language, laid out for half of the page."""
    return figures.for_half_width(_worded(fig))


def _table(rows, **options) -> None:
    """A table of dicts (or a frame) with its headers in the page's language."""
    columns = rows.columns if hasattr(rows, "columns") else list(dict.fromkeys(k for row in rows for k in row))
    st.dataframe(rows, hide_index=True, column_config=headers(columns), **options)


# The study's charts, two in a row: (key, figure of lab/study_figures.py, slide file name).
CURVES = (("pr_threshold", study_figures.precision_recall_vs_threshold, "study-pr-vs-threshold"),
          ("pr_curve", study_figures.pr_curve, "study-pr-curve"),
          ("injected", study_figures.injected_vs_threshold, "study-injected"),
          ("categories", study_figures.category_breakdown, "study-by-category"))


def _render_target_curve(result: StudyResult) -> None:
    """A lesson step's target: precision and recall against the threshold (the recommended point starred) across the
    page, short enough to fit a projector's first screen whole, the star labelled with its threshold (the room reads
    the lab's answer to the line's question without scrolling to the recommendation)."""
    name, draw, slide = CURVES[0]
    fig = _worded(draw(result))
    fig.update_layout(height=TARGET_CHART_HEIGHT, margin={"t": 50, "b": 40})
    if (row := result.recommended.row) is not None and row.precision is not None:
        fig.add_annotation(x=row.threshold, y=row.precision, text=f"<b>{row.threshold:g}</b>", showarrow=False,
                           yshift=18, font={"size": 14})
    _chart(st, fig, name, slide)


def _chart(container, fig, name: str, slide: str) -> None:
    """One of :data:`CURVES` drawn (a lesson step's target, or two in a row), its slide named ``slide``."""
    container.plotly_chart(fig, key=f"{PAGE}.{name}", config=figures.slide_config(slide))


def _render_curves(result: StudyResult, *, drawn: tuple[str, ...] = ()) -> None:
    """The charts of :data:`CURVES` two in a row (but those ``drawn`` already, as a lesson step's target), then recall
    and precision at k."""
    charts = [chart for chart in CURVES if chart[0] not in drawn]
    for row in range(0, len(charts), 2):
        for col, (name, draw, slide) in zip(st.columns(2), charts[row:row + 2]):
            _chart(col, _half(draw(result)), name, slide)
    st.markdown(f"**{t('study.at_k')}**")
    _table([{"k": k, "recall@k": _fmt(a.recall), "precision@k": _fmt(a.precision), "questions": a.questions}
            for k, a in result.at_k.items()])


def _render_table(result: StudyResult) -> None:
    st.subheader(t("study.sweep"))
    frame = result.to_frame()
    shown = frame.assign(unit=frame["unit"].map(lambda u: t_raw(f"study.unit.{u}"))) if "unit" in frame else frame
    _table(shown, height=min(38 + 35 * len(frame), 420))  # the unit in the page's words; the CSV keeps the code
    stem = f"study-{result.dataset.replace(':', '-')}-{result.mode}-{result.unit}"
    d1, d2 = st.columns(2)
    d1.download_button(t("study.csv"), csv_bytes(frame), file_name=f"{stem}.csv",
                       mime="text/csv", key=f"{PAGE}.csv", on_click="ignore", width="stretch")
    d2.download_button(t("study.json"), json.dumps(result.to_dict(), ensure_ascii=False, indent=2).encode("utf-8"),
                       file_name=f"{stem}.json", mime="application/json", key=f"{PAGE}.json", on_click="ignore",
                       width="stretch")


def _render_report(req: Request, result: StudyResult, data: Dataset) -> None:
    """The study as a report to hand on (lab.report): report.md and a PNG of each chart, built when clicked (the
    charts are drawn then, on another thread), in the page's language."""
    facts = report.Facts(dataset=req.name, digest=req.digest, rule_words=_rule_words(result.recommended.rule),
                         counts=data.summary())
    say, worded = report.words(t_raw), phrases("studyfig")
    st.download_button(t("report.download"), lambda: report.study_zip(result, facts, say=say, phrases=worded),
                       file_name=report.file_name(result), mime="application/zip", key=f"{PAGE}.report",
                       on_click="ignore", help=t("report.help"), icon=":material/description:")


def _alternatives(req: Request) -> list[tuple[str, str]]:
    """(mode, embedder) to compare with: the other modes with this embedder, then this mode with each other model."""
    mode = req.mode if req.mode != "lexical" else "dense"
    others = [(m, req.embedder) for m in MODES if m != req.mode]
    return others + [(mode, e) for e in state.embedder_choices() if e not in (state.AUTO, req.embedder)]


def _config_name(mode: str, embedder: str) -> str:
    return mode if mode == "lexical" else f"{mode} · {embedder}"


def _rule_words(rule: str) -> str:
    """The recommendation rule's tie-breaks in the page's language (memory.eval.study.Rule words them in English)."""
    parsed = parse_rule(rule)
    return t(f"study.rule_desc.{parsed.kind}", min_recall=parsed.min_recall)


def _render_compare(req: Request, result: StudyResult) -> None:
    st.subheader(t("study.compare"))
    c1, c2 = st.columns(2)
    other_mode, other_embedder = c1.selectbox(t("study.compare_mode"), _alternatives(req), key=f"{PAGE}.other",
                                              format_func=lambda o: _config_name(*o))
    kind = c2.radio(t("study.compare_kind"), ("pr", "threshold"), key=f"{PAGE}.compare_kind", horizontal=True,
                    format_func=labels("study.compare_kind", ("pr", "threshold")))
    other_req = replace(req, mode=other_mode, embedder=other_embedder)
    other_name = _config_name(other_mode, other_embedder)
    clicked = st.button(t("study.compare_run", mode=other_name), key=f"{PAGE}.compare_run",
                        disabled=other_req.key in st.session_state.get(RESULTS, {}))
    if other_mode != "lexical":
        engine.embedder_for(other_embedder, wait=clicked)
    other = _settled(other_req, run=req.quick or clicked, hint=t("study.compare_hint", mode=other_name))
    if other is None:
        return
    names = (f"{_config_name(req.mode, req.embedder)} ({t('study.current')})", other_name)
    st.plotly_chart(_worded(study_figures.compare(result, other, names=names, kind=kind)), key=f"{PAGE}.compare",
                    config=figures.slide_config(f"study-compare-{kind}"))
    runs = {name: calibrate(_rankings(r, lambda *_: None)) for name, r in zip(names, (req, other_req))}
    rows = []
    for name, res in zip(names, (result, other)):
        row, at_k = res.recommended.row, runs[name].at_k
        rows.append({"configuration": name, "threshold": row.threshold if row else None,
                     "top_k": row.top_k if row else None, "precision": _fmt(row.precision) if row else None,
                     "recall": _fmt(row.recall) if row else None, "f1": _fmt(row.f1) if row else None}
                    | {f"recall@{k}": _fmt(a.recall) for k, a in at_k.items()})
    _table(rows)
    _render_calibration(runs)


def _render_calibration(runs: dict) -> None:
    """Where each configuration's scores lie, and the threshold that keeps a chosen share of the relevant pairs."""
    st.subheader(t("study.calibration"))
    target = st.slider(t("study.calibration_target"), 0.5, 0.99, 0.8, 0.01, key=f"{PAGE}.target_recall")
    st.caption(t("study.calibration_caption"))
    shown = {name: (c.relevant, c.irrelevant, c.threshold_for_recall(target)) for name, c in runs.items()}
    st.plotly_chart(figures.score_distributions(shown, text=figures.words("score_distributions", t)),
                    key=f"{PAGE}.calibration", config=figures.slide_config("study-calibration"))
    _table([{"configuration": name, t("study.threshold_for_recall", target=target): _fmt(c.threshold_for_recall(target)),
             t("study.threshold_for_precision", target=PRECISION_TARGET): _fmt(c.threshold_for_precision(PRECISION_TARGET)),
             t("study.relevant") + " p50": _fmt(c.quantiles("relevant")[0.5]),
             t("study.irrelevant") + " p50": _fmt(c.quantiles("irrelevant")[0.5])}
            for name, c in runs.items()])


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _render_study(current: state.Settings, config, found: list, target=None) -> None:
    """The study the controls describe and its results; ``found`` gets it (lab.agents.Studied) once it has a result.
    ``target`` (a lesson step's, above the controls) gets the study's progress, its precision and recall curve and the
    recommendation."""
    req = _request(current, config)
    if req is None:
        return
    try:
        data = _dataset(req)
    except MemoryLabError as exc:
        st.error(t("study.data_error", error=exc))
        return
    _render_dataset(data)
    clicked = st.button(t("study.run"), key=f"{PAGE}.run", type="primary", icon=":material/play_arrow:")
    if not req.quick:
        st.caption(t("study.slow_note"))
    if req.mode != "lexical":
        engine.embedder_for(req.embedder, wait=clicked)  # a press is not lost while the model loads
    with target or nullcontext():
        result = _settled(req, run=req.quick or clicked, hint=t("study.press_run"))
        if result is None:
            return
        found.append(agents.Studied(result, req.name, req.digest))
        if target is not None:
            _render_target_curve(result)
        _render_recommendation(result)
    _render_curves(result, drawn=(CURVES[0][0],) if target is not None else ())
    _render_table(result)
    _render_report(req, result, data)
    _render_compare(req, result)


def main() -> None:
    current, config = engine.page_header(PAGE)
    target = lesson.target_box(URL_PATH, TARGET)  # a lesson step's: above the way out and the controls
    way_out = st.container()  # the way out, at the top: drawn once the page knows the study its file comes from
    found: list[agents.Studied] = []
    try:
        _render_study(current, config, found, target)
    finally:  # also when the page stops to wait for a model: the file is offered as before
        with way_out:
            agents.render(current, found[0] if found else None)  # these settings as a file, and the snippets


main()
