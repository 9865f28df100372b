"""The recall page's teaching affordances: pin settings as A and compare them with the current ones (B), add a
message of your own and watch the write path decide, export the comparison for slides.

A and B re-govern the same cached candidates (lab.engine), so comparing costs no embedding; A is a full
MemoryConfig pinned in the session and B is whatever the sidebar says now.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Callable

import pandas as pd
import streamlit as st

from memory import InputError, MemoryConfig, Message, RecallResult, csv_bytes, govern

from .dedup import reason_in
from .reasons import fact_in
from .i18n import kinds_label, language, t
from .safe import plain
from .views import KindsOf, cached_count_tokens, counts, hits_frame

PIN_KEY = "lab.pin_a"
"""The pinned settings (MemoryConfig.to_dict()) of comparison A."""
COMPARED = ("threshold", "top_k", "decay_rate", "alpha", "beta", "gamma", "token_budget", "window_size")
"""The settings the A/B table shows (when they differ, or always for the first three)."""


def _pin(config: dict[str, Any]) -> None:
    st.session_state[PIN_KEY] = config


def _unpin() -> None:
    st.session_state.pop(PIN_KEY, None)


def render_ab(compared: tuple[pd.DataFrame, RecallResult] | None, config: MemoryConfig, b: RecallResult,
              kinds: KindsOf) -> None:
    """Pin the current settings as A; once pinned (``compared``: :func:`pinned_comparison`), A and the current settings
    (B, whose result is ``b``) side by side."""
    st.subheader(t("ab.title"))
    left, right = st.columns(2)
    left.button(t("ab.pin"), key="ab.pin", on_click=_pin, args=(config.to_dict(),), icon=":material/push_pin:",
                width="stretch")
    if compared is None:
        st.caption(t("ab.hint"))
        return
    right.button(t("ab.unpin"), key="ab.unpin", on_click=_unpin, icon=":material/close:", width="stretch")
    table, a = compared
    st.table(table)
    columns = st.columns(2)
    for column, name, result in ((columns[0], "A", a), (columns[1], "B", b)):
        with column:
            st.markdown(f"**{t('ab.governed', side=name)}**")
            frame = hits_frame(result.governed, kinds)
            if frame.empty:
                st.info(t("recall.nothing"))
            else:
                shown = frame[["content", "pollution"]].assign(pollution=frame["pollution"].map(kinds_label))
                shown = shown.rename(columns={c: t(f"recall.col.{c}") for c in shown.columns})
                # st.table's cells are Markdown: a memory's text is shown as written, never as a link or an image
                st.table(shown.style.format(plain, subset=[t("recall.col.content")]), hide_index=True)


def ab_frame(a_config: MemoryConfig, a: RecallResult, b_config: MemoryConfig, b: RecallResult,
             kinds: KindsOf) -> pd.DataFrame:
    """Rows: the settings that differ (threshold, top_k and decay always), then what governed recall injects."""
    rows = {}
    for name in COMPARED:
        va, vb = getattr(a_config, name), getattr(b_config, name)
        if va != vb or name in COMPARED[:3]:
            rows[t(f"knob.{name}")] = (va, vb)
    ca, cb = counts(a, kinds), counts(b, kinds)
    rows[t("recall.m_governed")] = (ca.governed, cb.governed)
    rows[t("recall.m_polluted_governed")] = (ca.polluted_governed, cb.polluted_governed)
    rows[t("recall.m_tokens")] = (ca.governed_tokens, cb.governed_tokens)
    return pd.DataFrame({"A": [str(v[0]) for v in rows.values()], "B": [str(v[1]) for v in rows.values()]},
                        index=list(rows))


def render_add(lab, owner: tuple[str, str], label: str) -> None:
    """A message of the participant's own, as the picked user, through the sidebar's write path; what it decided."""
    st.subheader(t("add.title", user=label))
    with st.form("add.form", clear_on_submit=True, border=False):
        text = st.text_input(t("add.label"), placeholder=t("add.placeholder"), key="add.text")
        sent = st.form_submit_button(t("add.button"), icon=":material/send:")
    if sent:
        added = add_message(lab, owner, text)
        if isinstance(added, str):
            st.error(added)
        else:
            lab.data.notes["add.last"] = added
            st.rerun()  # the lists above were drawn before the message was written
    entries = lab.data.notes.get("add.last")
    if entries is None:
        return
    if lab.ingestor is None:
        st.caption(t("add.stored_raw"))
    elif not entries:
        st.caption(t("add.no_fact"))
    else:
        lang = language()
        decided = pd.DataFrame([{t("add.col.fact"): fact_in(e.decision.fact, e.decision.decision, lang),
                                 t("add.col.decision"): t(f"verdict.{e.decision.decision}"),
                                 t("add.col.reason"): reason_in(e.decision, lang)} for e in entries])
        st.table(decided.style.format(plain, subset=[t("add.col.fact"), t("add.col.reason")]), hide_index=True)


def add_message(lab, owner: tuple[str, str], text: str) -> list | str:
    """Write ``text`` as ``owner``'s newest message; its decision-log entries ([] on the raw path), or a message
    saying why it was refused (nothing written)."""
    text = (text or "").strip()
    if not text:
        return t("add.empty")
    try:
        message = Message(tenant_id=owner[0], user_id=owner[1], content=text, id=f"own-{uuid.uuid4().hex[:10]}",
                          timestamp=lab.now() + 1 + len(lab.data.added))
        return lab.add([message], own=True)
    except InputError as exc:
        return t("add.refused", error=exc)


def render_export(result: RecallResult, kinds: KindsOf, *, summary: Callable[[], str], candidates: pd.DataFrame) -> None:
    """One click each: the comparison as Markdown (for slides) and the candidate table as CSV; the chart's own camera
    button saves it as a PNG."""
    st.subheader(t("export.title"))
    left, right = st.columns(2)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    left.download_button(t("export.markdown"), summary(), file_name=f"recall-{stamp}.md", mime="text/markdown",
                         key="export.md", icon=":material/description:", width="stretch")
    right.download_button(t("export.csv"), candidate_csv(candidates), file_name=f"candidates-{stamp}.csv",
                          mime="text/csv", key="export.csv", icon=":material/table:", width="stretch")
    st.caption(t("export.chart"))


def candidate_csv(candidates: pd.DataFrame) -> bytes:
    """The candidate table as the CSV download: no cell a spreadsheet would run as a formula (memory.csv_bytes)."""
    return csv_bytes(candidates)


def pinned_comparison(candidates, config: MemoryConfig, b: RecallResult,
                      kinds: KindsOf) -> tuple[pd.DataFrame, RecallResult] | None:
    """The A/B table of the pinned settings (A) against ``config`` (B, whose result over ``candidates`` is ``b``) and
    A's result, or None when nothing is pinned. Computed once per run: the A/B section and the export both show it."""
    pinned = st.session_state.get(PIN_KEY)
    if pinned is None:
        return None
    a_config = MemoryConfig().replace(**pinned)
    a = govern(candidates, a_config, token_counter=cached_count_tokens)
    return ab_frame(a_config, a, config, b, kinds), a


