"""Recall: blind top-k next to governed recall for one user and one query, candidate by candidate.

Candidates are fetched once (lab.engine); every slider change re-runs memory.runtime.recall.govern only.
"""

from __future__ import annotations

import streamlit as st

from lab import CANDIDATE_ORDER, CANDIDATE_WIDTHS, MEMORY_TEXT_COLUMN, engine, figures, state, teaching, views
from lab.i18n import explain_drop, headers, kinds_label, t
from lab.safe import for_plotly, plain

PAGE = "recall"
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


def _render_candidates(result, kinds, config, embedder: str) -> None:
    st.subheader(t("recall.candidates"))
    frame = views.candidate_frame(result, kinds, explain=explain_drop)
    if frame.empty:
        st.info(t("recall.no_candidates"))
        return
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
    st.caption(t("recall.parts_caption", alpha=config.alpha, beta=config.beta, gamma=config.gamma,
                 decay=config.decay_rate))
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


def main() -> None:
    lab = engine.start_page(PAGE)
    if not (picked := state.pick_target(lab)):
        return
    owner, choice, config = *picked, lab.config
    result = lab.recall(owner, choice.text, choice.as_of)
    lab.data.notes["last_recall"] = result  # for trace.json
    kinds = lab.kinds_for(owner, choice.labelled)
    counts = views.counts(result, kinds)
    _render_metrics(counts, config)
    state.explain_pollution(result, kinds, lab.settings.write_path, polluted_blind=counts.polluted_blind)
    left, right = st.columns(2)
    with left:
        _render_side(t("recall.blind"), t("recall.blind_caption", k=config.top_k), result.blind, kinds)
    with right:
        _render_side(t("recall.governed"), t("recall.governed_caption"), result.governed, kinds)
    _render_candidates(result, kinds, config, state.settings().embedder)
    _render_context(lab, result, config)
    compared = teaching.pinned_comparison(lab.candidates(owner, choice.text, choice.as_of), config, result, kinds)
    teaching.render_ab(compared, config, result, kinds)
    teaching.render_add(lab, owner, state.owner_label(*owner))
    teaching.render_export(result, kinds, candidates=views.candidate_frame(result, kinds, explain=explain_drop),
                           summary=lambda: teaching.summary_markdown(
                               query=choice.text, user=state.owner_label(*owner), embedder=lab.settings.embedder,
                               write_path=lab.settings.write_path, config=config, result=result, kinds=kinds,
                               pinned=compared))


main()
