"""Dedup: the plain two-band cosine rule next to the governed write path, pair by pair, and a fact's versions.

Similarities are computed once per pair set and embedder (cached by the file's content hash and the
embedder's name); moving the sidebar's band sliders re-runs the decisions only (lab.dedup.decide).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from lab import dedup, engine, figures, state
from lab.i18n import TEXT, headers, labels, language, t
from lab.reasons import fact_in
from lab.safe import Markup, for_plotly, plain
from memory import (
    DataFileError,
    Ingestor,
    InputError,
    LogEntry,
    MemoryConfig,
    MemoryManager,
    StoreLocation,
    read_regular_file,
    validate_text,
    version_chain,
)
from memory.eval import MAX_TEXT_CHARS, PairItem, parse_pairs, shipped_pair_files

PAGE = "dedup"
NUMBER = st.column_config.NumberColumn(format="%.3f")
# (No bare string literals at module level in pages: Streamlit's "magic" would draw them.)
# Row colour of a plain-rule mistake, by how much harm it does (losing or retiring a valid fact is worst).
ERROR_COLORS = {
    "silent_loss": "#ffcdd2", "wrong_retire": "#ffcdd2", "stale_kept": "#ffe0b2", "dropped": "#ffe0b2",
    "duplicate_stored": "#fff9c4", "other": "#f5f5f5",
}
# The typed pair the page opens with: a trap of the plain rule (DESIGN.md section 5).
TYPED = {"en": ("The campaign budget is 500,000 yuan.", "The campaign budget is 300,000 yuan."),
         "zh": ("截止日期是6月30日。", "截止日期推迟到7月15日。")}
SCRIPTED, LAB = "scripted", "lab"


# --- cached work: embedding happens here only --------------------------------------------------------

@st.cache_data(show_spinner=False, max_entries=16)
def _parse(data: bytes, source: str) -> list[PairItem]:
    return parse_pairs(data, source=source)


@st.cache_data(show_spinner=False, max_entries=32)
def _similarities(digest: str, embedder_name: str, _pairs: list[PairItem]) -> list[float]:
    """Once per pair set (content hash) and embedder; ``_pairs`` is not hashed (the digest names it)."""
    return dedup.similarities(_pairs, engine.get_embedder(embedder_name))


@dataclass
class _Chat:
    manager: MemoryManager
    entries: list[LogEntry]


def _release_chat(chat: _Chat) -> None:
    engine.release_manager(chat.manager)


@st.cache_resource(scope="session", max_entries=1, on_release=_release_chat, show_spinner=False)
def _chat(embedder_name: str, lang: str) -> _Chat:
    """The scripted conversation written through the Ingestor into a small in-memory workspace of this session."""
    manager = MemoryManager(MemoryConfig(), embedder=engine.get_embedder(embedder_name), location=StoreLocation(),
                            workspace=f"chat-{uuid.uuid4().hex[:12]}")
    return _Chat(manager, Ingestor(manager).ingest_many(dedup.chat_messages(lang)))


# --- two typed facts -------------------------------------------------------------------------------------

def _render_typed(current: state.Settings, config: MemoryConfig) -> None:
    st.subheader(t("dedup.typed"))
    existing_default, incoming_default = TYPED["zh" if language() == "zh" else "en"]
    left, right = st.columns(2)
    existing = left.text_input(t("dedup.existing"), value=existing_default, key=f"{PAGE}.existing")
    incoming = right.text_input(t("dedup.incoming"), value=incoming_default, key=f"{PAGE}.incoming")
    if not existing.strip() or not incoming.strip():
        st.warning(t("dedup.typed_empty"))
        return
    try:
        validate_text(existing, t("dedup.existing"), max_chars=MAX_TEXT_CHARS)
        validate_text(incoming, t("dedup.incoming"), max_chars=MAX_TEXT_CHARS)
    except InputError as exc:
        st.error(t("dedup.typed_bad", error=exc))
        return
    pair = PairItem(id="typed", existing=existing.strip(), incoming=incoming.strip())
    sims = _similarities(_digest(f"{pair.existing}\x1f{pair.incoming}".encode()), current.embedder, [pair])
    result = dedup.decide([pair], sims, config, source="typed", embedder=current.embedder,
                          judge=current.judge).results[0]
    cols = st.columns(3)
    cols[0].metric(t("dedup.m_similarity"), f"{result.similarity:.3f}")
    cols[1].metric(t("dedup.m_plain"), t(f"verdict.{result.plain_rule}"))
    cols[2].metric(t("dedup.m_governed"), t(f"verdict.{result.decision}"))
    # the reason quotes the typed facts: literal text, not Markdown
    (st.warning if result.plain_rule != result.decision else st.success)(plain(dedup.reason_in(result, language())))


# --- a pair set ------------------------------------------------------------------------------------------

def _pick_pairs() -> tuple[str, bytes, str] | None:
    """(source name, file bytes, digest) of the chosen pair set; a malformed upload shows its message and the
    chosen shipped set is used instead. The shipped sets are the teaching ones (memory.eval.shipped_pair_files:
    memory/scenarios/pairs/, package data, so an installed lab has them too). None (after a note) when there is
    neither (a tree whose pairs/ folder was emptied)."""
    shipped = shipped_pair_files()
    stems = list(shipped)
    preferred = "dedup_pairs_zh" if language() == "zh" else "dedup_pairs_en"
    left, right = st.columns(2)
    stem = left.selectbox(t("dedup.pair_set"), stems, key="pairs", bind="query-params",
                          index=stems.index(preferred) if preferred in stems else 0)
    upload = right.file_uploader(t("dedup.upload"), type=["json"], key=f"{PAGE}.upload", help=t("dedup.upload_help"))
    if upload is not None:
        too_big = None
        try:
            too_big = state.oversized(upload)  # before the bytes are taken; already literal text (lab.i18n.t)
            if too_big:
                raise DataFileError(too_big.rstrip(".。"))
            data = upload.getvalue()
            _parse(data, upload.name)
        except DataFileError as exc:
            error = Markup(str(exc)) if too_big else exc
            st.error(t("dedup.upload_error", error=error, name=stem) if stem else t("dedup.upload_refused", error=error))
        else:
            return upload.name, data, _digest(data)
    if stem is None:
        st.info(t("dedup.no_shipped"))
        return None
    data = read_regular_file(shipped[stem], what="pair file")
    return f"{stem}.json", data, _digest(data)


def _render_pair_set(current: state.Settings, config: MemoryConfig) -> None:
    st.subheader(t("dedup.pairs"))
    picked = _pick_pairs()
    if picked is None:
        return
    source, data, digest = picked
    pairs = _parse(data, source)
    sims = _similarities(digest, current.embedder, pairs)
    report = dedup.decide(pairs, sims, config, source=source, embedder=current.embedder, judge=current.judge)
    st.caption(t("dedup.judge_caption", judge=current.judge))
    frame = dedup.decision_frame(report, language())
    fit = dedup.best_bands(sims, [p.expected for p in pairs])
    _render_metrics(report, fit)
    st.plotly_chart(figures.similarity_axis(
        for_plotly(frame, ("id", "existing", "incoming")), conflict_band=config.conflict_band,
        duplicate_band=config.duplicate_band,
        text=figures.words("similarity_axis", t)), key=f"{PAGE}.axis", config=figures.slide_config("dedup-similarity-axis"))
    st.caption(t("dedup.axis_caption", conflict=config.conflict_band, duplicate=config.duplicate_band))
    if report.labelled:
        errors = dedup.errors_frame(report, {k: t(f"dedup.error.{k}") for k in ERROR_COLORS})
        st.dataframe(errors.style.format(_coded, subset=["kind"]) if language() != "en" else errors, hide_index=True,
                     column_config=headers(errors.columns))
    only_wrong = st.toggle(t("dedup.only_wrong"), key=f"{PAGE}.only_wrong")
    shown = frame[frame["plain_error"] != ""] if only_wrong else frame
    styled = shown.style.apply(_highlight, axis=1)
    if language() != "en":  # verdicts and mistake kinds worded in the page's language (the frame keeps the codes)
        styled = styled.format(_coded, subset=["expected", "plain_rule", "plain_error", "governed", "governed_error"])
    st.dataframe(styled, hide_index=True, column_config=headers(shown.columns, {"similarity": NUMBER}),
                 key=f"{PAGE}.table")
    st.caption(t("dedup.table_caption"))


def _render_metrics(report, fit: dedup.BandFit | None) -> None:
    labelled = len(report.labelled)
    if not labelled:
        st.info(t("dedup.no_labels"))
        return
    # two rows (accuracies, then mistakes): five in a row cut labels and values ("100.…", "52 / …") at 1024x768
    top, bottom = st.columns(3), st.columns(3)
    cols = [top[0], top[1], *bottom]
    cols[0].metric(t("dedup.m_plain_accuracy"), f"{report.accuracy('plain'):.1%}")
    cols[1].metric(t("dedup.m_governed_accuracy"), f"{report.accuracy('governed'):.1%}")
    cols[2].metric(t("dedup.m_plain_wrong"), f"{dedup.wrong(report, 'plain')} / {labelled}",
                   help=t("dedup.m_plain_wrong.help"))
    cols[3].metric(t("dedup.m_governed_wrong"), f"{dedup.wrong(report, 'governed')} / {labelled}")
    cols[4].metric(t("dedup.m_best_wrong"), f"{fit.wrong} / {labelled}",
                   help=t("dedup.m_best_wrong.help", conflict=f"{fit.conflict_band:.2f}",
                          duplicate=f"{fit.duplicate_band:.2f}"))


def _coded(code: str) -> str:
    """A verdict or a mistake kind in the page's language ("" stays "")."""
    for key in (f"verdict.{code}", f"dedup.kind.{code}"):
        if code and key in TEXT:
            return t(key)
    return code


