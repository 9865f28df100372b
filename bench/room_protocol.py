"""The workshop room at the protocol level: N participants' laptops, no browser, against one ``serve.py``.

`python -m bench.room_protocol [--quick] [--participants 30,60,100] [--within 2] [--timeout S]` starts, for each N,
``streamlit run serve.py`` headless on a free loopback port with a fresh data folder (as room_burst does) and, the
same way, a **bare Streamlit page** (:data:`BARE_APP`, one ``st.write``) as the baseline: what N arrivals cost this
machine's Streamlit before the lab draws anything of its own. Each room is N simulated participants arriving evenly
spread within ``--within`` seconds (asyncio, aiohttp: one client process, no browser on the server).

A participant (:func:`participant`) does what a laptop's browser does, speaking Streamlit's own protocol:

1. **the page**: ``GET /`` and every asset index.html references (its module scripts, module preloads, stylesheet,
   preloaded font and icon), six connections at a time, ``Accept-Encoding`` as Chromium sends it, each URL once (an
   empty cache); then ``/_stcore/health`` and ``/_stcore/host-config`` (which set the XSRF cookie), as the frontend
   does before it connects;
2. **the session**: the websocket ``/_stcore/stream`` (subprotocols ``streamlit`` and the XSRF token, the page's
   ``Origin``, permessage-deflate offered), then a ``BackMsg.rerun_script`` with the page's query string, and
   ForwardMsgs read until a full script run has finished with nothing left polling (a run whose fragments ask for
   auto-reruns, the lab's "waiting for the model" status, is not the page yet: the client reruns those fragments at
   their interval, as the frontend does). The lazily loaded bundle of each element type drawn (the plotly chart,
   tables, sliders: their chunks and dependencies as index.js lists them, :class:`Assets`) and the fonts the page
   uses are fetched as they appear, and the first page counts once they have arrived;
3. **a slider move** (once every participant has its page, arriving again spread within ``--within`` s; with
   ``--moves N``, N moves one after another, one step there and back): the threshold slider (key ``threshold``, else
   the first slider) one step, a ``rerun_script`` with its widget state (and its fragment, if it sits in one), timed
   until that run has finished: a fragment run (the lab's recall page reruns its results alone when a recall knob
   moves, lab.state.knob_moved: ``slider_kind`` "fragment"), or a full run with nothing polling ("page"). The bare
   page has no slider: its participants send a plain rerun (what pressing R does), for scale.

A participant is **served** when its page came within ``--timeout`` seconds and is the lab's page or the room-full
page (the lab's "try again" button, ``engine.room_full_retry``), with no exception element (a delta whose element is
``exception``) on the page or after its slider move. Measured per room: first page p50/p95 (lab, bare, and the ratio
of their p95), the server's CPU per arrival (utime + stime of the server process, its threads and children, from
``/proc``, over the arrivals, divided by N) and per slider move, bytes on the wire per participant (everything the
server sent it: HTTP headers and bodies as transmitted, websocket frames as transmitted; counted at the socket), and
slider rerun p50/p95. The simulated laptops run in this process, on the server's cores: the JSON gives their CPU per
participant (``client_cpu_per_participant_s``). On a shared machine read ratios and CPU, not seconds.

Writes bench/results/room_protocol.json and .md (room_protocol_quick with --quick: N = 4 and 8; ``--out NAME``:
NAME.json and .md). Exit status 0 when every participant of every room was served.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import aiohttp

from .common import stop, write_results
from .lab_start import _free_port, _wait_http

ROOT = Path(__file__).resolve().parent.parent
BARE_APP = 'import streamlit as st\n\nst.write("A bare Streamlit page")\n'
"""The baseline: a one-line Streamlit page, served the same way as the lab."""
ACCEPT_ENCODING = "gzip, deflate, br, zstd"
"""What Chromium asks for."""
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) room-protocol-bench"
CONNECTIONS = 6
"""A browser's connections per host."""
SLIDER_KEY = "threshold"
ROOM_FULL_KEY = "engine.room_full_retry"
"""The key of the room-full page's button (lab/engine.py: _room_full): the page, in any language."""
WS_CLOSE_GRACE_S = 5.0
SERVER_ARGS = ("--server.headless", "true", "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
               "--browser.gatherUsageStats", "false")


# --- what a browser downloads ------------------------------------------------------------------------------------

