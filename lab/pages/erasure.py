"""Erasure: plant canaries in a user's memory, erase the user, and check every path before and after.

"Before" runs the library's own verification (memory.runtime.erase.verify_erased) on the live data, so
both columns count the same things: what the path holds of the user, then what remained.

On lesson step 6 what its line points at (lab.lesson.target_box) is drawn in the lesson's target, right under the
user picker, on a projector's first screen: the last erasure's report first (the line says "read the report"), then
the canary and erase buttons (before any erasure, the buttons first), then what the lab holds of the user now.
"""

from __future__ import annotations

import secrets
from contextlib import nullcontext

import pandas as pd
import streamlit as st

from lab import engine, figures, lesson, state
from lab.i18n import TEXT, headers, language, t, t_raw
from memory import Message, scan_for_bytes

PAGE = "erasure"
URL_PATH = "erasure-view"  # this page's url path (lab.PAGES): what a lesson step names
TARGET = "report"  # the section lesson step 6 points at (lab.lesson.TARGETS)
CANARIES = 3
LAST = f"{PAGE}.last"
PENDING = f"{PAGE}.pending"  # session_state: (workspace, owner label) whose erasure waits for a confirmation
CONFIRMED = f"{PAGE}.confirmed"  # session_state: (workspace, owner label) a confirmation named; erased in the next run
NOTICE = f"{PAGE}.notice"  # session_state: (i18n key, owner label) of a message for the next run


def _canaries(lab: engine.Lab) -> dict[str, list[str]]:
    """owner label -> canary strings planted in this lab (kept with the workspace)."""
    return lab.data.notes.setdefault(f"{PAGE}.canaries", {})


def _plant(lab: engine.Lab, owner) -> None:
    tokens = [f"CANARY-{secrets.token_hex(6).upper()}" for _ in range(CANARIES)]
    seq = lab.data.version
    messages = [
        Message(tenant_id=owner[0], user_id=owner[1], role="user", id=f"canary-{seq}-{i}", session_id="lab-canary",
                content=t_raw("erasure.canary_text", token=token), timestamp=lab.now() - 60.0 * (CANARIES - i),
                labels=("canary",))
        for i, token in enumerate(tokens)
    ]
    lab.add(messages)
    lab.manager.embed_query(messages[0].content)  # a question mentioning a canary: now in the query cache
    _canaries(lab).setdefault(state.owner_label(*owner), []).extend(tokens)


def _checks(lab: engine.Lab, owner) -> list[dict]:
    """The library's path checks on the user's data as it is now (what an erase must remove).

    Run once per (data version, user): an audit reads every file of the session folder (disk_scan) and Chroma's
    database file, so moving the picker back to a user already audited at this version does not audit again;
    any write or erasure bumps the version and drops the older entries."""
    key = (lab.data.version, owner)
    cache = lab.data.notes.setdefault(f"{PAGE}.before", {})
    if key not in cache:
        checks = lab.manager.audit_user(tenant_id=owner[0], user_id=owner[1], disk_scan=True)
        for stale in [k for k in cache if k[0] != key[0]]:
            del cache[stale]
        cache[key] = [c.to_dict() for c in checks]
    return cache[key]


def _canary_hits(lab: engine.Lab, canaries: list[str]) -> dict[str, int]:
    """canary -> files under the lab's data folder whose bytes contain it."""
    if lab.manager.data_dir is None:
        return {}
    hits = scan_for_bytes(lab.manager.data_dir, canaries)
    return {c: sum(1 for _, n in hits if n == c) for c in canaries}


def _ask(workspace: str, label: str) -> None:
    """on_click of "Erase <label>": ask for a confirmation of that user (nothing is erased yet)."""
    st.session_state[PENDING] = (workspace, label)


def _confirm(workspace: str, label: str) -> None:
    """on_click of "Yes, erase <label>": the user named on the button at the click is erased in this run."""
    st.session_state.pop(PENDING, None)
    st.session_state[CONFIRMED] = (workspace, label)


