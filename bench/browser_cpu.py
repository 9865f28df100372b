"""Chromium's own CPU for what the browser tests do, full Chromium against its headless shell, side by side.

`python -m bench.browser_cpu [--quick]` starts ``streamlit run app.py`` headless on a free loopback port (a fresh
data folder), then for each browser (Debian's ``/usr/bin/chromium`` and ``/usr/bin/chromium-headless-shell``, the
same flags as tests/test_browser.py) measures the CPU seconds of the browser's processes (every Chromium process on
the machine, user + system, with the children they have reaped, read from /proc):

* ``new_tab_s``: one new tab opened on a small inline page and closed, per tab (5 tabs; full Chromium builds a
  window's interface, a WebUI renderer for the address bar's popup, for every tab);
* ``first_load_s``: the lab's first page opened in a new browser context until the app is idle (the browser tests'
  idle rule, bench.common.APP_IDLE_JS);
* ``warm_load_s``: the same page opened again in a new tab of that context, per load (3 loads; --quick 1).

The lab server is the same for both browsers and its CPU is not counted. Writes bench/results/browser_cpu.json and
.md (browser_cpu_quick with --quick).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import APP_IDLE_JS as IDLE, stop, write_results
from .lab_start import BROWSER_ARGS as ARGS, BROWSERS, _free_port, _wait_http

ROOT = Path(__file__).resolve().parent.parent
VIEWPORT = {"width": 1024, "height": 768}
HZ = os.sysconf("SC_CLK_TCK")


def chromium_cpu_s() -> float:
    """CPU seconds of every Chromium process on the machine, with the children each has reaped (a closed tab's
    renderer lands in its parent's figure once it exits)."""
    total = 0.0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            exe = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if b"chromium" not in Path(os.fsdecode(exe)).name.encode():
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        total += sum(int(x) for x in fields[11:15]) / HZ  # utime, stime, cutime, cstime
    return total


def _idle(page) -> None:
    page.wait_for_selector("[data-testid='stMainBlockContainer'] h1", timeout=180_000)
    page.evaluate("() => { window.__labIdleSince = undefined; }")
    page.wait_for_function(IDLE, arg=250, polling=50, timeout=180_000)


def one_browser(executable: str, base: str, warm_loads: int) -> dict:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=ARGS)
        context = browser.new_context(viewport=VIEWPORT)
        before = chromium_cpu_s()
        for _ in range(5):
            tab = context.new_page()
            tab.goto("data:text/html,<h1>tab</h1>")
            tab.close()
        new_tab = (chromium_cpu_s() - before) / 5
        lab = browser.new_context(viewport=VIEWPORT)
        before = chromium_cpu_s()
        tab = lab.new_page()
        tab.goto(f"{base}/?embedder=lexical", timeout=180_000)
        _idle(tab)
        first = chromium_cpu_s() - before
        tab.close()
        before = chromium_cpu_s()
        for _ in range(warm_loads):
            tab = lab.new_page()
            tab.goto(f"{base}/?embedder=lexical", timeout=180_000)
            _idle(tab)
            tab.close()
        warm = (chromium_cpu_s() - before) / warm_loads
        browser.close()
    return {"new_tab_s": round(new_tab, 2), "first_load_s": round(first, 2), "warm_load_s": round(warm, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.browser_cpu", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="one warm load per browser")
    a = p.parse_args(argv)
    missing = [path for path in BROWSERS.values() if not Path(path).exists()]
    if missing:
        raise SystemExit(f"{missing[0]} not found: apt-get install -y chromium chromium-headless-shell")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    rows = {}
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, MEMORY_DATA_DIR=data)
        env.pop("MEMORY_CHROMA_HOST", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_http(f"{base}/_stcore/health", proc, time.monotonic() + 120)
            for name in ("chromium", "shell"):
                print(f"{name} ...", flush=True)
                rows[name] = one_browser(BROWSERS[name], base, 1 if a.quick else 3)
        finally:
            stop(proc)
    full, shell = rows["chromium"], rows["shell"]
    lines = ["| Chromium's CPU seconds (the lab server not counted) | full chromium | headless shell | shell / full |",
             "|---|---:|---:|---:|"]
    for key, label in (("new_tab_s", "a new tab, per tab"), ("first_load_s", "the lab's first page in a new context"),
                       ("warm_load_s", "the lab's page again in that context, per load")):
        ratio = f"{shell[key] / full[key]:.2f}x" if full[key] else "-"
        lines.append(f"| {label} | {full[key]} | {shell[key]} | {ratio} |")
    text = "\n".join(lines)
    print(text)
    result = {"command": "python -m bench.browser_cpu" + (" --quick" if a.quick else ""), "viewport": VIEWPORT,
              "browsers": rows}
    write_results("browser_cpu_quick" if a.quick else "browser_cpu", result, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