def _highlight(row: pd.Series) -> list[str]:
    color = ERROR_COLORS.get(row["plain_error"])
    return [f"background-color: {color}" if color else ""] * len(row)


# --- the version chain of a fact ---------------------------------------------------------------------

def _render_chain(current: state.Settings, config: MemoryConfig) -> None:
    st.subheader(t("dedup.chain"))
    sources = [SCRIPTED, LAB] if current.write_path == "facts" else [SCRIPTED]
    source = st.radio(t("dedup.chain_source"), sources, key=f"{PAGE}.chain_source", horizontal=True,
                      format_func=labels("dedup.source", sources))
    if source == LAB:
        lab = engine.open_lab(current, config)
        owner = state.pick_owner(lab.owners(), erased=lab.data.erased_owners)
        if owner is None:
            return
        manager, entries = lab.manager, lab.ingestor.decisions(tenant_id=owner[0], user_id=owner[1])
    else:
        chat = _chat(current.embedder, "zh" if language() == "zh" else "en")
        manager, owner, entries = chat.manager, dedup.CHAT_OWNER, [e.to_dict() for e in chat.entries]
        st.caption(t("dedup.scripted_caption"))
    facts = dedup.fact_choices(manager.records(tenant_id=owner[0], user_id=owner[1]))
    if not facts:
        st.info(t("dedup.no_facts"))
        return
    by_id = {r.memory_id: r for r in facts}
    picked = st.selectbox(t("dedup.fact"), list(by_id), key=f"{PAGE}.fact.{source}",
                          format_func=lambda mid: f"v{by_id[mid].version} · {by_id[mid].content}")
    chain = dedup.chain_frame(version_chain(manager, picked, tenant_id=owner[0], user_id=owner[1]))
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(figures.version_timeline(for_plotly(chain, ("content", "superseded_by")),
                                                 text=figures.words("version_timeline", t)),
                        key=f"{PAGE}.timeline", config=figures.slide_config("dedup-versions"))
    with right:  # a narrow column: the version's text next to its number, the ids after
        st.dataframe(chain, hide_index=True, column_config=headers(chain.columns),
                     column_order=["version", "content", "is_deprecated", "created_at", "superseded_by", "supersedes",
                                   "access_count", "source_message_ids", "memory_id"])
    with st.expander(t("dedup.log")):
        log = dedup.log_frame(entries, language())
        if language() != "en":  # verdicts, and a bounded read's note, in the page's language (the frame keeps codes)
            log = log.assign(fact=[fact_in(f, d, language()) for f, d in zip(log["fact"], log["decision"])],
                             decision=log["decision"].map(_coded), plain_rule=log["plain_rule"].map(_coded))
        st.dataframe(log, hide_index=True, column_config=headers(log.columns, {"similarity": NUMBER}))


def _digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def main() -> None:
    current, config = engine.page_header(PAGE)
    engine.embedder_for(current.embedder)
    _render_typed(current, config)
    _render_pair_set(current, config)
    _render_chain(current, config)


main()
