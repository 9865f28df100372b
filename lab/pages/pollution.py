"""Pollution: inject each kind of pollution with one click and count it in blind vs governed context.

"Before" is the same query over the same candidates minus everything the lab injected (the lab
fetches every memory of the user, so that is exactly the pre-injection state), re-governed with
the current sliders; "after" is the current state.

On lesson step 5 what its line points at comes first (lab.lesson.target_box), on a projector's first screen: the
injection buttons, then blind and governed in one row (each count now, its count before the injections under it),
then what the page says about them; the write path's note and the rest follow.
"""

from __future__ import annotations

from contextlib import nullcontext

import pandas as pd
import streamlit as st

from lab import MEMORY_TEXT_COLUMN, engine, figures, lesson, state, views
from lab.i18n import headers, kinds_label, t
from lab.pollution import INJECTIONS, plan_injection, unisolated_top_k
from memory import govern

PAGE = "pollution"
URL_PATH = "pollution-view"  # this page's url path (lab.PAGES): what a lesson step names
TARGET = "compare"  # the section lesson step 5 points at (lab.lesson.TARGETS)


def _inject(lab: engine.Lab, kind: str, owner, choice) -> None:
    plan = plan_injection(kind, owner=owner, query=choice.text, as_of=choice.as_of,
                          language=lab.scenario.language, seq=lab.data.version)
    if plan.erase is None:
        lab.add(plan.messages, kind=kind)
        return
    # The erased user's data: written, visible to an unisolated ranking, then erased everywhere.
    lab.add(plan.messages, kind=kind)
    ids = {m.id for m in plan.messages}

    def seen() -> int:
        return sum(1 for h in unisolated_top_k(lab.manager, choice.text, lab.config.top_k) if h.record.message_id in ids)

    seen_before = seen()
    report = lab.erase(plan.erase, actor="lab-pollution")
    seen_after = seen()
    lab.data.notes[f"{PAGE}.erased"] = {"owner": state.owner_label(*plan.erase), "before": seen_before, "after": seen_after,
                                        "ok": report.ok}


def _render_injections(lab: engine.Lab, owner, choice, *, note: bool = True) -> None:
    """The injection buttons under their heading and, with ``note``, the write path's note; a lesson step's target
    (``note=False``) has neither: its line says what the buttons do, and the note follows the counts."""
    if note:
        st.subheader(t("pollution.inject"))
    # rows of three, labels wrapping: five in a row at 1024x768 cut them ("Another u…") or broke words
    cols = [col for _ in range(0, len(INJECTIONS), 3) for col in st.columns(3)]
    for col, kind in zip(cols, INJECTIONS):
        if col.button(t(f"inject.{kind}"), key=f"{PAGE}.inject.{kind}", help=t(f"inject.{kind}.help"), width="stretch",
                      wrap=True):
            _inject(lab, kind, owner, choice)
            st.toast(t("pollution.injected", kind=t(f"inject.{kind}")))
    if note:
        st.caption(t(f"pollution.write_path_note.{lab.settings.write_path}"))


def _explain_contradiction(lab: engine.Lab, after) -> None:
    """When a contradiction was injected and neither list shows any of it for this query, say why on the spot."""
    ids = {mid for mid, kind in lab.data.injected.items() if kind == "contradiction"}
    if not ids:
        return
    listed = {h.record.message_id for h in [*after.blind, *after.governed]}
    if ids & listed:
        return
    stored = sum(1 for d in after.dropped if d.hit.record.message_id in ids)
    if stored:
        st.info(t("pollution.contradiction_ranked_out", n=stored), icon=":material/info:")
    else:
        st.info(t(f"pollution.contradiction_not_stored.{lab.settings.write_path}"), icon=":material/info:")


def _render_side(title: str, result, kinds) -> None:
    st.subheader(title)
    # one above the other: side by side in half a page, both labels were cut to "Polluted / inject…" at 1024x768
    c1 = c2 = st.container()
    c1.metric(t("pollution.m_blind"), f"{sum(1 for h in result.blind if kinds(h.record))} / {len(result.blind)}",
              help=t("pollution.m_share", share=f"{views.polluted_token_share(result.blind, kinds):.0%}"))
    c2.metric(t("pollution.m_governed"),
              f"{sum(1 for h in result.governed if kinds(h.record))} / {len(result.governed)}",
              help=t("pollution.m_share", share=f"{views.polluted_token_share(result.governed, kinds):.0%}"))
    st.caption(t("pollution.token_share", blind=f"{views.polluted_token_share(result.blind, kinds):.0%}",
                 governed=f"{views.polluted_token_share(result.governed, kinds):.0%}"))


def _render_row(before, after, kinds) -> None:
    """Blind and governed side by side in one row (a lesson step's target): each count now, its count before the
    injections under it (the metrics' labels are the page's own, so a reader of the page finds them unchanged)."""
    blind, governed = st.columns(2)
    for col, label, side in ((blind, "pollution.m_blind", "blind"), (governed, "pollution.m_governed", "governed")):
        hits, was = getattr(after, side), getattr(before, side)
        col.metric(t(label), f"{sum(1 for h in hits if kinds(h.record))} / {len(hits)}",
                   delta=f"{sum(1 for h in was if kinds(h.record))} / {len(was)}", delta_color="off", delta_arrow="off",
                   delta_description=t("pollution.before"),
                   help=t("pollution.m_share", share=f"{views.polluted_token_share(hits, kinds):.0%}"))