STATIC_REF = re.compile(r'(?:src|href)="\./([^"?#]+)"')
LAZY_IMPORT = re.compile(r"import\(`\./([A-Za-z]+)\.[\w-]+\.js`\)(?:\.then\([^)]*\))?,__vite__mapDeps\(\[([\d,]*)\]\)")
MAP_DEPS = re.compile(r"m\.f=\[([^\]]*)\]")
CHUNK_OF = {"dataframe": "DataFrame", "vega_lite_chart": "ArrowVegaLiteChart", "graphviz_chart": "GraphVizChart",
            "echarts_chart": "EChartsChart", "imgs": "ImageList", "iframe": "IFrame",
            "code": "StreamlitSyntaxHighlighter"}
"""Element types whose frontend chunk is not named by the type itself (``plotly_chart`` -> ``PlotlyChart``)."""
FONTS = {"base": "SourceSansVF-Upright", "icons": "MaterialSymbols-Rounded", "mono": "SourceCodeVF-Upright"}
MONO_TYPES = {"text", "code"}


@dataclass(frozen=True)
class Assets:
    """What the frontend fetches beyond index.html's references, read from the installed Streamlit's static folder
    (the server runs the same one): each lazily loaded element type's chunk with its dependencies (index.js's
    ``__vite__mapDeps``), and the fonts by name."""

    lazy: dict[str, tuple[str, ...]]
    fonts: dict[str, str]

    @classmethod
    def from_static(cls, static: Path) -> "Assets":
        index = next((static / "static" / "js").glob("index.*.js")).read_text(encoding="utf-8")
        deps = [name.strip().strip("\"'`") for name in MAP_DEPS.search(index).group(1).split(",")]  # type: ignore
        lazy = {}
        for chunk, numbers in LAZY_IMPORT.findall(index):
            files = [deps[int(n)] for n in numbers.split(",") if n]
            lazy[chunk] = tuple(dict.fromkeys(_static_path(f) for f in files))
        fonts = {}
        for kind, stem in FONTS.items():
            found = sorted((static / "static" / "media").glob(f"{stem}.*.woff2"))
            if found:
                fonts[kind] = f"static/media/{found[0].name}"
        return cls(lazy, fonts)

    def for_element(self, element_type: str) -> tuple[str, ...]:
        chunk = CHUNK_OF.get(element_type) or "".join(part.capitalize() for part in element_type.split("_"))
        return self.lazy.get(chunk, ())

    def fonts_for(self, element_types: set[str], icons: bool) -> tuple[str, ...]:
        kinds = ["base", *(["icons"] if icons else []), *(["mono"] if element_types & MONO_TYPES else [])]
        return tuple(self.fonts[k] for k in kinds if k in self.fonts)


def _static_path(dep: str) -> str:
    """A ``__vite__mapDeps`` entry (relative to static/js/) as a path under the server's root."""
    parts = ["static", "js"]
    for piece in dep.split("/"):
        if piece == "..":
            parts.pop()
        elif piece not in ("", "."):
            parts.append(piece)
    return "/".join(parts)


class _Count:
    def __init__(self) -> None:
        self.bytes = 0