def _cancel(label: str) -> None:
    st.session_state.pop(PENDING, None)
    st.session_state[NOTICE] = ("erasure.cancelled", label)


def _erase_confirmed(lab: engine.Lab) -> None:
    """Erase the user a confirmation click named, if this lab still holds them (a second click finds them gone)."""
    workspace, label = st.session_state.pop(CONFIRMED, None) or (None, None)
    if label is None:
        return
    owner = state.owners_by_label(lab.owners()).get(label) if workspace == lab.workspace else None
    if owner is None:
        st.info(t("erasure.gone" if workspace == lab.workspace else "erasure.stale", owner=label))
        return
    planted = _canaries(lab).pop(label, [])  # the report keeps them; the user's canary list goes with the user
    before = _checks(lab, owner)
    canary_before = _canary_hits(lab, planted)
    report = lab.erase(owner, actor="lab-erasure")
    lab.data.notes[LAST] = {
        "owner": label, "before": before, "report": report.to_dict(),
        "canaries": {c: {"before": canary_before.get(c, 0), "after": n} for c, n in _canary_hits(lab, planted).items()},
    }


def _render_moved(lab: engine.Lab, label: str) -> None:
    """After an erasure the picker shows another user: say so while it still shows the user it moved to."""
    last = lab.data.notes.get(LAST)
    if not last or last["owner"] == label:
        return
    last.setdefault("moved_to", label)  # the first user shown after the erasure
    if last["moved_to"] == label:
        st.info(t("erasure.moved", owner=last["owner"], now=label))


def _moved_on_its_own(lab: engine.Lab, label: str) -> bool:
    """Whether the picker shows ``label`` only because the last erasure took its user away (nobody picked it)."""
    last = lab.data.notes.get(LAST)
    return bool(last) and last.get("moved_to") == label and last.get("taken") != label


def _take_target(lab: engine.Lab, label: str) -> None:
    """on_click of "Take <label> as the next user": the red erase button comes back, for that user."""
    if last := lab.data.notes.get(LAST):
        last["taken"] = label


def _render_confirmation(workspace: str, label: str) -> None:
    with st.container(border=True):
        st.warning(t("erasure.confirm_ask", owner=label))
        yes, no = st.columns(2)
        # keyed and bound to the user it names: a stale confirmation can only ever erase that user
        yes.button(t("erasure.confirm", owner=label), key=f"{PAGE}.confirm.{label}", type="primary", width="stretch",
                   on_click=_confirm, args=(workspace, label), icon=":material/delete_forever:")
        no.button(t("erasure.cancel"), key=f"{PAGE}.cancel.{label}", width="stretch", on_click=_cancel, args=(label,))


def _pick(lab: engine.Lab):
    """An erasure a confirmation asked for, then the user picker: the user shown, or None."""
    _erase_confirmed(lab)
    if notice := st.session_state.pop(NOTICE, None):
        st.info(t(notice[0], owner=notice[1]))
    return state.pick_owner(lab.owners(), erased=lab.data.erased_owners)


def _render_controls(lab: engine.Lab, owner) -> None:
    label = state.owner_label(*owner)
    _render_moved(lab, label)
    pending = st.session_state.get(PENDING)
    if pending is not None and pending != (lab.workspace, label):  # asked for another user: never carried over
        del st.session_state[PENDING]
        st.info(t("erasure.stale", owner=pending[1]))
    planted = _canaries(lab).get(label, [])
    c1, c2 = st.columns(2)
    if c1.button(t("erasure.plant", n=CANARIES), key=f"{PAGE}.plant", width="stretch"):
        _plant(lab, owner)
        planted = _canaries(lab)[label]
    # keyed by the owner and naming it in its callback: a click acts on the user on the button, and only asks. After an
    # erasure the picker moves to another user by itself: the red button waits until the instructor takes that user
    # (or picks one), so it never points at a user nobody chose.
    if _moved_on_its_own(lab, label):
        c2.button(t("erasure.target", owner=label), key=f"{PAGE}.target.{label}", width="stretch",
                  on_click=_take_target, args=(lab, label), icon=":material/ads_click:")
    else:
        c2.button(t("erasure.erase", owner=label), key=f"{PAGE}.erase.{label}", type="primary", width="stretch",
                  on_click=_ask, args=(lab.workspace, label))
    if planted:
        st.caption(t("erasure.planted", canaries=", ".join(planted)))
    if st.session_state.get(PENDING) == (lab.workspace, label):
        _render_confirmation(lab.workspace, label)


