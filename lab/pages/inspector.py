"""Inspector: every stored record of this lab with all its metadata, filterable, exportable (CSV, trace.json)."""

from __future__ import annotations

import json

import streamlit as st

from memory import DEFAULT_DAYS, DEFAULT_FLOOR, csv_bytes

from lab import engine, state, views
from lab.i18n import TEXT, headers, kinds_label, language, t, t_raw
from lab.reasons import tags_zh

PAGE = "inspector"
ALL = "all"
SCOPES = ("all", "active", "inactive", "hot")


def _render_controls(lab: engine.Lab):
    owners = state.owners_by_label(lab.owners())  # "a/b"+"c" and "a"+"b/c" are two entries
    c1, c2, c3 = st.columns([1, 1, 2])
    with c1:
        state.warn_unknown_user("who", [ALL, *owners], erased=lab.data.erased_owners)
        who = st.selectbox(t("inspector.who"), [ALL, *owners], key="who", bind="query-params",
                           help=t("inspector.who_help"))
    scope = c2.selectbox(t("inspector.scope"), SCOPES, key="scope", bind="query-params", help=t("inspector.scope_help"))
    needle = c3.text_input(t("inspector.filter"), key=f"{PAGE}.filter", placeholder=t("inspector.filter_placeholder"))
    chosen = list(owners.values()) if who == ALL else [owners[who]]
    return chosen, scope, needle


def _filter(frame, needle: str, categories: list[str], labels: list[str]):
    """Filters applied outside any cache: text anywhere in the content or ids, categories, labels."""
    if needle.strip():
        low = needle.strip().lower()
        mask = frame["content"].str.lower().str.contains(low, regex=False) | frame["id"].str.lower().eq(low) \
            | frame["memory_id"].str.lower().eq(low)
        frame = frame[mask]
    if categories:
        frame = frame[frame["category"].isin(categories)]
    if labels:
        frame = frame[frame["labels"].apply(lambda value: any(lab in value.split(", ") for lab in labels))]
    return frame


def _coded(prefix: str, codes) -> dict[str, str]:
    """code -> its words in the page's language (``<prefix>.<code>``; a code the catalogue lacks as it is)."""
    return {c: t_raw(f"{prefix}.{c}") if f"{prefix}.{c}" in TEXT else c for c in codes}


def _worded(frame):
    """The records' codes (category, security level, role, labels, tags) in the page's language; the frame, its
    filters and the CSV keep the codes."""
    if language() == "en":
        return frame
    out = frame.copy()
    for column, prefix in (("category", "category"), ("security_level", "security"), ("role", "role")):
        if column in out:
            out[column] = out[column].map(_coded(prefix, out[column].unique()))
    if "labels" in out:
        out["labels"] = out["labels"].map(kinds_label)
    for column in ("domain_tags", "context_tags"):
        if column in out:
            out[column] = out[column].map(tags_zh)
    return out


def main() -> None:
    lab = engine.start_page(PAGE)
    owners, scope, needle = _render_controls(lab)
    records = [r for tenant, user in owners
               for r in lab.manager.records(tenant_id=tenant, user_id=user, scope=scope, as_of=lab.now())]
    frame = views.records_frame(records, lab.data.labels)
    if frame.empty:
        st.info(t("inspector.empty"))
        _render_forgetting(lab, owners)
        return
    c1, c2 = st.columns(2)
    codes = sorted(frame["category"].unique())
    categories = c1.multiselect(t("inspector.category"), codes, key=f"{PAGE}.category",
                                placeholder=t("inspector.choose"), format_func=_coded("category", codes).__getitem__)
    all_labels = sorted({x for value in frame["labels"] for x in value.split(", ") if x})
    labels = c2.multiselect(t("inspector.labels"), all_labels, key=f"{PAGE}.labels", placeholder=t("inspector.choose"),
                            format_func=_coded("kind", all_labels).__getitem__)
    shown = _filter(frame, needle, categories, labels)
    cols = st.columns(3)
    cols[0].metric(t("inspector.m_records"), len(shown))
    cols[1].metric(t("inspector.m_owners"), shown[["tenant_id", "user_id"]].drop_duplicates().shape[0])
    cols[2].metric(t("inspector.m_deprecated"), int(shown["is_deprecated"].sum()))
    st.dataframe(_worded(shown), hide_index=True, height=min(38 + 35 * len(shown), 600),
                 column_config=headers(shown.columns))
    kept = set(shown["memory_id"])
    d1, d2 = st.columns(2)
    d1.download_button(t("inspector.csv"), csv_bytes(shown), file_name="memory_records.csv",  # formula-safe cells
                       mime="text/csv", key=f"{PAGE}.csv", on_click="ignore", width="stretch")
    trace = json.dumps(lab.trace([r for r in records if r.memory_id in kept]), ensure_ascii=False, indent=2)
    d2.download_button(t("inspector.trace"), trace.encode("utf-8"),
                       file_name="trace.json", mime="application/json", key=f"{PAGE}.trace", on_click="ignore",
                       width="stretch")
    _render_forgetting(lab, owners)


def _render_forgetting(lab: engine.Lab, owners: list[engine.Owner]) -> None:
    """The forgetting pass (memory.forget) for the users shown: archive facts that stayed cold, at the scenario's now."""
    with st.expander(t("inspector.forget_title"), key=f"{PAGE}.forget_open", on_change="rerun"):  # stays open on reruns
        st.caption(t("inspector.forget_lead", rate=lab.config.decay_rate))
        c1, c2 = st.columns(2)
        floor = c1.slider(t("inspector.forget_floor"), 0.0, 1.0, DEFAULT_FLOOR, 0.01, key=f"{PAGE}.floor",
                          help=t("inspector.forget_floor_help"))
        days = c2.slider(t("inspector.forget_days"), 0, 365, DEFAULT_DAYS, 1, key=f"{PAGE}.days",
                         help=t("inspector.forget_days_help"))
        if st.button(t("inspector.forget_run", n=len(owners)), key=f"{PAGE}.forget"):
            reports = [lab.archive_cold(owner, floor=floor, days=days) for owner in owners]
            st.session_state[f"{PAGE}.forgot"] = [(r.tenant_id, r.user_id, r.checked, len(r.archived)) for r in reports]
            st.rerun()
        done = st.session_state.get(f"{PAGE}.forgot")
        if done and [(tenant, user) for tenant, user, _, _ in done] == list(owners):  # the report of the users shown, not of others'
            archived = sum(n for *_, n in done)
            st.success(t("inspector.forget_done", archived=archived, checked=sum(c for _, _, c, _ in done),
                         users=len(done)))


main()
