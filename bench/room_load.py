"""A room under load, one run: another session's slider rerun while an upload ingests, and the server's footprint
as 60 labs open and are released, wave after wave.

`python -m bench.room_load [--quick]` drives the lab's own functions in one process, as the Streamlit server
would (no server, no browser): every lab is opened through a :class:`lab.rooms.Room` built exactly as
``lab.engine.room()`` builds it (``Room.from_env`` with the engine's release, folder release, busy and changes
callbacks), except that its clock is ``time.monotonic()`` plus an offset this script can advance, so "90 minutes
later" does not take 90 minutes. Each lab's folder is ``lab.engine.lab_location(lab id)`` under a temporary
``MEMORY_DATA_DIR``; each workspace is ``lab.engine._workspace`` (the embedder comes from the lab's model getter,
``lab.models``) and a shipped scenario loads as ``lab.engine._ingest`` loads it (``lab.loading.load_messages``
then ``_loaded``), an upload of 200 messages or more as ``lab.engine._load_in_background`` starts it
(``lab.loading.start_job``: a daemon thread taking ``lab.loading.SLOT`` batch by batch).

**(a) rerun during an upload.** Session B has the lab's first screen: workshop_en, MiniLM, the default write path
(facts), the recall page's first user and first labelled query, candidates fetched once (``lab.engine._candidates``'
own function; its session-scoped Streamlit cache needs a browser session, so this script holds the result, which
is what the cache returns on a rerun). A *rerun* is what a slider change costs the server in Python for that page:
``room.get`` (what ``open_lab`` does on every run), the pickers' ``lab.owners()`` / ``queries_of`` / ``now``,
``govern`` over the cached candidates, the metrics, the pollution explanation, both side tables (styled, marshalled
into Streamlit's table proto as ``st.table`` does), the candidate frame, figure (serialised as ``st.plotly_chart``
does) and table (Arrow bytes, as ``st.dataframe``), the injected context (the user's window and summary from the
store), and the export buttons' Markdown and CSV. Not included: Streamlit's script run itself (app.py's sidebar,
the element protos, the websocket). Slider moves cycle through threshold / top_k / decay / window changes, one
rerun every ``--gap`` seconds (a participant moving a slider, not a loop).
Session A uploads a synthetic scenario (``memory.eval.synth``, 30 users, 1,500 messages, seed 1, each text made
distinct as in bench/upload_ingest.py; parsed by ``lab.state.parse_upload`` with the lab's upload cap) and its
load runs in the lab's background job with MiniLM, write path facts. Per repeat, B's reruns are timed idle (no job
running), then while A's job runs from start to end; A's lab is released after (not timed). The result is
p50 during / p50 idle (target <= 1.5), per repeat and over the medians, and the longest rerun of each; next to it,
the CPU time of B's own thread per rerun (``time.thread_time``): when it stays put while the wall time grows, the
rerun waited (for the interpreter lock or a core), it did not do more work.

**(b) footprint.** A wave opens ``--sessions`` labs (60, the room's default cap ``MEMORY_LAB_MAX_LABS``, which this
script sets, with ``MEMORY_LAB_IDLE_MINUTES`` at its default 90): each a new lab id, workshop_en with the lexical
embedder and the facts write path, and its recall page drawn once (candidates fetched, one rerun). Then the room's
clock moves past the idle time and the next participant opens a lab, which releases every idle lab (their
workspaces, Chroma clients and folders: ``lab.engine._release`` and ``_release_folder``). The next wave starts
from there (with the lab that did, its last session is one past the cap: the room releases that lab as "full"). Measured at the
start, at each wave's peak and after each release: this process's VmRSS (/proc/self/status), its open file
descriptors (/proc/self/fd; those under the data folder separately), its threads, and the data folder's bytes
(file sizes) and files; each after ``gc.collect()``. Bounded means the after-release numbers of the later waves are
about those of the first. Also timed: opening each wave, and the next participant's open that ran the releases
(the room runs them in the thread of the page that triggered them). At the end ``release_all`` shows what no lab
holds, then glibc's ``malloc_trim(0)`` how much of the RSS left was freed heap glibc kept (the room itself trims after
each group of releases: ``memory.store.heap.return_freed_memory``). Part (b) runs first, so its start is a process with nothing loaded but the lab's imports.

Writes bench/results/room_load_full.json and .md (room_load with --quick).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import io
import json
import logging
import os
import resource
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from memory.store.heap import return_freed_memory

from .common import write_results

SCENARIO = "workshop_en"
UPLOAD_USERS = 30
SLIDER_MOVES: list[dict[str, Any]] = [
    {"threshold": 0.0}, {"threshold": 0.3}, {"threshold": 0.6}, {"top_k": 20}, {"top_k": 3},
    {"decay_rate": 0.5}, {"decay_rate": 0.0}, {"window_size": 3},
]
SIDE_COLUMNS = ("content", "similarity", "score", "pollution")
"""The recall page's side-table columns (lab/pages/recall.py, which runs its page when imported)."""
NUMBERS = ["similarity", "recency", "importance", "similarity_part", "recency_part", "importance_part", "score"]


