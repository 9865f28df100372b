"""Erasure: plant canaries in a user's memory, erase the user, and check every path before and after.

"Before" runs the library's own verification (memory.erase.verify_erased) on the live data, so
both columns count the same things: what the path holds of the user, then what remained.
"""

from __future__ import annotations

import secrets

import pandas as pd
import streamlit as st

from memory import Message
from memory.erase import scan_for_bytes

from lab import engine, figures, state
from lab.i18n import t

PAGE = "erasure"
CANARIES = 3
LAST = f"{PAGE}.last"
DONE = f"{PAGE}.done"


def _canaries(lab: engine.Lab) -> dict[str, list[str]]:
    """owner label -> canary strings planted in this lab (kept with the workspace)."""
    return lab.data.notes.setdefault(f"{PAGE}.canaries", {})


def _plant(lab: engine.Lab, owner) -> None:
    tokens = [f"CANARY-{secrets.token_hex(6).upper()}" for _ in range(CANARIES)]
    seq = lab.data.version
    messages = [
        Message(tenant_id=owner[0], user_id=owner[1], role="user", id=f"canary-{seq}-{i}", session_id="lab-canary",
                content=t("erasure.canary_text", token=token), timestamp=lab.now() - 60.0 * (CANARIES - i),
                labels=("canary",))
        for i, token in enumerate(tokens)
    ]
    lab.add(messages)
    lab.manager.embed_query(messages[0].content)  # a question mentioning a canary: now in the query cache
    _canaries(lab).setdefault(state.owner_label(*owner), []).extend(tokens)


def _checks(lab: engine.Lab, owner) -> list[dict]:
    """The library's path checks on the user's data as it is now (what an erase must remove)."""
    key = (lab.data.version, owner)
    cache = lab.data.notes.setdefault(f"{PAGE}.before", {})
    if key not in cache:
        checks = lab.manager.audit_user(tenant_id=owner[0], user_id=owner[1], disk_scan=True)
        cache.clear()
        cache[key] = [c.to_dict() for c in checks]
    return cache[key]


def _canary_hits(lab: engine.Lab, canaries: list[str]) -> dict[str, int]:
    """canary -> files under the lab's data folder whose bytes contain it."""
    if lab.manager.data_dir is None:
        return {}
    hits = scan_for_bytes(lab.manager.data_dir, canaries)
    return {c: sum(1 for _, n in hits if n == c) for c in canaries}


def _render_controls(lab: engine.Lab):
    done = st.session_state.pop(DONE, None)
    if done:
        st.toast(t("erasure.done", owner=done))
    owner = state.pick_owner(lab.owners())
    if owner is None:
        return None
    planted = _canaries(lab).get(state.owner_label(*owner), [])
    c1, c2 = st.columns(2)
    if c1.button(t("erasure.plant", n=CANARIES), key=f"{PAGE}.plant", width="stretch"):
        _plant(lab, owner)
        planted = _canaries(lab)[state.owner_label(*owner)]
    # keyed by the owner: a click on a button drawn for one user can never erase another (after an erasure the
    # picker moves on to the next user, and a stale button's click must not carry over to it)
    erase = c2.button(t("erasure.erase", owner=state.owner_label(*owner)), key=f"{PAGE}.erase.{state.owner_label(*owner)}",
                      type="primary", width="stretch")
    if planted:
        st.caption(t("erasure.planted", canaries=", ".join(planted)))
    if erase:
        before = _checks(lab, owner)
        canary_before = _canary_hits(lab, planted)
        report = lab.erase(owner, actor="lab-erasure")
        lab.data.notes[LAST] = {
            "owner": state.owner_label(*owner), "before": before, "report": report.to_dict(),
            "canaries": {c: {"before": canary_before.get(c, 0), "after": n}
                         for c, n in _canary_hits(lab, planted).items()},
        }
        st.session_state[DONE] = state.owner_label(*owner)
        st.rerun()  # redraw the picker and the button for the user who is selected now
    return owner


def _checklist(checks: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([
        {"path": c["name"], "items": c["remaining"], "cleared": c["remaining"] == 0, "detail": c["detail"]}
        for c in checks
    ])


def _render_last(last: dict) -> None:
    report = last["report"]
    st.subheader(t("erasure.result", owner=last["owner"]))
    (st.success if report["ok"] else st.error)(t("erasure.ok" if report["ok"] else "erasure.not_ok"))
    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('erasure.before')}**")
        st.dataframe(_checklist(last["before"]).drop(columns=["cleared"]), hide_index=True)
    with right:
        st.markdown(f"**{t('erasure.after')}**")
        st.dataframe(_checklist(report["paths"]), hide_index=True)
    frame = pd.DataFrame({
        "path": [c["name"] for c in last["before"]],
        "before": [c["remaining"] for c in last["before"]],
        "after": [next((p["remaining"] for p in report["paths"] if p["name"] == c["name"]), 0) for c in last["before"]],
    })
    st.plotly_chart(figures.erasure_checks(frame, text={"before": t("erasure.before"), "after": t("erasure.after"),
                                                        "count": t("fig.items")}), key=f"{PAGE}.chart")
    cols = st.columns(3)
    cols[0].metric(t("erasure.m_removed"), sum(n for path, n in report["removed"].items() if not path.startswith("chroma_")))
    cols[1].metric(t("erasure.m_others_touched"), report["others_touched"])
    cols[2].metric(t("erasure.m_paths_clear"), f"{sum(p['remaining'] == 0 for p in report['paths'])} / {len(report['paths'])}")
    if last["canaries"]:
        st.markdown(f"**{t('erasure.canaries')}**")
        st.dataframe(pd.DataFrame([{"canary": c, "files_before": v["before"], "files_after": v["after"]}
                                   for c, v in last["canaries"].items()]), hide_index=True)
    st.caption(t("erasure.paths_note"))
    with st.expander(t("erasure.report_json")):
        st.json(report)


def main() -> None:
    lab = engine.start_page(PAGE)
    owner = _render_controls(lab)
    last = lab.data.notes.get(LAST)
    if last:
        _render_last(last)
    if owner is not None and (not last or last["owner"] != state.owner_label(*owner)):
        _render_now(lab, owner)


def _render_now(lab: engine.Lab, owner) -> None:
    st.subheader(t("erasure.now", owner=state.owner_label(*owner)))
    checks = _checks(lab, owner)
    left, right = st.columns(2)
    with left:
        st.dataframe(_checklist(checks).drop(columns=["cleared"]), hide_index=True)
    with right:
        frame = pd.DataFrame({"path": [c["name"] for c in checks], "before": [c["remaining"] for c in checks]})
        st.plotly_chart(figures.erasure_checks(frame, text={"before": t("erasure.holds"), "count": t("fig.items")}),
                        key=f"{PAGE}.now_chart")


main()
