"""A hundred sessions opened fast against the live lab: every one served, memory bounded by the room's cap.

`python -m bench.room_burst [--quick] [--sessions N] [--cap C] [--at-once K]` starts ``streamlit run serve.py``
headless on a free loopback port with a fresh data folder and ``MEMORY_LAB_MAX_LABS=C`` (default 40, so that 100
sessions pass the cap), then opens N sessions in quick succession from one Chromium: each a new browser context (its
own cookies, so its own lab), at most K loading at once, each waiting for a usable recall page (metrics and chart
drawn, the app idle: the browser tests' rule) and then closing its tab, as a participant who looks and leaves does.
Past the cap the room releases the least recently used idle lab for each newcomer (lab/rooms.py); to check that the
released are told so, the first session's browser comes back at the end (its cookie kept) and must see the
"cleared" notice once, on a usable page.

Measured on the server process (``/proc/<pid>``), sampled every 0.5 s: resident memory and open file descriptors, at
the start, at their peak and at the end; the labs on disk at the end (one folder each under the data folder). A
session that has no usable page within ``--timeout`` seconds, or that shows an exception, is not served.

Writes bench/results/room_burst.json and .md (room_burst_quick with --quick: 8 sessions, cap 4, 4 loading at once).
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

from .common import APP_RUNS_JS as RUNS, stop, write_results
from .lab_start import CHROMIUM, CHROMIUM_ARGS, _free_port, _wait_for_chromium, _wait_http
from .room_browser import VIEWPORT, _pct, _proc_rss_mb, _usable

ROOT = Path(__file__).resolve().parent.parent
RELEASED_NOTICE = "The server holds a limited number of labs and yours was the least recently used"
"""The start of lab/locales/en.json's engine.lab_released_full."""


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def _session(browser, base: str, gate: asyncio.Semaphore, timeout_s: float, keep: bool) -> dict:
    """One participant: open ``/``, wait for a usable page, leave (the context closes; its cookie is kept if asked)."""
    async with gate:
        context = await browser.new_context(viewport=VIEWPORT)
        await context.add_init_script(RUNS)
        page = await context.new_page()
        out: dict = {"usable_s": None, "error": "", "exceptions": 0, "state": None}
        began = time.perf_counter()
        try:
            await page.goto(f"{base}/", timeout=timeout_s * 1000)
            await _usable(page, timeout_s * 1000)
            out["usable_s"] = time.perf_counter() - began
            out["exceptions"] = await page.locator("[data-testid='stException']").count()
            if keep:
                out["state"] = await context.storage_state()
        except Exception as exc:  # noqa: BLE001 - a session not served is a result, not a crash of the bench
            out["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        finally:
            await context.close()
        return out


async def _sample(pid: int, samples: list[tuple[float, int]], done: asyncio.Event) -> None:
    while not done.is_set():
        samples.append((_proc_rss_mb(pid), _open_fds(pid)))
        await asyncio.sleep(0.5)


async def _burst(base: str, pid: int, sessions: int, at_once: int, timeout_s: float) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        start = (_proc_rss_mb(pid), _open_fds(pid))
        samples: list[tuple[float, int]] = [start]
        done = asyncio.Event()
        sampler = asyncio.create_task(_sample(pid, samples, done))
        gate = asyncio.Semaphore(at_once)
        began = time.perf_counter()
        results = await asyncio.gather(*(_session(browser, base, gate, timeout_s, keep=i == 0)
                                         for i in range(sessions)))
        burst_s = time.perf_counter() - began
        back = {"served": False, "told": False}
        if results[0]["state"]:  # the first participant comes back: its lab was released past the cap
            context = await browser.new_context(viewport=VIEWPORT, storage_state=results[0]["state"])
            await context.add_init_script(RUNS)
            page = await context.new_page()
            try:
                await page.goto(f"{base}/", timeout=timeout_s * 1000)
                await _usable(page, timeout_s * 1000)
                back["served"] = True
                back["told"] = await page.get_by_text(RELEASED_NOTICE).count() == 1
            except Exception as exc:  # noqa: BLE001
                back["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
            await context.close()
        done.set()
        await sampler
        end = (_proc_rss_mb(pid), _open_fds(pid))
        await browser.close()
    usable = [r["usable_s"] for r in results if r["usable_s"] is not None and not r["exceptions"]]
    return {
        "sessions": sessions, "at_once": at_once, "burst_s": burst_s,
        "served": len(usable), "errors": [r["error"] for r in results if r["error"]],
        "exceptions_shown": sum(r["exceptions"] for r in results),
        "usable_p50_s": _pct(usable, 0.5), "usable_p95_s": _pct(usable, 0.95), "usable_max_s": max(usable, default=None),
        "rss_start_mb": start[0], "rss_peak_mb": max(s[0] for s in samples), "rss_end_mb": end[0],
        "fds_start": start[1], "fds_peak": max(s[1] for s in samples), "fds_end": end[1],
        "first_back_served": back["served"], "first_back_told_released": back["told"],
    }


def measure(sessions: int, cap: int, at_once: int, timeout_s: float) -> dict:
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, MEMORY_DATA_DIR=data, MEMORY_LAB_MAX_LABS=str(cap))
        env.pop("MEMORY_CHROMA_HOST", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "serve.py", "--server.headless", "true", "--server.port",
             str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_http(f"{base}/_stcore/health", proc, time.monotonic() + 120)
            result = asyncio.run(_burst(base, proc.pid, sessions, at_once, timeout_s))
            result["server_alive"] = proc.poll() is None
            labs = Path(data) / "lab"  # one folder per lab (lab.engine.lab_location)
            result["labs_on_disk"] = sum(1 for p in labs.iterdir() if p.is_dir()) if labs.exists() else 0
        finally:
            stop(proc)
    result["cap"] = cap
    return result


def table(r: dict) -> str:
    f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"  # noqa: E731
    rows = [
        ("sessions opened (at most loading at once)", f"{r['sessions']} ({r['at_once']})"),
        ("room cap (MEMORY_LAB_MAX_LABS)", str(r["cap"])),
        ("served: a usable page, no exception", f"{r['served']}/{r['sessions']}"),
        ("usable page p50 / p95 / max", f"{f(r['usable_p50_s'])} s / {f(r['usable_p95_s'])} s / {f(r['usable_max_s'])} s"),
        ("the whole burst", f"{f(r['burst_s'])} s"),
        ("server RSS start / peak / end", f"{f(r['rss_start_mb'], 0)} / {f(r['rss_peak_mb'], 0)} / {f(r['rss_end_mb'], 0)} MB"),
        ("server open files start / peak / end", f"{r['fds_start']} / {r['fds_peak']} / {r['fds_end']}"),
        ("labs on disk at the end", str(r["labs_on_disk"])),
        ("the first session back: served, told its lab was cleared",
         f"{r['first_back_served']}, {r['first_back_told_released']}"),
        ("server still running", str(r["server_alive"])),
    ]
    lines = ["| | |", "| --- | --- |", *(f"| {k} | {v} |" for k, v in rows)]
    if r["errors"]:
        lines += ["", "Not served: " + "; ".join(sorted(set(r["errors"])))[:600]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.room_burst", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="8 sessions, cap 4, 4 loading at once")
    p.add_argument("--sessions", type=int, default=None, help="sessions opened (default 100)")
    p.add_argument("--cap", type=int, default=None, help="MEMORY_LAB_MAX_LABS for the server (default 40)")
    p.add_argument("--at-once", type=int, default=None, help="sessions loading at the same time (default 6)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a session waits before giving up")
    a = p.parse_args(argv)
    _wait_for_chromium()
    sessions = a.sessions or (8 if a.quick else 100)
    cap = a.cap or (4 if a.quick else 40)
    at_once = a.at_once or (4 if a.quick else 6)
    result = measure(sessions, cap, at_once, a.timeout)
    result["command"] = "python -m bench.room_burst" + (" --quick" if a.quick else "") + \
        (f" --sessions {a.sessions}" if a.sessions else "") + (f" --cap {a.cap}" if a.cap else "")
    text = table(result)
    print(text)
    write_results("room_burst_quick" if a.quick else "room_burst", result, text)
    ok = (result["served"] == sessions and not result["exceptions_shown"] and result["server_alive"]
          and result["labs_on_disk"] <= cap and result["first_back_told_released"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