def _checklist(checks: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([
        {"path": _path(c["name"]), "items": c["remaining"], "cleared": c["remaining"] == 0, "detail": _detail(c)}
        for c in checks
    ])


def _path(name: str) -> str:
    """A path's name in the page's language (the report's code in English)."""
    return t(f"erasure.path.{name}") if f"erasure.path.{name}" in TEXT else name


def _detail(check: dict) -> str:
    """What the path holds: the report's own sentence in English, the path's description in another language."""
    key = f"erasure.detail.{check['name']}"
    return check["detail"] if language() == "en" or key not in TEXT else t(key)


def _table(frame: pd.DataFrame) -> None:
    st.dataframe(frame, hide_index=True, column_config=headers(frame.columns))


def _render_last(last: dict) -> None:
    report = last["report"]
    st.subheader(t("erasure.result", owner=last["owner"]))
    (st.success if report["ok"] else st.error)(t("erasure.ok" if report["ok"] else "erasure.not_ok"))
    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('erasure.before')}**")
        _table(_checklist(last["before"]).drop(columns=["cleared"]))
    with right:
        st.markdown(f"**{t('erasure.after')}**")
        _table(_checklist(report["paths"]))
    frame = pd.DataFrame({
        "path": [_path(c["name"]) for c in last["before"]],
        "before": [c["remaining"] for c in last["before"]],
        "after": [next((p["remaining"] for p in report["paths"] if p["name"] == c["name"]), 0) for c in last["before"]],
    })
    st.plotly_chart(figures.erasure_checks(frame, text=figures.words("erasure_checks", t)), key=f"{PAGE}.chart",
                    config=figures.slide_config("erasure-before-after"))
    cols = st.columns(3)
    cols[0].metric(t("erasure.m_removed"), sum(n for path, n in report["removed"].items() if not path.startswith("chroma_")))
    cols[1].metric(t("erasure.m_others_touched"), report["others_touched"])
    cols[2].metric(t("erasure.m_paths_clear"), f"{sum(p['remaining'] == 0 for p in report['paths'])} / {len(report['paths'])}")
    if last["canaries"]:
        st.markdown(f"**{t('erasure.canaries')}**")
        _table(pd.DataFrame([{"canary": c, "files_before": v["before"], "files_after": v["after"]}
                             for c, v in last["canaries"].items()]))
    st.caption(t("erasure.paths_note"))
    with st.expander(t("erasure.report_json")):
        st.json(report)


def main() -> None:
    lab = engine.start_page(PAGE)
    owner = _pick(lab)
    target = lesson.target_box(URL_PATH, TARGET)
    last = lab.data.notes.get(LAST)
    with target or nullcontext():
        if last and target is not None:
            _render_last(last)
        if owner is not None:
            _render_controls(lab, owner)
        if last and target is None:
            _render_last(last)
        if owner is not None and (not last or last["owner"] != state.owner_label(*owner)):
            _render_now(lab, owner)


def _render_now(lab: engine.Lab, owner) -> None:
    st.subheader(t("erasure.now", owner=state.owner_label(*owner)))
    checks = _checks(lab, owner)
    left, right = st.columns(2)
    with left:
        _table(_checklist(checks).drop(columns=["cleared"]))
    with right:
        frame = pd.DataFrame({"path": [_path(c["name"]) for c in checks], "before": [c["remaining"] for c in checks]})
        st.plotly_chart(figures.erasure_checks(frame, text=figures.words("erasure_checks", t, before="erasure.holds")),
                        key=f"{PAGE}.now_chart", config=figures.slide_config("erasure-held-now"))


main()
