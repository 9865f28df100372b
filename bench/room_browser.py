"""The workshop room in a real browser: N participants open the lab's link at once, then move a slider.

`python -m bench.room_browser [--quick] [--participants N] [--browser shell|chromium]` starts
``streamlit run serve.py`` headless on a free loopback port with a fresh data folder (as the README's quick start
does), then:

1. **the instructor's first page**: one browser context opens ``/`` and waits for a usable page (the recall page's
   metrics and chart drawn, the app idle over a live connection: the browser tests' own idle rule). Timed from the
   server's HTTP 200 (``first_page_s``) and from the request (``first_from_request_s``). The instructor's page stays
   open, as it does in a room.
2. **the room**: N more contexts (each its own cookies, so its own lab: a participant's laptop) request ``/`` at
   the same moment. Each one's time to a usable page is recorded; then each moves the threshold slider one step
   (ArrowRight) and the time until its rerun has finished is recorded. A participant who has no usable page within
   ``--timeout`` seconds counts as not served.

Side by side, the same room (same N, same browser) opens a **bare Streamlit page** (a title, a metric, a sidebar
slider and a small plotly chart: ``BARE_APP``), served the same way: what N fresh browser contexts cost on this machine
before the lab draws anything of its own. The lab's figures are reported beside it and as ratios.

A slider move counts once its rerun has started and ended; a key press that starts no rerun within
:data:`MOVE_START_S` (or ``--timeout`` if shorter)
(under this load Chromium sometimes loses one, on the bare page too) is listed under ``errors`` and left out of the
slider figures, which say how many moves they hold.

Measured on the server process (``/proc/<pid>``): CPU seconds (user + system, its threads included) spent from the
room's first request until its last page was usable, divided by N (``cpu_per_arrival_s``); resident memory before
and after (``rss_growth_per_lab_mb``). The browsers run on the same machine (as in the issue's measurement), so their
drawing competes with the server for the two cores; the figures are of that whole room, not of the server alone.

The participants' browser (``--browser``) is Chromium's headless shell when it is installed, else full Chromium:
the same engine, without the window interface full Chromium builds for every tab (a participant's laptop pays for
that, not the server; here it would share the server's cores). The table names the browser used.

Writes bench/results/room_browser.json and .md (room_browser_quick with --quick: 4 participants).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import APP_IDLE_JS as IDLE, APP_RUNS_JS as RUNS, stop, write_results
from .lab_start import BROWSERS, CHROMIUM_ARGS, _free_port, _wait_for_chromium, _wait_http, default_browser

ROOT = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1024, "height": 768}
QUIET_MS = 400
BARE_APP = """import plotly.express as px
import streamlit as st

st.title("Bare Streamlit page")
st.metric("metric", 1)
st.sidebar.slider("threshold", 0.0, 1.0, 0.3)
st.plotly_chart(px.line(x=[1, 2, 3], y=[1, 3, 2]))
"""
"""The floor: a page with one of each kind of element the room's usable page waits for (metrics, a chart, a slider)."""
MOVE_START_S = 30.0
"""How long a slider key press may take to start its rerun before it counts as lost (listed under ``errors``): a
started rerun takes 2 to 3 s here even under the room's load, and a lost press used to hold the bench for the whole
``--timeout``."""


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _usable(page, timeout_ms: float) -> None:
    """Wait for the recall page with its results: metrics and chart drawn, then the app idle."""
    await page.wait_for_selector("[data-testid='stMetric']", timeout=timeout_ms)
    await page.wait_for_selector(".stPlotlyChart .main-svg", state="visible", timeout=timeout_ms)
    await page.evaluate("() => { window.__labIdleSince = undefined; }")
    await page.wait_for_function(IDLE, arg=QUIET_MS, polling=100, timeout=timeout_ms)


async def _participant(browser, base: str, start_at: float, timeout_s: float) -> dict:
    """One participant: open ``/`` at ``start_at`` (perf_counter), wait for a usable page, move the threshold."""
    context = await browser.new_context(viewport=VIEWPORT)
    await context.add_init_script(RUNS)
    page = await context.new_page()
    out: dict = {"usable_s": None, "slider_s": None, "error": ""}
    await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
    began = time.perf_counter()
    try:
        await page.goto(f"{base}/", timeout=timeout_s * 1000)
        await _usable(page, timeout_s * 1000)
        out["usable_s"] = time.perf_counter() - began - QUIET_MS / 1000
        out["exceptions"] = await page.locator("[data-testid='stException']").count()
        slider = page.locator("[data-testid='stSidebar'] [data-testid='stSlider']").first.get_by_role("slider")
        before = await page.evaluate("() => window.__labRuns")
        moved = time.perf_counter()
        await slider.focus()
        await slider.press("ArrowRight")
        await page.wait_for_function("n => window.__labRuns > n", arg=before, polling=50,
                                     timeout=min(timeout_s, MOVE_START_S) * 1000)
        await page.evaluate("() => { window.__labIdleSince = undefined; }")
        await page.wait_for_function(IDLE, arg=QUIET_MS, polling=100, timeout=timeout_s * 1000)
        out["slider_s"] = time.perf_counter() - moved - QUIET_MS / 1000
    except Exception as exc:  # noqa: BLE001 - a participant not served is a result, not a crash of the bench
        out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
    out["_context"] = context
    return out


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _room(base: str, pid: int, participants: int, timeout_s: float, http_at: float, executable: str) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        instructor = await browser.new_context(viewport=VIEWPORT)
        page = await instructor.new_page()
        requested = time.perf_counter()
        await page.goto(f"{base}/", timeout=timeout_s * 1000)
        await _usable(page, timeout_s * 1000)
        first = time.perf_counter() - QUIET_MS / 1000
        rss_before, cpu_before = _proc_rss_mb(pid), _proc_cpu(pid)
        start_at = time.perf_counter() + 2.0  # every context is made before anyone requests the page
        results = await asyncio.gather(*(_participant(browser, base, start_at, timeout_s)
                                         for _ in range(participants)))
        cpu_after, rss_after = _proc_cpu(pid), _proc_rss_mb(pid)
        for r in results:
            await r.pop("_context").close()
        await instructor.close()
        await browser.close()
    usable = [r["usable_s"] for r in results if r["usable_s"] is not None]
    sliders = [r["slider_s"] for r in results if r["slider_s"] is not None]
    served = len(usable)
    return {
        "participants": participants,
        "first_page_s": first - http_at, "first_from_request_s": first - requested,
        "served": served, "errors": [r["error"] for r in results if r["error"]],
        "exceptions_shown": sum(r.get("exceptions", 0) for r in results),
        "usable_p50_s": _pct(usable, 0.5), "usable_p95_s": _pct(usable, 0.95), "usable_max_s": max(usable, default=None),
        "slider_p50_s": _pct(sliders, 0.5), "slider_p95_s": _pct(sliders, 0.95),
        "server_cpu_s": cpu_after - cpu_before, "cpu_per_arrival_s": (cpu_after - cpu_before) / participants,
        "rss_before_mb": rss_before, "rss_after_mb": rss_after,
        "rss_growth_per_lab_mb": (rss_after - rss_before) / participants,
        "usable_s": usable, "slider_s": sliders,
    }