class _CountingConnector(aiohttp.TCPConnector):
    """Counts every byte the server sends over this connector's connections, as they arrive on the socket."""

    def __init__(self, count: _Count, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._count = count

    async def _wrap_create_connection(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        transport, proto = await super()._wrap_create_connection(*args, **kwargs)
        received, count = proto.data_received, self._count

        def counted(data: bytes) -> None:
            count.bytes += len(data)
            received(data)

        proto.data_received = counted  # type: ignore[method-assign]
        return transport, proto


# --- one participant ---------------------------------------------------------------------------------------------


@dataclass
class Run:
    """One script run as the client saw it (a full run from its new_session, or a fragment run)."""

    types: set[str] = field(default_factory=set)
    metrics: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    polling: bool = False
    room_full: bool = False
    status: int | None = None


@dataclass
class Widget:
    id: str
    proto: Any
    fragment_id: str


class Session:
    """The websocket side of a participant: reads ForwardMsgs, reruns polling fragments as the frontend does, and
    tells when a run has finished."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, query: str, url: str, on_element) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.ws, self.query, self.url = ws, query, url
        self.page_hash = ""
        self.run = Run()
        self.finished: asyncio.Queue[Run] = asyncio.Queue()
        self.sliders: dict[str, Widget] = {}
        self.pollers: dict[str, asyncio.Task] = {}
        self.icons = False
        self._on_element = on_element
        self._forward = ForwardMsg
        self.reader = asyncio.create_task(self._read())

    def back(self, *, widget: Any = None, fragment_id: str = "", auto: bool = False) -> Any:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_script_hash = self.page_hash
        state.fragment_id = fragment_id
        state.is_auto_rerun = auto
        if widget is not None:
            state.widget_states.widgets.append(widget)
        info = state.context_info
        info.timezone, info.timezone_offset, info.locale, info.url = "UTC", 0, "en-US", self.url
        return msg

    async def send(self, msg: Any) -> None:
        await self.ws.send_bytes(msg.SerializeToString())

    async def _poll(self, fragment_id: str, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.send(self.back(fragment_id=fragment_id, auto=True))

    async def _read(self) -> None:
        async for message in self.ws:
            if message.type != aiohttp.WSMsgType.BINARY:
                break
            if b":material/" in message.data:
                self.icons = True
            msg = self._forward()
            msg.ParseFromString(message.data)
            self._handle(msg)

    def _handle(self, msg: Any) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":  # a full run starts: the frontend drops the last run's polling timers
            self.run = Run()
            self.page_hash = msg.new_session.page_script_hash
            for task in self.pollers.values():
                task.cancel()
            self.pollers.clear()
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "auto_rerun":
            rerun = msg.auto_rerun
            if rerun.fragment_id not in self.pollers:
                self.pollers[rerun.fragment_id] = asyncio.create_task(self._poll(rerun.fragment_id, rerun.interval))
        elif kind == "stop_auto_rerun":
            for fragment in msg.stop_auto_rerun.fragment_ids:
                if task := self.pollers.pop(fragment, None):
                    task.cancel()
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._element(msg.delta.new_element, msg.delta.fragment_id)
        elif kind == "script_finished":
            self.run.status = msg.script_finished
            self.run.polling = bool(self.pollers)
            self.finished.put_nowait(self.run)
            self.run = Run()

    def _element(self, element: Any, fragment_id: str) -> None:
        kind = element.WhichOneof("type")
        if kind is None:
            return
        self.run.types.add(kind)
        self._on_element(kind)
        if kind == "exception":
            self.run.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:200])
        elif kind == "metric":
            self.run.metrics.append(element.metric.label)
        elif kind == "button" and element.button.id.endswith(ROOM_FULL_KEY):
            self.run.room_full = True
        elif kind == "slider":
            self.sliders[element.slider.id] = Widget(element.slider.id, element.slider, fragment_id)

    async def page(self) -> Run:
        """The first full run that finished with nothing polling (exceptions of earlier runs carried over)."""
        seen: list[str] = []
        while True:
            run = await self.finished.get()
            seen += run.exceptions
            if run.status == self._forward.FINISHED_SUCCESSFULLY and not run.polling:
                run.exceptions = seen
                return run

    async def rerun_done(self) -> Run:
        """The next run that finished (full or fragment), skipping polling fragments' own runs."""
        while True:
            run = await self.finished.get()
            if run.status in (self._forward.FINISHED_SUCCESSFULLY, self._forward.FINISHED_FRAGMENT_RUN_SUCCESSFULLY):
                return run

    async def settled(self) -> Run:
        """After a widget outside any fragment changed: the run it started, once finished. A fragment run (the widget's
        callback reran a fragment alone, as the lab's recall knobs do), or a full run with nothing left polling
        (:meth:`page`); exceptions of earlier runs carried over. Called with nothing polling (after :meth:`page`)."""
        seen: list[str] = []
        while True:
            run = await self.finished.get()
            seen += run.exceptions
            if run.status == self._forward.FINISHED_FRAGMENT_RUN_SUCCESSFULLY or (
                    run.status == self._forward.FINISHED_SUCCESSFULLY and not run.polling):
                run.exceptions = seen
                return run

    def fragment_run(self, run: Run) -> bool:
        return run.status == self._forward.FINISHED_FRAGMENT_RUN_SUCCESSFULLY

    def slider_move(self, index: int = 0) -> Any | None:
        """The widget state of the threshold slider (else the first slider) for move ``index``: one step from the
        value the page drew, then back, and so on (every move a change; a fragment run does not draw the slider
        again, so the value it drew is kept here), and its fragment."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        if not self.sliders:
            return None
        chosen = next((w for w in self.sliders.values() if w.id.endswith(f"-{SLIDER_KEY}")),
                      next(iter(self.sliders.values())))
        slider = chosen.proto
        value = list(slider.value if slider.set_value else slider.default)
        step = slider.step or 1
        moved = value[0] + step if value[0] + step <= slider.max else value[0] - step
        new = moved if index % 2 == 0 else value[0]
        state = WidgetState(id=chosen.id)
        state.double_array_value.data[:] = [round(new, 10), *value[1:]]
        return state, chosen.fragment_id


@dataclass
class Participant:
    first_page_s: float | None = None
    served: bool = False
    room_full: bool = False
    lab_page: bool = False
    metrics: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    error: str = ""
    http_bytes: int = 0
    ws_bytes_page: int = 0
    ws_bytes_slider: int = 0
    slider_s: float | None = None
    """The first slider move's time."""
    slider_times: list[float] = field(default_factory=list)
    """Every move's time (``--moves``)."""
    slider_kind: str = ""
    assets: int = 0


class Client:
    """One participant's laptop: its cookies, its connections, its page, its websocket."""

    def __init__(self, base: str, query: str, assets: Assets, *, bare: bool = False) -> None:
        self.base, self.query, self.assets, self.bare = base, query, assets, bare
        self.result = Participant()
        self._http_count, self._ws_count = _Count(), _Count()
        self._jar = aiohttp.CookieJar(unsafe=True)
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": ACCEPT_ENCODING}
        self.http = aiohttp.ClientSession(connector=_CountingConnector(self._http_count, limit_per_host=CONNECTIONS),
                                          cookie_jar=self._jar, auto_decompress=False, headers=headers)
        self._ws_http = aiohttp.ClientSession(connector=_CountingConnector(self._ws_count), cookie_jar=self._jar,
                                              headers=headers)
        self._fetched: set[str] = set()
        self._fetches: list[asyncio.Task] = []
        self.session: Session | None = None
        self._types: set[str] = set()

    async def _get(self, path: str) -> bytes:
        async with self.http.get(f"{self.base}/{path}") as resp:
            body = await resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET /{path}: HTTP {resp.status}")
            return body

    def _fetch(self, paths) -> None:
        fresh = [p for p in paths if p not in self._fetched]
        self._fetched.update(fresh)
        self._fetches += [asyncio.create_task(self._get(p)) for p in fresh]

    def _on_element(self, kind: str) -> None:
        if kind not in self._types:
            self._types.add(kind)
            self._fetch(self.assets.for_element(kind))

    async def arrive(self) -> None:
        """The page, its assets, the session and its first complete run."""
        began = time.perf_counter()
        html = (await self._get(f"?{self.query}" if self.query else "")).decode("utf-8", "replace")
        self._fetch(dict.fromkeys(STATIC_REF.findall(html)))
        await asyncio.gather(*self._fetches)
        await self._get("_stcore/health")
        await self._get("_stcore/host-config")
        xsrf = next((c.value for c in self._jar if c.key == "_streamlit_xsrf"), "")
        ws = await self._ws_http.ws_connect(f"{self.base.replace('http', 'ws', 1)}/_stcore/stream",
                                            protocols=("streamlit", xsrf) if xsrf else ("streamlit",),
                                            origin=self.base, compress=15, max_msg_size=0, heartbeat=None)
        self.session = Session(ws, self.query, f"{self.base}/", self._on_element)
        await self.session.send(self.session.back())
        run = await self.session.page()
        self._fetch(self.assets.fonts_for(self._types, self.session.icons))
        await asyncio.gather(*self._fetches)
        self.result.first_page_s = time.perf_counter() - began
        self.result.assets = len(self._fetched)
        self._judge(run)
        self.result.ws_bytes_page = self._ws_count.bytes

    def _judge(self, run: Run) -> None:
        r = self.result
        r.metrics = run.metrics
        r.exceptions += run.exceptions
        r.room_full = r.room_full or run.room_full
        r.lab_page = r.lab_page or bool(run.metrics)
        r.served = (self.bare or r.lab_page or r.room_full) and not r.exceptions

    async def moves(self, count: int) -> None:
        """``count`` slider moves, one after another (:meth:`move`)."""
        for index in range(count):
            await self.move(index)

    async def move(self, index: int = 0) -> None:
        """Move the slider one step (a plain rerun on the bare page) and wait for that run."""
        assert self.session is not None
        move = self.session.slider_move(index)
        before = self._ws_count.bytes
        began = time.perf_counter()
        if move is None:
            self.result.slider_kind = "rerun"
            await self.session.send(self.session.back())
            run = await self.session.page()
        else:
            state, fragment = move
            await self.session.send(self.session.back(widget=state, fragment_id=fragment))
            run = await (self.session.rerun_done() if fragment else self.session.settled())
            self.result.slider_kind = "fragment" if self.session.fragment_run(run) else "page"
        took = time.perf_counter() - began
        self.result.slider_times.append(took)
        self.result.slider_s = self.result.slider_s if self.result.slider_s is not None else took
        self.result.ws_bytes_slider += self._ws_count.bytes - before
        self.result.exceptions += run.exceptions
        self.result.served = self.result.served and not run.exceptions

    async def close(self) -> None:
        self.result.http_bytes = self._http_count.bytes
        if self.session is not None:
            for task in self.session.pollers.values():
                task.cancel()
            self.session.reader.cancel()
            try:
                await asyncio.wait_for(self.session.ws.close(), WS_CLOSE_GRACE_S)
            except (asyncio.TimeoutError, aiohttp.ClientError, OSError):
                pass
        for task in self._fetches:
            task.cancel()
        await self.http.close()
        await self._ws_http.close()


async def _staggered(delay: float, coro):
    await asyncio.sleep(delay)
    return await coro


async def _guarded(client: Client, step, timeout_s: float) -> None:
    try:
        await asyncio.wait_for(step, timeout_s)
    except asyncio.TimeoutError:
        client.result.error = client.result.error or f"timeout after {timeout_s:.0f} s"
        client.result.served = False
    except Exception as exc:  # noqa: BLE001 - a participant not served is a result, not a crash of the bench
        client.result.error = client.result.error or f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        client.result.served = False


async def room_clients(base: str, pid: int, n: int, within: float, timeout_s: float, *, bare: bool,
                       query: str = "", assets: Assets | None = None,
                       moves: int = 1) -> tuple[list[Participant], dict]:
    """N participants arrive spread within ``within`` s; once all have their page, each moves the slider ``moves``
    times, one move after another (starting spread the same way). Each participant's result, and the server's CPU
    seconds and the time of each phase."""
    assets = assets or Assets.from_static(_static_dir())
    clients = [Client(base, query, assets, bare=bare) for _ in range(n)]
    spread = [i * within / max(n - 1, 1) for i in range(n)]
    own0 = _own_cpu()
    try:
        cpu0, began = server_cpu(pid), time.perf_counter()
        await asyncio.gather(*(_staggered(d, _guarded(c, c.arrive(), timeout_s)) for d, c in zip(spread, clients)))
        cpu1, arrivals_s = server_cpu(pid), time.perf_counter() - began
        ready = [c for c in clients if c.session is not None and c.result.first_page_s is not None]
        await asyncio.gather(*(_staggered(d, _guarded(c, c.moves(moves), timeout_s * moves))
                               for d, c in zip(spread, ready)))
        cpu2 = server_cpu(pid)
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    moved = sum(len(c.result.slider_times) for c in ready)
    return [c.result for c in clients], {"arrival_cpu": cpu1 - cpu0, "slider_cpu": cpu2 - cpu1,
                                         "arrivals_s": arrivals_s, "moved": moved, "client_cpu": _own_cpu() - own0}


def _own_cpu() -> float:
    """This process's CPU seconds: the simulated laptops share the server's cores."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def room(base: str, pid: int, n: int, within: float, timeout_s: float, *, bare: bool, query: str = "",
               moves: int = 1,
               assets: Assets | None = None) -> dict:
    """:func:`room_clients`, summarized (:func:`summarize`)."""
    results, phases = await room_clients(base, pid, n, within, timeout_s, bare=bare, query=query, assets=assets,
                                         moves=moves)
    return summarize(results, **phases)


def summarize(results: list[Participant], *, arrival_cpu: float, slider_cpu: float, arrivals_s: float,
              moved: int, client_cpu: float = 0.0) -> dict:
    n = len(results)
    pages = [r.first_page_s for r in results if r.first_page_s is not None]
    moves = [took for r in results for took in r.slider_times]
    total = [r.http_bytes + r.ws_bytes_page + r.ws_bytes_slider for r in results]
    return {
        "participants": n, "served": sum(r.served for r in results),
        "lab_pages": sum(r.lab_page for r in results), "room_full_pages": sum(r.room_full for r in results),
        "exception_elements": sum(len(r.exceptions) for r in results),
        "exceptions": sorted({e for r in results for e in r.exceptions})[:10],
        "errors": sorted({r.error for r in results if r.error})[:10],
        "first_page_p50_s": _pct(pages, 0.5), "first_page_p95_s": _pct(pages, 0.95), "first_page_max_s": max(pages, default=None),
        "arrivals_s": arrivals_s,
        "cpu_per_arrival_s": arrival_cpu / n if n else None,
        "cpu_per_move_s": slider_cpu / moved if moved else None,
        "client_cpu_per_participant_s": client_cpu / n if n else None,
        "bytes_per_participant": sum(total) / n if n else None,
        "http_bytes_per_participant": sum(r.http_bytes for r in results) / n if n else None,
        "ws_bytes_per_participant": sum(r.ws_bytes_page + r.ws_bytes_slider for r in results) / n if n else None,
        "assets_per_participant": sum(r.assets for r in results) / n if n else None,
        "slider_p50_s": _pct(moves, 0.5), "slider_p95_s": _pct(moves, 0.95), "slider_moves": len(moves),
        "slider_kinds": sorted({r.slider_kind for r in results if r.slider_kind}),
    }


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- the servers -------------------------------------------------------------------------------------------------


def _static_dir() -> Path:
    from streamlit import file_util

    return Path(file_util.get_static_dir())


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads), its waited-for children and its live descendants."""
    tick = os.sysconf("SC_CLK_TCK")

    def stat(p: int) -> list[str]:
        return Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()

    fields = stat(pid)
    total = sum(int(fields[i]) for i in (11, 12, 13, 14))
    for child in _descendants(pid):
        try:
            f = stat(child)
        except OSError:
            continue
        total += int(f[11]) + int(f[12])
    return total / tick


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


@contextmanager
def served(script: str, *, cwd: Path, env_extra: dict[str, str] | None = None, log: Path | None = None,
           timeout_s: float = 300.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """``streamlit run SCRIPT`` headless on a free loopback port with a fresh MEMORY_DATA_DIR; (base URL, process)."""
    port = _free_port()
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, MEMORY_DATA_DIR=data, **(env_extra or {}))
        env.pop("MEMORY_CHROMA_HOST", None)
        out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
                                 *SERVER_ARGS], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_http(f"{base}/_stcore/health", proc, time.monotonic() + timeout_s)
            yield base, proc
        finally:
            stop(proc)
            if log:
                out.close()  # type: ignore[union-attr]


def measure(ns: list[int], within: float, timeout_s: float, *, moves: int = 1) -> list[dict]:
    assets = Assets.from_static(_static_dir())
    rooms = []
    with tempfile.TemporaryDirectory() as scratch:
        bare_dir = Path(scratch)
        (bare_dir / "bare.py").write_text(BARE_APP, encoding="utf-8")
        for n in ns:
            row: dict[str, Any] = {"n": n}
            with served("bare.py", cwd=bare_dir) as (base, proc):
                row["bare"] = asyncio.run(room(base, proc.pid, n, within, timeout_s, bare=True, assets=assets,
                                               moves=moves))
            with served("serve.py", cwd=ROOT) as (base, proc):
                row["lab"] = asyncio.run(room(base, proc.pid, n, within, timeout_s, bare=False, assets=assets,
                                              moves=moves))
                row["lab"]["server_alive"] = proc.poll() is None
            lab, bare = row["lab"], row["bare"]
            row["p95_ratio"] = (lab["first_page_p95_s"] / bare["first_page_p95_s"]
                                if lab["first_page_p95_s"] and bare["first_page_p95_s"] else None)
            print(json.dumps(row, default=str), flush=True)
            rooms.append(row)
    return rooms


MB = 1_000_000


def table(rooms: list[dict], within: float) -> str:
    f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
    head = (f"| participants (arriving within {within:g} s) | served (lab / room full) | first page p50 / p95 (s) | "
            "bare page p50 / p95 (s) | lab / bare (p95) | server CPU per arrival, lab / bare (s) | "
            "MB per participant, lab (HTTP + ws) / bare | slider rerun p50 / p95 (s) | server CPU per move (s) |")
    lines = [head, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in rooms:
        lab, bare = row["lab"], row["bare"]
        lines.append(
            f"| {row['n']} | {lab['served']}/{lab['participants']} ({lab['lab_pages']} / {lab['room_full_pages']}) | "
            f"{f(lab['first_page_p50_s'])} / {f(lab['first_page_p95_s'])} | "
            f"{f(bare['first_page_p50_s'])} / {f(bare['first_page_p95_s'])} | {f(row['p95_ratio'], 2)}x | "
            f"{f(lab['cpu_per_arrival_s'], 2)} / {f(bare['cpu_per_arrival_s'], 2)} | "
            f"{f(lab['bytes_per_participant'] / MB, 2)} ({f(lab['http_bytes_per_participant'] / MB, 2)} + "
            f"{f(lab['ws_bytes_per_participant'] / MB, 2)}) / {f(bare['bytes_per_participant'] / MB, 2)} | "
            f"{f(lab['slider_p50_s'], 2)} / {f(lab['slider_p95_s'], 2)} ({lab['slider_moves']} moves, "
            f"{'/'.join(lab['slider_kinds']) or '-'}) | {f(lab['cpu_per_move_s'], 2)} |")
    first, last = rooms[0]["lab"], rooms[-1]["lab"]
    growth = (last["cpu_per_arrival_s"] / first["cpu_per_arrival_s"] - 1) * 100 if first["cpu_per_arrival_s"] else None
    lines += ["", f"Against issue 51's must-show: served {sum(r['lab']['served'] for r in rooms)}/"
              f"{sum(r['n'] for r in rooms)}; lab / bare p95 at most {f(max(r['p95_ratio'] or 0 for r in rooms), 2)}x "
              f"(<= 1.3x); server CPU per arrival {f(first['cpu_per_arrival_s'], 2)} s at {rooms[0]['n']} "
              f"(<= 0.30 s) and {f(last['cpu_per_arrival_s'], 2)} s at {rooms[-1]['n']}: "
              f"{'-' if growth is None else f'{growth:+.0f}'}% (<= +20%); at most "
              f"{f(max(r['lab']['bytes_per_participant'] for r in rooms) / MB, 2)} MB per participant (<= 3 MB)."]
    problems = [f"N={row['n']}: " + "; ".join(row["lab"]["errors"] + row["lab"]["exceptions"])
                for row in rooms if row["lab"]["errors"] or row["lab"]["exceptions"]]
    if problems:
        lines += ["", "Not served: " + " | ".join(problems)[:1200]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.room_protocol", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="N = 4 and 8")
    p.add_argument("--participants", default=None, help="comma-separated room sizes (default 30,60,100)")
    p.add_argument("--within", type=float, default=2.0, help="seconds over which a room's participants arrive")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a participant waits for its page or rerun")
    p.add_argument("--moves", type=int, default=1,
                   help="slider moves per participant, one after another, each waiting for its run (default 1)")
    p.add_argument("--out", default=None, metavar="NAME",
                   help="write bench/results/NAME.json and .md (default room_protocol, room_protocol_quick)")
    a = p.parse_args(argv)
    try:
        ns = [int(v) for v in (a.participants or ("4,8" if a.quick else "30,60,100")).split(",") if v.strip()]
    except ValueError:
        p.error(f"--participants: {a.participants!r} is not a comma-separated list of numbers")
    if not ns or min(ns) < 1:
        p.error("--participants: give one or more room sizes of at least 1")
    if a.moves < 1:
        p.error(f"--moves: give 1 or more moves per participant, got {a.moves}")
    if a.out is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,80}", a.out):
        p.error(f"--out: {a.out[:80]!r} is not a plain file name (letters, digits, '_', '.', '-')")
    rooms = measure(ns, a.within, a.timeout, moves=a.moves)
    text = table(rooms, a.within)
    print(text)
    command = "python -m bench.room_protocol" + (" --quick" if a.quick else "") + \
        (f" --participants {a.participants}" if a.participants else "") + (f" --within {a.within:g}" if a.within != 2.0 else "") + \
        (f" --moves {a.moves}" if a.moves != 1 else "") + (f" --out {a.out}" if a.out else "")
    write_results(a.out or ("room_protocol_quick" if a.quick else "room_protocol"),
                  {"command": command, "within_s": a.within, "moves": a.moves, "rooms": rooms}, text)
    return 0 if all(r["lab"]["served"] == r["n"] for r in rooms) else 1


if __name__ == "__main__":
    raise SystemExit(main())
