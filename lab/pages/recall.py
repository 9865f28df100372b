"""Recall: blind top-k next to governed recall for one user and one query, candidate by candidate.

Candidates are fetched once (lab.engine); every slider change re-runs memory.runtime.recall.govern only, and reruns
this page's results alone: everything the recall knobs change (lab.state.FRAGMENT_KNOBS) is one fragment,
:data:`RESULTS`, which a knob's move reruns without the sidebar, the lesson's line, the title or the pickers
(lab.state.knob_moved). On a lesson step the section the step's line points at comes first (lab.lesson.target_on).
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from lab import CANDIDATE_ORDER, CANDIDATE_WIDTHS, MEMORY_TEXT_COLUMN, engine, figures, lesson, state, teaching, views
from lab.i18n import explain_drop, headers, kinds_label, t
from lab.loading import FOREGROUND, STORE_FAULTS, store_fault_key
from lab.safe import for_plotly, plain

PAGE = "recall"
# (comments, not docstrings: Streamlit's magic writes a page script's bare strings on the page)
URL_PATH = "recall-view"  # this page's url path (lab.PAGES): what a lesson step names
RESULTS = "recall-results"  # the fragment holding everything the recall knobs change: st.rerun(RESULTS) reruns it
NUMBER = st.column_config.NumberColumn(format="%.3f")
TEXT = st.column_config.TextColumn(**MEMORY_TEXT_COLUMN)
CANDIDATE_TEXT = st.column_config.TextColumn(width=CANDIDATE_WIDTHS["content"], pinned=True)
REASON = st.column_config.TextColumn(width=CANDIDATE_WIDTHS["reason"])
STAGE = st.column_config.TextColumn(width=CANDIDATE_WIDTHS["stage"])
# The blind and governed lists: static tables whose cells wrap (readable at 1024x768 on a projector).
SIDE_COLUMNS = ("content", "similarity", "score", "pollution")
CONTEXT_KEY = "recall-context"  # the box holding the injected context (CSS class st-key-recall-context)


def _render_metrics(counts: views.RecallCounts, config) -> None:
    # two rows of three, so no label is cut at 1024x768 (a projector): blind next to governed, each with its pollution
    top, bottom = st.columns(3), st.columns(3)
    top[0].metric(t("recall.m_blind"), counts.blind, help=t("recall.m_blind.help"))
    top[1].metric(t("recall.m_governed"), counts.governed, help=t("recall.m_governed.help"))
    top[2].metric(t("recall.m_tokens"), f"{counts.governed_tokens}/{config.token_budget}")
    bottom[0].metric(t("recall.m_polluted_blind"), counts.polluted_blind)
    bottom[1].metric(t("recall.m_polluted_governed"), counts.polluted_governed)


def _render_side(title: str, caption: str, hits, kinds) -> None:
    st.subheader(title)
    st.caption(caption)
    frame = views.hits_frame(hits, kinds)
    if frame.empty:
        st.info(t("recall.nothing"))
    else:
        # the text and what to judge it by; rank is the row order, the id is in the candidate table below
        shown = frame[list(SIDE_COLUMNS)].assign(pollution=frame["pollution"].map(kinds_label))
        shown = shown.rename(columns={c: t(f"recall.col.{c}") for c in SIDE_COLUMNS})
        # st.table's cells are Markdown: a memory's text is shown as written, never as a link or an image
        numbers = {t("recall.col.similarity"): "{:.2f}", t("recall.col.score"): "{:.2f}", t("recall.col.content"): plain}
        st.table(shown.style.format(numbers), hide_index=True)


def _render_candidates(result, frame, config, embedder: str, *, table_first: bool = False) -> None:
    """The candidate table with the chart of their scores. ``table_first`` (a lesson step's target: its line points at
    the table's reasons, recency and score) puts the table right under the heading, its captions and the chart
    below it, so its header and first rows are on a projector's first screen. ``frame``: views.candidate_frame."""
    st.subheader(t("recall.candidates"))
    if frame.empty:
        st.info(t("recall.no_candidates"))
        return
    if table_first:
        _render_candidate_table(frame)
        _render_parts_caption(config)
    # where this model's similarities lie for this query: a threshold is only meaningful on its model's scale
    sims = frame["similarity"]
    st.caption(t("recall.spread", embedder=embedder, p10=sims.quantile(0.1), p50=sims.median(), p90=sims.quantile(0.9),
                 top=sims.max(), threshold=config.threshold, passing=int((sims >= config.threshold).sum()),
                 total=len(sims)))
    st.plotly_chart(figures.candidate_scores(for_plotly(frame, ("id", "reason", "content")), config.threshold,
                                             text=figures.words("candidate_scores", t), about=result.query),
                    key=f"{PAGE}.chart", config=figures.slide_config("recall-candidates"))
    if len(frame) > figures.MAX_BARS:
        st.caption(t("recall.chart_cap", n=figures.MAX_BARS, total=len(frame)))
    if not table_first:
        _render_parts_caption(config)
        _render_candidate_table(frame)


def _render_parts_caption(config) -> None:
    st.caption(t("recall.parts_caption", alpha=config.alpha, beta=config.beta, gamma=config.gamma,
                 decay=config.decay_rate))


def _render_candidate_table(frame) -> None:
    numbers = ["similarity", "recency", "importance", "similarity_part", "recency_part", "importance_part", "score"]
    shown = frame.assign(stage=frame["stage"].map(lambda s: t(f"stage.{s}")), pollution=frame["pollution"].map(kinds_label))
    # what the lesson's lines point at comes first and narrow (lab.CANDIDATE_ORDER); the other columns follow
    narrow = {name: st.column_config.NumberColumn(format="%.2f", width=CANDIDATE_WIDTHS[name])
              for name in ("similarity", "recency", "score")}
    st.dataframe(shown, hide_index=True, column_order=[c for c in CANDIDATE_ORDER if c in shown.columns],
                 column_config=headers(shown.columns, {"content": CANDIDATE_TEXT, "stage": STAGE, "reason": REASON}
                                       | {name: narrow.get(name, NUMBER) for name in numbers}))


def _render_context(lab: engine.Lab, result, config) -> None:
    st.subheader(t("recall.context"))
    ctx = views.context_view(lab.manager, result, window_size=config.window_size, token_budget=config.token_budget)
    share = ctx.memory_tokens / ctx.token_budget if ctx.token_budget else 1.0
    st.progress(min(share, 1.0), text=t("recall.budget", used=ctx.memory_tokens, budget=ctx.token_budget,
                                          total=ctx.tokens))
    cols = st.columns(3)
    cols[0].metric(t("recall.m_recent"), len(ctx.recent))
    cols[1].metric(t("recall.m_summary"), len(ctx.summary))
    cols[2].metric(t("recall.m_context_tokens"), ctx.tokens)
    # Plain text in a box that looks like a code block (lab.state.PROJECTOR_STYLE): st.code's syntax highlighter cost
    # the first page a quarter of a second of the browser's main thread (CDP profile), for text that is never code.
    with st.container(key=CONTEXT_KEY):
        st.text(ctx.text or t("recall.empty_context"), width="stretch")


def _render_sides(result, kinds, config) -> None:
    left, right = st.columns(2)
    with left:
        _render_side(t("recall.blind"), t("recall.blind_caption", k=config.top_k), result.blind, kinds)
    with right:
        _render_side(t("recall.governed"), t("recall.governed_caption"), result.governed, kinds)


def _fragment_run() -> bool:
    """Whether this run is a fragment's alone (a knob's move, a click inside it), not the whole script."""
    ctx = get_script_run_ctx()
    return bool(ctx and ctx.fragment_ids_this_run)


@st.fragment(key=RESULTS)
def _results(lab: engine.Lab, owner: tuple[str, str], choice: state.QueryChoice) -> None:
    """Everything the recall knobs change. A fragment run reruns it with the arguments of the last full run (the
    pickers change by full runs only), so it reads the knobs again (lab.state.settings) and opens the lab again:
    the room may have released the lab in between, and holds it while the fragment draws, as app.py does for a full
    run."""
    st.session_state[state.FRAGMENT_KEY] = RESULTS
    if not _fragment_run():
        _render_results(lab, owner, choice)
        return
    with FOREGROUND.running():  # background loads give way to this run, as to a full one (app.py)
        try:
            current = state.settings()
            _render_results(engine.open_lab(current, state.require_config(current)), owner, choice)
        except STORE_FAULTS as exc:  # a full disk or a busy store: a banner, never a traceback (app.py)
            st.error(t(store_fault_key(exc)), icon=":material/error:")
        finally:
            engine.end_run()


def _render_results(lab: engine.Lab, owner: tuple[str, str], choice: state.QueryChoice) -> None:
    config = lab.config
    result = lab.recall(owner, choice.text, choice.as_of)
    lab.data.notes["last_recall"] = result  # for trace.json
    kinds = lab.kinds_for(owner, choice.labelled)
    counts = views.counts(result, kinds)
    candidates = views.candidate_frame(result, kinds, explain=explain_drop)  # once: the section and the export
    # a lesson step's target first, on the projector's first screen (the container is the browser test's anchor)
    target = lesson.target_on(URL_PATH)
    if target == "sides":
        with st.container(key=lesson.TARGET_KEY):
            _render_sides(result, kinds, config)
    elif target == "candidates":
        with st.container(key=lesson.TARGET_KEY):
            _render_candidates(result, candidates, config, lab.settings.embedder, table_first=True)
    _render_metrics(counts, config)
    state.explain_pollution(result, kinds, lab.settings.write_path, polluted_blind=counts.polluted_blind)
    if target != "sides":
        _render_sides(result, kinds, config)
    if target != "candidates":
        _render_candidates(result, candidates, config, lab.settings.embedder)
    _render_context(lab, result, config)
    compared = teaching.pinned_comparison(lab.candidates(owner, choice.text, choice.as_of), config, result, kinds)
    teaching.render_ab(compared, config, result, kinds)
    teaching.render_add(lab, owner, state.owner_label(*owner))
    teaching.render_export(result, kinds, candidates=candidates,
                           summary=lambda: teaching.summary_markdown(
                               query=choice.text, user=state.owner_label(*owner), embedder=lab.settings.embedder,
                               write_path=lab.settings.write_path, config=config, result=result, kinds=kinds,
                               pinned=compared))


def main() -> None:
    lab = engine.start_page(PAGE)
    if picked := state.pick_target(lab):
        _results(lab, *picked)


main()