# --- what the process holds -------------------------------------------------------------------------------

def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_fds(data_dir: Path) -> tuple[int, int]:
    """(open descriptors of this process, those naming a file under ``data_dir``)."""
    names = os.listdir("/proc/self/fd")
    inside, root = 0, str(data_dir.resolve())
    for name in names:
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the descriptor listdir itself used, closed since
            continue
        inside += target.startswith(root)
    return len(names), inside


def disk(data_dir: Path) -> tuple[int, int]:
    """(bytes of the files under ``data_dir``, their count)."""
    size = files = 0
    for folder, _, names in os.walk(data_dir):
        for name in names:
            try:
                size += os.lstat(os.path.join(folder, name)).st_size
                files += 1
            except OSError:
                pass
    return size, files


def snapshot(label: str, data_dir: Path, labs: int) -> dict[str, Any]:
    from memory.store import chroma as store

    gc.collect()
    fds, fds_data = open_fds(data_dir)
    size, files = disk(data_dir)
    return {"at": label, "labs": labs, "rss_mb": round(rss_mb(), 1), "fds": fds, "fds_data": fds_data,
            "threads": len(os.listdir("/proc/self/task")), "chroma_clients": len(store._CLIENTS),
            "python_objects": len(gc.get_objects()), "disk_bytes": size, "disk_files": files}


# --- the lab, driven as the server drives it ---------------------------------------------------------------

class Clock:
    """time.monotonic() plus an offset the script advances (the room's idle time, without the wait)."""

    def __init__(self) -> None:
        self.skew = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.skew


def make_room(clock: Clock):
    """lab.engine.room()'s room (same bounds from the environment, same callbacks), on ``clock``."""
    from lab import engine
    from lab.rooms import Room

    return Room.from_env(os.environ, release=engine._release, release_lab=engine._release_folder,
                         busy=engine._loading, changes=engine._changes, after_release=engine.return_freed_memory,
                         clock=clock)


def key_of(scenario_key: str, embedder: str, write_path: str, location, language: str = "en") -> tuple:
    """open_lab's workspace key for a lab of these settings (the default judge; the bench's scenarios are English)."""
    from lab import engine, state

    return engine.workspace_key(scenario_key, embedder, write_path, state.DEFAULT_JUDGE, location, language)


def open_workspace(room, lab_id: str, scenario_key: str, embedder: str, write_path: str):
    """open_lab's ``labs.get``: the lab's workspace for these settings, created on first use."""
    from lab import engine

    location = engine.lab_location(lab_id)
    return room.get(lab_id, key_of(scenario_key, embedder, write_path, location),
                    lambda home: engine._workspace(scenario_key, embedder, write_path, engine.lab_location(home)))


def load_small(live, scenario) -> None:
    """lab.engine._ingest without its progress bar: a shipped scenario loads in the page's own run."""
    from lab import engine
    from lab.loading import load_messages

    load_messages(live.manager, live.ingestor, scenario.messages)
    engine._loaded(live.data, scenario, None)


def start_upload(live, scenario, lab_id: str):
    """lab.engine._load_in_background's job: the lab's background load of an upload."""
    from lab import engine
    from lab.loading import start_job

    def finish(job, end) -> None:
        if end != "failed":
            engine._loaded(live.data, scenario, None if job.done >= job.total else (job.done, job.total))

    live.job = start_job(live.manager, live.ingestor, scenario.messages, on_finish=finish,
                         name=f"lab-ingest-{lab_id}")
    return live.job