def _render_injected(lab: engine.Lab, after, sandbox) -> None:
    if not lab.data.injected:
        st.info(t("pollution.nothing_injected"))
        return
    blind = {h.record.message_id for h in after.blind}
    governed = {h.record.message_id for h in after.governed}
    in_sandbox = {h.record.message_id for h in sandbox}
    # the stage that decided each of the user's records (a message may hold several facts)
    stages: dict[str, list[str]] = {}
    deprecated: set[str] = set()
    for hit, stage in [(h, views.KEPT) for h in after.governed] + [(d.hit, d.stage) for d in after.dropped]:
        stages.setdefault(hit.record.message_id, []).append(stage)
        if hit.record.is_deprecated:
            deprecated.add(hit.record.message_id)
    rows = []
    for mid, kind in lab.data.injected.items():
        rows.append({"id": mid, "kind": kind, "labels": ", ".join(lab.data.labels.get(mid, ())),
                     "records": len(stages.get(mid, ())),
                     "stage": ", ".join(t(f"stage.{s}") for s in sorted(set(stages.get(mid, ())))),
                     "deprecated": mid in deprecated, "erased": mid in lab.data.erased_ids, "in_blind": mid in blind,
                     "in_governed": mid in governed, "in_sandbox": mid in in_sandbox})
    frame = pd.DataFrame(rows)
    shown = frame.assign(kind=frame["kind"].map(kinds_label), labels=frame["labels"].map(kinds_label))
    st.dataframe(shown, hide_index=True, column_config=headers(shown.columns))


def _render_sandbox(sandbox, kinds) -> None:
    with st.expander(t("pollution.sandbox"), expanded=False):
        st.warning(t("pollution.sandbox_warning"))
        frame = pd.DataFrame([
            {"content": h.record.content, "owner": state.owner_label(h.record.tenant_id, h.record.user_id),
             "id": h.record.message_id, "similarity": round(h.similarity, 3),
             "pollution": kinds_label(", ".join(kinds(h.record)))}
            for h in sandbox
        ], columns=["content", "owner", "id", "similarity", "pollution"])
        st.dataframe(frame, hide_index=True, column_config=headers(
            frame.columns, {"content": st.column_config.TextColumn(**MEMORY_TEXT_COLUMN)}))


def _render_erased(lab: engine.Lab) -> None:
    """What the "erased user" injection showed: the erased user's data seen by an unisolated ranking, then not."""
    if note := lab.data.notes.get(f"{PAGE}.erased"):
        st.success(t("pollution.erased_note", **{**note, "ok": t("common.yes" if note["ok"] else "common.no")}))


def _render_why(lab: engine.Lab, after, kinds) -> None:
    """Next to the counts: why a list shows no injected contradiction, or why governed recall still holds pollution."""
    _explain_contradiction(lab, after)
    state.explain_pollution(after, kinds, lab.settings.write_path,
                            polluted_blind=sum(1 for h in after.blind if kinds(h.record)))


def main() -> None:
    lab = engine.start_page(PAGE)
    if not (picked := state.pick_target(lab)):
        return
    owner, choice, config = *picked, lab.config
    target = lesson.target_box(URL_PATH, TARGET)
    with target or nullcontext():
        _render_injections(lab, owner, choice, note=target is None)

    kinds = lab.kinds_for(owner, choice.labelled)
    candidates = lab.candidates(owner, choice.text, choice.as_of)
    after = govern(candidates, config, token_counter=views.cached_count_tokens)
    before = govern(views.without(candidates, lab.data.injected), config, token_counter=views.cached_count_tokens)
    sandbox_after = unisolated_top_k(lab.manager, choice.text, config.top_k)
    sandbox_before = unisolated_top_k(lab.manager, choice.text, config.top_k, exclude=set(lab.data.injected))

    if target is None:
        _render_erased(lab)
        left, right = st.columns(2)
        with left:
            _render_side(t("pollution.before"), before, kinds)
        with right:
            _render_side(t("pollution.after"), after, kinds)
        _render_why(lab, after, kinds)
    else:
        with target:
            _render_row(before, after, kinds)
            _render_erased(lab)
            _render_why(lab, after, kinds)
        st.caption(t(f"pollution.write_path_note.{lab.settings.write_path}"))
    table = views.pollution_table(before, after, kinds, [h.record for h in sandbox_before],
                                  [h.record for h in sandbox_after])
    st.plotly_chart(figures.pollution_by_kind(table, text=figures.words("pollution_by_kind", t)), key=f"{PAGE}.chart",
                    config=figures.slide_config("pollution-by-kind"))
    st.caption(t("pollution.isolation_note"))
    shown = table.rename(columns={c: t(f"pollution.col.{c}") for c in table.columns if c != "kind"})
    st.dataframe(shown.assign(kind=shown["kind"].map(kinds_label)), hide_index=True,
                 column_config=headers(["kind"]))
    st.subheader(t("pollution.injected_title"))
    _render_injected(lab, after, sandbox_after)
    _render_sandbox(sandbox_after, kinds)


main()
