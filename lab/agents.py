"""The way out of the lab: the current settings as an operating-point file, a settings file applied to the sidebar,
and the two snippets that give an agent the same governed memory (an MCP client's configuration, a LangGraph store).

The file is :mod:`memory.eval.operating_point`'s (what ``python -m memory study --export-point`` writes); the agent
adapters are ``memory.adapters`` (optional extras: ``pip install -r requirements-adapters.txt``).
"""

from __future__ import annotations

import json

import streamlit as st

from memory import DataFileError, MemoryLabError
from memory.eval import OperatingPoint, parse_operating_point, scale_name

from . import state
from .i18n import t
from .state import Settings

FILE_NAME = "operating-point.json"
"""The name the download gets, and the one the snippets read."""
APPLIED_KEY = "agents.applied"
"""The message of the last settings file applied (or its error), shown once."""
UPLOAD_KEY = "agents.upload"


def point_of(current: Settings) -> OperatingPoint:
    """The sidebar's settings as an operating point, with the sidebar's write-path judge."""
    assert current.config is not None
    return OperatingPoint(current.embedder, current.write_path, current.judge, current.config,
                          {"source": "lab", "dataset": current.scenario.name})


def mcp_snippet(point: OperatingPoint) -> str:
    """An MCP client's configuration (the ``mcpServers`` block desktop assistants and IDEs read)."""
    args = ["-m", "memory", "mcp", "--tenant", "your-tenant", "--user", "your-user", "--settings", FILE_NAME,
            "--data-dir", ".memory-data"]
    return json.dumps({"mcpServers": {"governed-memory": {"command": "python", "args": args}}}, indent=2)


def langgraph_snippet(point: OperatingPoint) -> str:
    """A LangGraph store built from the same file."""
    return "\n".join([
        "from memory import StoreLocation",
        "from memory.adapters.langgraph_store import GovernedStore",
        "from memory.eval import load_operating_point",
        "",
        f'point = load_operating_point("{FILE_NAME}")  # {point.embedder}, threshold {point.config.threshold:g}, '
        f"top_k {point.config.top_k}, {point.write_path}",
        'store = GovernedStore(point, tenant="your-tenant", location=StoreLocation(data_dir=".memory-data"))',
        "graph = builder.compile(store=store)  # nodes read and write memory with store.put / store.search",
        'store.search(("your-user", "memories"), query="What is the budget now?")  # only what passes the threshold',
    ])


def apply_upload() -> None:
    """on_change of the settings-file uploader: put the file's model, write path and config into the sidebar's
    widgets (so into the URL), the threshold taken as it is, on the file's model's scale; or keep the error."""
    upload = st.session_state.get(UPLOAD_KEY)
    if upload is None:
        return
    try:
        point = parse_operating_point(upload.getvalue(), source=upload.name,
                                      toml=upload.name.lower().endswith(".toml"))
    except (DataFileError, MemoryLabError) as exc:
        st.session_state[APPLIED_KEY] = ("error", str(exc))
        return
    if point.embedder not in state.embedder_choices():
        st.session_state[APPLIED_KEY] = ("error", t("agents.unknown_model", model=point.embedder))
        return
    values = point.config.to_dict()
    for knob in state.KNOBS:
        st.session_state[knob.key] = values[knob.key]
    st.session_state["embedder"] = point.embedder
    st.session_state["write_path"] = point.write_path
    if point.judge in state.LAB_JUDGES:  # a point judged by the plain bands keeps the sidebar's judge
        st.session_state["judge"] = point.judge
    st.session_state[state.SCALE_KEY] = scale_name(point.embedder, state.settings().scenario.language)
    st.session_state[APPLIED_KEY] = ("ok", t("agents.applied", name=upload.name, model=point.embedder,
                                             threshold=f"{point.config.threshold:g}", top_k=point.config.top_k))


def render(current: Settings) -> None:
    """The section: download the current settings, apply a file, and the two snippets."""
    with st.expander(t("agents.title"), icon=":material/smart_toy:"):
        st.caption(t("agents.lead"))
        if current.config is None:
            st.info(t("agents.invalid"))
            return
        point = point_of(current)
        st.download_button(t("agents.download"), point.dumps("json").encode("utf-8"), file_name=FILE_NAME,
                           mime="application/json", key="agents.download", on_click="ignore",
                           icon=":material/download:")
        st.file_uploader(t("agents.apply"), type=["json", "toml"], key=UPLOAD_KEY, on_change=apply_upload)
        applied = st.session_state.pop(APPLIED_KEY, None)
        if applied:
            (st.success if applied[0] == "ok" else st.error)(applied[1])
        st.markdown(t("agents.mcp"))
        st.code(mcp_snippet(point), language="json")
        st.markdown(t("agents.langgraph"))
        st.code(langgraph_snippet(point), language="python")
