"""The way out of the lab: the current settings as an operating-point file, a settings file applied to the sidebar,
and the two snippets that give an agent the same governed memory (an MCP client's configuration, a LangGraph store).

The file is :mod:`memory.eval.operating_point`'s (what ``python -m memory study --export-point`` writes); the agent
adapters are ``memory.adapters`` (optional extras: ``pip install -r requirements-adapters.txt``).

The file says where its point came from (memory.eval.operating_point's provenance). After a study on the page, it names
the data the study read as the participant knows it (the uploaded file's name, or a shipped scenario's name) with the
SHA-256 of the bytes studied, and, when the sidebar holds a setting the study measured (the recommended one once
applied, or any row of its sweep), that setting's precision, recall, F1 and memories injected, as the page shows them.
Before any study it names the lab's scenario the same way and carries no figures.

An uploaded settings file is a participant's data, parsed in the lab's own process: the uploader takes at most 1 MB
(Streamlit's smallest per-widget cap, enforced by the browser), :func:`apply_upload` refuses more than 64 KB before
it reads the bytes, and the parse holds the text to the settings limits (memory.core.datafile_limits) first, so no
file holds the server's CPU. A refusal is shown as the one line the library wrote, escaped (lab.safe.plain): a link
or an image in a file's value or name is shown as text, and the message names the file only as it was uploaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import streamlit as st

from memory import DataFileError, MemoryLabError
from memory.eval import (
    OperatingPoint, StudyResult, check_settings_size, parse_operating_point, scale_name, study_provenance,
)

from . import state
from .i18n import t
from .safe import plain
from .state import Settings

FILE_NAME = "operating-point.json"
"""The name the download gets, and the one the snippets read."""
APPLIED_KEY = "agents.applied"
"""The message of the last settings file applied (or its error), shown once."""
UPLOAD_KEY = "agents.upload"
UPLOAD_MB = 1
"""The uploader's own cap, in megabytes (Streamlit's smallest; the browser refuses a larger file). The file itself is
held to memory.eval.operating_point.MAX_SETTINGS_BYTES (64 KB) by apply_upload, whatever a client sends."""


@dataclass(frozen=True)
class Studied:
    """The study the page holds a result of, as a settings file names it."""

    result: StudyResult
    dataset: str
    """The data as the participant knows it: the uploaded file's name (``locomo:`` and the name for a LoCoMo file) or
    the shipped scenario's name."""
    sha256: str
    """The SHA-256 of the bytes the study read (memory.eval.content_hash)."""


def point_of(current: Settings, studied: Studied | None = None) -> OperatingPoint:
    """The sidebar's settings as an operating point, with the sidebar's write-path judge. Its provenance names the data
    of ``studied`` (a dense study with the sidebar's model) and that study's figures for the sidebar's setting when
    it measured it (memory.eval.study_provenance); else the lab's scenario, without figures."""
    assert current.config is not None
    provenance: dict[str, Any]
    if studied is not None and studied.result.mode == "dense" and studied.result.embedder == current.embedder:
        provenance = study_provenance(studied.result, current.config, dataset=studied.dataset, sha256=studied.sha256)
    else:
        provenance = {"dataset": _scenario_name(current)}
        if studied is not None:
            provenance["note"] = (f"the study on the page is {studied.result.mode}: its threshold is not on "
                                  f"{current.embedder}'s scale, so no figures")
    return OperatingPoint(current.embedder, current.write_path, current.judge, current.config,
                          provenance | {"source": "lab"})


def _scenario_name(current: Settings) -> str:
    """The sidebar's scenario as the participant knows it: an upload by its file name, a shipped one by its name."""
    upload = st.session_state.get(state.UPLOAD_KEY) if current.scenario_key.startswith(state.UPLOAD_PREFIX) else None
    return PurePath(str(upload.name)).name if upload is not None else current.scenario.name


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
    name = str(upload.name)
    try:
        check_settings_size(int(upload.size), PurePath(name).name or name)  # over 64 KB: refused before the bytes are read
        point = parse_operating_point(upload.getvalue(), source=name, toml=name.lower().endswith(".toml"))
    except (DataFileError, MemoryLabError) as exc:
        st.session_state[APPLIED_KEY] = ("error", plain(str(exc)))  # outside words: shown as text, never Markdown
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


def render(current: Settings, studied: Studied | None = None) -> None:
    """The section: download the current settings (with the provenance of ``studied``, the page's study: see
    :func:`point_of`), apply a file, and the two snippets."""
    with st.expander(t("agents.title"), icon=":material/smart_toy:"):
        st.caption(t("agents.lead"))
        if current.config is None:
            st.info(t("agents.invalid"))
            return
        point = point_of(current, studied)
        st.download_button(t("agents.download"), point.dumps("json").encode("utf-8"), file_name=FILE_NAME,
                           mime="application/json", key="agents.download", on_click="ignore",
                           icon=":material/download:")
        st.file_uploader(t("agents.apply"), type=["json", "toml"], key=UPLOAD_KEY, on_change=apply_upload,
                         max_upload_size=UPLOAD_MB)
        applied = st.session_state.pop(APPLIED_KEY, None)
        if applied:
            (st.success if applied[0] == "ok" else st.error)(applied[1])
        st.markdown(t("agents.mcp"))
        st.code(mcp_snippet(point), language="json")
        st.markdown(t("agents.langgraph"))
        st.code(langgraph_snippet(point), language="python")