class RecallPage:
    """The recall page of one session: its first user and first labelled query, candidates fetched once; a
    :meth:`rerun` is what the server's Python does for the page after a slider change."""

    def __init__(self, room, lab_id: str, live, settings) -> None:
        from lab import engine
        from memory.core.schema import parse_time

        self.room, self.lab_id, self.live, self.settings = room, lab_id, live, settings
        self.key = key_of(settings.scenario_key, settings.embedder, settings.write_path,
                          engine.lab_location(lab_id), settings.scenario.language)
        lab = self._lab(settings.config)
        self.owner = lab.owners()[0]  # the user picker's first option
        self.query = lab.queries_of(self.owner)[0]  # the query picker's first option
        self.as_of = parse_time(self.query.as_of, "as_of") if self.query.as_of else lab.now()
        manager = live.manager  # lab.engine._candidates' body (its Streamlit cache is per browser session)
        self.candidates = engine._candidates.__wrapped__(manager, manager.workspace, settings.embedder,
                                                         live.data.version, self.owner, self.query.query, self.as_of)

    def _lab(self, config):
        from lab import engine

        return engine.Lab(self.settings, config, self.live.manager.workspace, self.live.manager, self.live.data,
                          self.live.ingestor)

    def rerun(self, config) -> int:
        """One rerun under ``config``, counted as a page run as app.py counts it (background loads give way to
        it: lab.loading.FOREGROUND), unless ``--no-give-way``; returns the candidate rows shown."""
        from lab.loading import FOREGROUND

        if not GIVE_WAY:
            return self._rerun(config)
        with FOREGROUND.running():
            return self._rerun(config)

    def _rerun(self, config) -> int:
        import plotly.io
        from streamlit import dataframe_util
        from streamlit.elements.table import marshall_table
        from streamlit.proto.ArrowData_pb2 import ArrowData

        from lab import figures, teaching, views
        from lab.i18n import explain_drop, explain_leaks, kinds_label, t
        from memory import govern

        live = self.room.get(self.lab_id, self.key, lambda: self.live)  # open_lab on every run
        assert live is self.live and live.data.loaded
        lab = self._lab(config)
        owners = lab.owners()  # the pickers
        assert self.owner in owners
        lab.queries_of(self.owner)
        lab.now()
        result = govern(self.candidates, config, token_counter=views.cached_count_tokens)  # Lab.recall
        kinds = lab.kinds_for(self.owner, self.query)
        counts = views.counts(result, kinds)
        explain_leaks(views.leaked_kinds(result, kinds), lab.settings.write_path)  # state.explain_pollution
        for hits in (result.blind, result.governed):  # _render_side, twice
            frame = views.hits_frame(hits, kinds)
            if not frame.empty:
                shown = frame[list(SIDE_COLUMNS)].assign(pollution=frame["pollution"].map(kinds_label))
                shown = shown.rename(columns={c: t(f"recall.col.{c}") for c in SIDE_COLUMNS})
                numbers = {t("recall.col.similarity"): "{:.2f}", t("recall.col.score"): "{:.2f}"}
                marshall_table(ArrowData(), shown.style.format(numbers), "bench")
        frame = views.candidate_frame(result, kinds, explain=explain_drop)  # _render_candidates
        sims = frame["similarity"]
        t("recall.spread", embedder=lab.settings.embedder, p10=sims.quantile(0.1), p50=sims.median(),
          p90=sims.quantile(0.9), top=sims.max(), threshold=config.threshold,
          passing=int((sims >= config.threshold).sum()), total=len(sims))
        figure = figures.candidate_scores(frame, config.threshold, text={
            "similarity": t("fig.similarity"), "score": t("fig.score"), "threshold": t("knob.threshold"),
            "candidate": t("fig.candidate"), **{f"stage.{s}": t(f"stage.{s}") for s in figures.STAGE_COLORS}})
        plotly.io.to_json(figure, validate=False)  # what st.plotly_chart sends
        shown = frame.assign(stage=frame["stage"].map(lambda s: t(f"stage.{s}")),
                             pollution=frame["pollution"].map(kinds_label))
        dataframe_util.convert_pandas_df_to_arrow_bytes(shown)  # what st.dataframe sends
        views.context_view(lab.manager, result, window_size=config.window_size,  # _render_context
                           token_budget=config.token_budget)
        # teaching.render_ab: nothing pinned, so only its buttons (its candidates are the cached ones)
        export = views.candidate_frame(result, kinds, explain=explain_drop)  # render_export's arguments
        teaching.summary_markdown(query=self.query.query, user=f"{self.owner[0]}/{self.owner[1]}",
                                  embedder=lab.settings.embedder, write_path=lab.settings.write_path,
                                  config=config, result=result, kinds=kinds)
        export.to_csv(io.StringIO(), index=False)
        return counts.candidates