def measure(participants: int, timeout_s: float, app: str = "serve.py", browser: str = "chromium") -> dict:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, MEMORY_DATA_DIR=data)
        env.pop("MEMORY_CHROMA_HOST", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", app, "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_http(f"{base}/_stcore/health", proc, time.monotonic() + 120)
            http_at = time.perf_counter()
            return asyncio.run(_room(base, proc.pid, participants, timeout_s, http_at, BROWSERS[browser]))
        finally:
            stop(proc)


def measure_bare(participants: int, timeout_s: float, browser: str = "chromium") -> dict:
    """The same room against :data:`BARE_APP`."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "bare_app.py"
        script.write_text(BARE_APP, encoding="utf-8")
        return measure(participants, timeout_s, app=str(script), browser=browser)


def table(r: dict) -> str:
    f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
    bare = r.get("bare") or {}
    ratio = lambda a, b: "-" if not a or not b else f"{a / b:.2f}x"  # noqa: E731
    rows = [
        f"| {r['participants']} participants at once, one 2-core server, browsers ({r.get('browser', 'chromium')}) on "
        "the same machine | value |",
        "|---|---:|",
        f"| instructor's first usable page after the server answered (s) | {f(r['first_page_s'])} |",
        f"| served (usable page within the timeout) | {r['served']}/{r['participants']} |",
        f"| time to a usable page, p50 / p95 / max (s) | {f(r['usable_p50_s'])} / {f(r['usable_p95_s'])} / "
        f"{f(r['usable_max_s'])} |",
        f"| slider move to its rerun done, p50 / p95 (s); moves measured | {f(r['slider_p50_s'])} / "
        f"{f(r['slider_p95_s'])}; {len(r['slider_s'])}/{r['served']} |",
        f"| server CPU per arrival: its first page and one slider move (s) | {f(r['cpu_per_arrival_s'], 2)} |",
        f"| server RSS before -> after (MB); growth per lab | {f(r['rss_before_mb'], 0)} -> {f(r['rss_after_mb'], 0)}; "
        f"{f(r['rss_growth_per_lab_mb'])} |",
        f"| exceptions shown | {r['exceptions_shown']} |",
    ]
    if bare:
        rows += [
            f"| the same room on a bare Streamlit page: usable p50 / p95 (s) | {f(bare['usable_p50_s'])} / "
            f"{f(bare['usable_p95_s'])} |",
            f"| lab / bare page, p95 | {ratio(r['usable_p95_s'], bare['usable_p95_s'])} |",
            f"| bare page: server CPU per arrival (s); slider moves measured | {f(bare['cpu_per_arrival_s'], 2)}; "
            f"{bare['served'] - len(bare['errors'])}/{bare['served']} |",
        ]
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.room_browser", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="4 participants")
    p.add_argument("--participants", type=int, default=None, help="participants arriving at once (default 30)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a participant waits before giving up")
    p.add_argument("--no-bare", action="store_true", help="skip the bare Streamlit page's room")
    p.add_argument("--name", default=None, help="results file name (default room_browser, or room_browser_quick)")
    p.add_argument("--browser", choices=sorted(BROWSERS), default=None,
                   help="the participants' browser: Chromium's headless shell (default when installed) or full chromium")
    a = p.parse_args(argv)
    browser = a.browser or default_browser()
    _wait_for_chromium(BROWSERS[browser])
    n = a.participants or (4 if a.quick else 30)
    result = measure(n, a.timeout, browser=browser)
    result["browser"] = browser
    if not a.no_bare:
        result["bare"] = {k: v for k, v in measure_bare(n, a.timeout, browser=browser).items()
                          if not k.endswith("_s") or "_p" in k or k in ("first_page_s", "cpu_per_arrival_s")}
    result["command"] = "python -m bench.room_browser" + (" --quick" if a.quick else "") + \
        (f" --participants {a.participants}" if a.participants else "") + f" --browser {browser}"
    text = table(result)
    print(text)
    write_results(a.name or ("room_browser_quick" if a.quick else "room_browser"), result, text)
    return 0 if result["served"] == n and not result["exceptions_shown"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