def summary_markdown(*, query: str, user: str, embedder: str, write_path: str, config: MemoryConfig,
                     result: RecallResult, kinds: KindsOf,
                     pinned: tuple[pd.DataFrame, RecallResult] | None = None) -> str:
    """The comparison as a Markdown page: settings, counts, then both lists with each memory's pollution, and the
    pinned A/B comparison when there is one (:func:`pinned_comparison`). The query, the user, the model and the
    memories' texts are literal text (lab.safe.plain): a slide shows them as written."""
    c = counts(result, kinds)
    lines = [f"# {t('recall.title')}", "",
             f"- {t('page.query')}: {plain(query)}", f"- {t('page.user')}: {plain(user)}",
             f"- {t('sidebar.embedder')}: {plain(embedder)}; {t('sidebar.write_path')}: {write_path}",
             "- " + ", ".join(f"{name} = {getattr(config, name)}" for name in COMPARED), "",
             f"| | {t('recall.blind')} | {t('recall.governed')} |", "| --- | ---: | ---: |",
             f"| {t('recall.m_blind')} / {t('recall.m_governed')} | {c.blind} | {c.governed} |",
             f"| {t('recall.m_polluted_blind')} / {t('recall.m_polluted_governed')} | {c.polluted_blind} | "
             f"{c.polluted_governed} |", ""]
    for title, hits in ((t("recall.governed"), result.governed), (t("recall.blind"), result.blind)):
        lines += [f"## {title}", ""]
        for i, h in enumerate(hits, 1):
            polluted = kinds_label(", ".join(kinds(h.record)))
            lines.append(f"{i}. {plain(h.record.content)} ({h.similarity:.2f}{'; ' + polluted if polluted else ''})")
        lines.append("")
    if pinned is not None:
        table, a = pinned
        lines += [f"## {t('ab.title')}", "", "| | A | B |", "| --- | ---: | ---: |"]
        lines += [f"| {name} | {row['A']} | {row['B']} |" for name, row in table.iterrows()]
        lines += ["", f"### {t('ab.governed', side='A')}", ""]
        lines += [f"{i}. {plain(h.record.content)} ({h.similarity:.2f})" for i, h in enumerate(a.governed, 1)]
        lines.append("")
    return "\n".join(lines)