def settings_for(scenario, scenario_key: str, embedder: str, write_path: str):
    from lab.state import DEFAULTS, Settings

    return Settings(DEFAULTS, None, embedder, scenario, scenario_key, None, "en", write_path)


def shipped(name: str):
    from lab.state import load_shipped
    from memory.core.scenario import shipped_scenarios

    return load_shipped(str(shipped_scenarios()[name]))


def upload(messages: int):
    """The synthetic upload (bench/upload_ingest.py's scenario) as the lab parses an uploaded file: its Scenario and
    its scenario key (``upload-<sha1 of the bytes>``)."""
    from lab.state import UPLOAD_PREFIX, max_upload_messages, parse_upload
    from memory.eval.synth import SynthSpec, generate_scenario

    data = generate_scenario(SynthSpec(users=UPLOAD_USERS, messages=messages, seed=1))
    for i, message in enumerate(data["messages"]):
        message["content"] = f"{message['content']} (note {i + 1})"  # distinct texts, as in a real upload
    raw = json.dumps(data).encode("utf-8")
    scenario = parse_upload(raw, "synth.json", max_upload_messages())
    return scenario, UPLOAD_PREFIX + hashlib.sha1(raw).hexdigest()[:12]


# --- (a) rerun during an upload -----------------------------------------------------------------------------

def _time_reruns(page: RecallPage, configs: list, *, gap: float, until: Callable[[], bool],
                 at_least: int = 0) -> tuple[list[float], list[float]]:
    """Rerun ``page`` every ``gap`` seconds until ``until()`` (and at least ``at_least`` times): each rerun's wall
    seconds and the CPU seconds of this thread in it (what the rerun itself computed, waits left out)."""
    wall: list[float] = []
    cpu: list[float] = []
    while len(wall) < at_least or not until():
        config = configs[len(wall) % len(configs)]
        start, start_cpu = time.perf_counter(), time.thread_time()
        shown = page.rerun(config)
        wall.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - start_cpu)
        assert shown > 0
        time.sleep(gap)
    return wall, cpu


def _p50(values: list[float]) -> float:
    return statistics.median(values) * 1000.0


def rerun_during_upload(room, *, messages: int, repeats: int, idle_reruns: int, gap: float,
                        write_path: str) -> dict[str, Any]:
    from lab import models
    from lab.loading import SLOT
    from memory import MemoryConfig

    t0 = time.perf_counter()
    models.get("minilm")  # the lab's model getter (loads once per process)
    model_s = time.perf_counter() - t0
    scenario_b = shipped(SCENARIO)
    settings_b = settings_for(scenario_b, SCENARIO, "minilm", write_path)
    lab_b = uuid.uuid4().hex
    live_b = open_workspace(room, lab_b, SCENARIO, "minilm", write_path)
    load_small(live_b, scenario_b)
    page = RecallPage(room, lab_b, live_b, settings_b)
    configs = [MemoryConfig().replace(**move) for move in SLIDER_MOVES]
    _time_reruns(page, configs, gap=0.0, until=lambda: True, at_least=2 * len(configs))  # warm-up, not counted
    scenario_a, key_a = upload(messages)
    rounds = []
    global GIVE_WAY
    for _ in range(repeats):
        idle, idle_cpu = _time_reruns(page, configs, gap=gap, until=lambda: True, at_least=idle_reruns)
        for give_way in MODES:  # the same upload twice: B's reruns not counted as page runs (before), then counted
            GIVE_WAY = give_way
            lab_a = uuid.uuid4().hex  # a new participant uploads
            live_a = open_workspace(room, lab_a, key_a, "minilm", write_path)
            start = time.perf_counter()
            job = start_upload(live_a, scenario_a, lab_a)
            during, during_cpu = _time_reruns(page, configs, gap=gap, until=lambda: job.finished, at_least=1)
            upload_s = time.perf_counter() - start
            job.join()
            assert job.state == "done" and live_a.data.loaded, (job.state, job.error)
            room.release(lab_a)  # not timed: the next upload's participant is another lab
            rounds.append({"give_way": give_way,
                           "idle_ms": [round(x * 1000, 2) for x in idle], "during_ms": [round(x * 1000, 2) for x in during],
                           "idle_p50_ms": round(_p50(idle), 2), "idle_max_ms": round(max(idle) * 1000, 1),
                           "during_p50_ms": round(_p50(during), 2), "during_max_ms": round(max(during) * 1000, 1),
                           "ratio_p50": round(_p50(during) / _p50(idle), 3),
                           "idle_cpu_p50_ms": round(_p50(idle_cpu), 2), "during_cpu_p50_ms": round(_p50(during_cpu), 2),
                           "upload_s": round(upload_s, 2),
                           "upload_written": job.done})
    GIVE_WAY = True
    room.release(lab_b)
    import torch

    out = {"upload_messages": len(scenario_a.messages), "upload_users": UPLOAD_USERS, "write_path": write_path,
           "session_b": {"scenario": SCENARIO, "embedder": "minilm", "owner": list(page.owner),
                         "query": page.query.query, "candidates": len(page.candidates.hot) + len(page.candidates.active)},
           "gap_s": gap, "repeats": repeats, "minilm_load_s": round(model_s, 1), "slot": type(SLOT).__name__,
           "torch_threads": torch.get_num_threads(), "cpus": os.cpu_count(), "rounds": rounds,
           "target_ratio": 1.5}
    for give_way in MODES:
        mine = [r for r in rounds if r["give_way"] == give_way]
        idle_p50 = statistics.median(r["idle_p50_ms"] for r in mine)
        during_p50 = statistics.median(r["during_p50_ms"] for r in mine)
        out["give_way" if give_way else "no_give_way"] = {
            "idle_p50_ms": idle_p50, "during_p50_ms": during_p50,
            "idle_cpu_p50_ms": statistics.median(r["idle_cpu_p50_ms"] for r in mine),
            "during_cpu_p50_ms": statistics.median(r["during_cpu_p50_ms"] for r in mine),
            "ratio_p50": round(during_p50 / idle_p50, 3),
            "ratio_p50_per_repeat_median": statistics.median(r["ratio_p50"] for r in mine),
            "idle_max_ms": max(r["idle_max_ms"] for r in mine), "during_max_ms": max(r["during_max_ms"] for r in mine),
            "upload_s_median": statistics.median(r["upload_s"] for r in mine),
            "meets_target": during_p50 / idle_p50 <= 1.5}
    return out


GIVE_WAY = True
"""Whether B's reruns count as page runs (lab.loading.FOREGROUND), as app.py counts them; (a) sets it per mode."""
MODES = (False, True)
"""(a) per repeat: the upload with B's reruns not counted as page runs (the lab before give-way), then counted."""


# --- (b) footprint -----------------------------------------------------------------------------------------------

def footprint(room, clock: Clock, data_dir: Path, *, sessions: int, waves: int) -> dict[str, Any]:
    from lab import models
    from memory import MemoryConfig

    models.get("lexical")
    scenario = shipped(SCENARIO)
    settings = settings_for(scenario, SCENARIO, "lexical", "facts")
    config = MemoryConfig()

    def session() -> str:
        lab_id = uuid.uuid4().hex
        live = open_workspace(room, lab_id, SCENARIO, "lexical", "facts")
        load_small(live, scenario)
        RecallPage(room, lab_id, live, settings).rerun(config)  # the first page drawn
        return lab_id

    points = [snapshot("start", data_dir, len(room.labs()))]
    waves_out = []
    for wave in range(1, waves + 1):
        start = time.perf_counter()
        ids = [session() for _ in range(sessions)]
        open_s = time.perf_counter() - start
        peak = snapshot(f"wave {wave}: {sessions} sessions open (peak)", data_dir, len(room.labs()))
        clock.skew += room.idle_seconds + 60.0  # everyone of the wave leaves for longer than the idle time
        start = time.perf_counter()
        sweeper = session()  # the next participant: opening a lab releases the idle ones
        release_s = time.perf_counter() - start
        after = snapshot(f"wave {wave}: after release", data_dir, len(room.labs()))
        reasons: dict[str, int] = {}
        for lab_id in ids + ([waves_out[-1]["sweeper"]] if waves_out else []):  # and the last wave's sweeper
            notice = room.take_notice(lab_id)
            reason = notice.reason if notice else "kept"
            reasons[reason] = reasons.get(reason, 0) + 1
        points += [peak, after]
        waves_out.append({"wave": wave, "open_s": round(open_s, 1), "release_s": round(release_s, 2),
                          "released": reasons, "sweeper": sweeper})
    room.release_all()
    points.append(snapshot("after release_all", data_dir, len(room.labs())))
    trimmed = return_freed_memory()
    points.append(snapshot("then glibc malloc_trim(0)" + ("" if trimmed else " (nothing trimmed)"), data_dir,
                           len(room.labs())))
    first, last = points[2], points[-3]  # after the first wave's release, after the last's
    return {"sessions": sessions, "waves": waves, "scenario": SCENARIO, "embedder": "lexical", "write_path": "facts",
            "max_labs": room.max_labs, "idle_minutes": room.idle_seconds / 60, "points": points, "waves_detail": waves_out,
            "per_lab_at_peak": per_lab(points[0], points[1], sessions),
            "growth_after_release_first_to_last": {k: last[k] - first[k] for k in
                                                   ("rss_mb", "fds", "fds_data", "threads", "python_objects",
                                                             "disk_bytes", "disk_files")},
            "fd_limit_soft_hard": list(resource.getrlimit(resource.RLIMIT_NOFILE))}


def per_lab(start: dict, peak: dict, labs: int) -> dict[str, float]:
    return {"rss_mb": round((peak["rss_mb"] - start["rss_mb"]) / labs, 2), "fds": round((peak["fds"] - start["fds"]) / labs, 1),
            "threads": round((peak["threads"] - start["threads"]) / labs, 2),
            "disk_mb": round((peak["disk_bytes"] - start["disk_bytes"]) / labs / 1e6, 2)}


# --- tables ------------------------------------------------------------------------------------------------------

def table(a: dict[str, Any], b: dict[str, Any]) -> str:
    rows = a["rounds"]
    lines = [f"(a) Session B's slider rerun (recall page: {a['session_b']['scenario']}, {a['session_b']['candidates']} "
             f"candidates, one rerun every {a['gap_s']} s) while session A's {a['upload_messages']:,}-message upload "
             f"ingests in the lab's background job (MiniLM, write path {a['write_path']}), vs the same rerun idle; "
             f"{a['repeats']} repeats, each timing B idle, then during A's upload with B's reruns not counted as page "
             "runs (the job does not give way: the lab before lab.loading.FOREGROUND), then during the same upload "
             "counted, as app.py counts every run (the job gives way).", "",
             "| repeat | job gives way | idle p50 ms | idle max ms | during p50 ms | during max ms | during / idle (p50) "
             "| rerun's own CPU p50 ms, idle / during | reruns idle / during | upload s |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for i, r in enumerate(rows):
        lines.append(f"| {i // len(MODES) + 1} | {'yes' if r['give_way'] else 'no'} | {r['idle_p50_ms']:.1f} | "
                     f"{r['idle_max_ms']:.0f} | {r['during_p50_ms']:.1f} | "
                     f"{r['during_max_ms']:.0f} | {r['ratio_p50']:.2f} | {r['idle_cpu_p50_ms']:.1f} / "
                     f"{r['during_cpu_p50_ms']:.1f} | {len(r['idle_ms'])} / {len(r['during_ms'])} | "
                     f"{r['upload_s']:.1f} |")
    for key, label in (("no_give_way", "no"), ("give_way", "yes")):
        m = a[key]
        lines.append(f"| **median** | {label} | **{m['idle_p50_ms']:.1f}** | {m['idle_max_ms']:.0f} | "
                     f"**{m['during_p50_ms']:.1f}** | {m['during_max_ms']:.0f} | **{m['ratio_p50']:.2f}** (median of the "
                     f"repeats' ratios: {m['ratio_p50_per_repeat_median']:.2f}; target <= {a['target_ratio']}) | "
                     f"{m['idle_cpu_p50_ms']:.1f} / {m['during_cpu_p50_ms']:.1f} | | {m['upload_s_median']:.1f} |")
    lines += ["", f"(b) Footprint: waves of {b['sessions']} sessions (each a new lab: {b['scenario']}, "
              f"{b['embedder']}, {b['write_path']}, recall page drawn once); room cap {b['max_labs']}, idle "
              f"{b['idle_minutes']:g} min; after each wave the room's clock passes the idle time and the next "
              "participant's lab releases the idle ones.", "",
              "| at | labs | RSS MB | open fds (under data folder) | threads | data folder MB (files) |",
              "|---|---:|---:|---:|---:|---:|"]
    for p in b["points"]:
        lines.append(f"| {p['at']} | {p['labs']} | {p['rss_mb']:.0f} | {p['fds']} ({p['fds_data']}) | {p['threads']} | "
                     f"{p['disk_bytes'] / 1e6:.1f} ({p['disk_files']}) |")
    g, per = b["growth_after_release_first_to_last"], b["per_lab_at_peak"]
    lines += [""] + [f"Wave {w['wave']}: {b['sessions']} sessions opened in {w['open_s']:.0f} s; the next "
                     f"participant's lab open, which ran the releases, took {w['release_s']:.1f} s; released: "
                     + ", ".join(f"{n} {why}" for why, n in sorted(w["released"].items())) + "."
                     for w in b["waves_detail"]]
    lines += ["", f"Per open lab (wave 1 peak over start): {per['rss_mb']} MB RSS, {per['fds']} fds, "
              f"{per['threads']} threads, {per['disk_mb']} MB on disk. After-release change from wave 1 to wave "
              f"{b['waves']}: {g['rss_mb']:+.0f} MB RSS, {g['fds']:+d} fds, {g['threads']:+d} threads, "
              f"{g['disk_bytes'] / 1e6:+.1f} MB on disk. At {per['fds']} fds per lab, a soft limit of 1,024 "
              f"descriptors (a common `ulimit -n`; this run's: {b['fd_limit_soft_hard'][0]:,}) holds about "
              f"{int((1024 - b['points'][0]['fds']) // per['fds'])} labs."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.room_load", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a 300-message upload, 2 repeats; waves of 10 sessions")
    p.add_argument("--messages", type=int, default=1500, help="messages of session A's upload")
    p.add_argument("--repeats", type=int, default=5, help="idle / during pairs of (a)")
    p.add_argument("--idle-reruns", type=int, default=40, help="reruns timed idle per repeat")
    p.add_argument("--gap", type=float, default=0.1, help="seconds between two of session B's reruns")
    p.add_argument("--sessions", type=int, default=60, help="labs per wave of (b)")
    p.add_argument("--waves", type=int, default=3)
    p.add_argument("--write-path", choices=("raw", "facts"), default=None,
                   help="session A's and B's write path in (a) (default: the sidebar's, lab.state.DEFAULT_WRITE_PATH)")
    a = p.parse_args(argv)
    if a.quick:
        a.messages, a.repeats, a.idle_reruns, a.sessions, a.waves = 300, 2, 20, 10, 2
    with tempfile.TemporaryDirectory(prefix="bench-room-") as tmp:
        data_dir = Path(tmp) / "data"
        os.environ["MEMORY_DATA_DIR"] = str(data_dir)  # lab.engine.lab_location reads it on every call
        os.environ.pop("MEMORY_CHROMA_HOST", None)
        os.environ["MEMORY_LAB_MAX_LABS"] = str(a.sessions)
        os.environ["MEMORY_LAB_IDLE_MINUTES"] = "90"
        from streamlit.logger import set_log_level

        set_log_level(logging.ERROR)  # bare mode warns of "no runtime" / "no session state" on every page call
        data_dir.mkdir(parents=True)
        clock = Clock()
        room = make_room(clock)
        started = time.perf_counter()
        b = footprint(room, clock, data_dir, sessions=a.sessions, waves=a.waves)
        footprint_s = time.perf_counter() - started
        started = time.perf_counter()
        rerun = rerun_during_upload(room, messages=a.messages, repeats=a.repeats, idle_reruns=a.idle_reruns,
                                    gap=a.gap, write_path=a.write_path or default_write_path())
        rerun_s = time.perf_counter() - started
        room.release_all()
    text = table(rerun, b)
    name = "room_load" if a.quick else "room_load_full"
    write_results(name, {"rerun_during_upload": rerun, "footprint": b, "seconds": {
        "footprint": round(footprint_s, 1), "rerun_during_upload": round(rerun_s, 1)},
        "threads_at_end": [t.name for t in threading.enumerate()]}, text)
    print(text)
    return 0


def default_write_path() -> str:
    from lab.state import DEFAULT_WRITE_PATH

    return DEFAULT_WRITE_PATH


if __name__ == "__main__":
    raise SystemExit(main())
