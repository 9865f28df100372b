"""The lab's first page after a server start: time to a drawn page, and to the page with the model's results.

`python -m bench.lab_start [--quick]` starts `streamlit run app.py` (cold: the model loads and the starting state
is built when the first page asks), then `streamlit run serve.py` (warm, the README's command: both done before the
port opens), each headless on a free loopback port (a fresh data folder), opens `/` in Debian's chromium through
Playwright and times, from the moment the server process was started:

* ``http_200``: the server answers `/` with HTTP 200;
* ``title_from_request``: from the browser's request of `/` until the page's title is drawn (what a
  participant whose browser is already open waits; Chromium's own launch is reported apart);
* ``first_page``: the app view is drawn (`[data-testid='stAppViewContainer']`, the page's title) and
  the app has stopped running; whether the "loading the model" status was showing then is recorded;
* ``model_page``: the recall page's results are drawn (its metrics and chart), i.e. the model has
  loaded and the scenario is in the lab, and the app has stopped running again; also from the browser's request
  (``model_page_from_request``: what a participant who opens the link once the server is up waits for a usable page).

Side by side, in the same run: loading MiniLM alone in a fresh Python process (imports included), the
floor for ``model_page``. The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .common import stop, write_results

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync"]
"""Chromium's flags wherever Playwright drives it (tests/test_browser.py and the benches)."""
CHROMIUM_ARGS = ["--headless", *BROWSER_ARGS]
HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
"""Debian's headless shell of the same Chromium (apt-get install chromium-headless-shell): no browser window per tab.
The room benches run their participants in it when it is installed (``--browser``): the participants' browsers share
the server's two cores here only because the bench has no laptops, and full Chromium's per-tab interface is part of
a laptop's cost, not the server's."""
BROWSERS = {"shell": HEADLESS_SHELL, "chromium": CHROMIUM}


def default_browser() -> str:
    """``shell`` when Chromium's headless shell is installed, else ``chromium``."""
    return "shell" if Path(HEADLESS_SHELL).exists() else "chromium"


TIMEOUT_S = 300.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_chromium(executable: str = CHROMIUM, timeout: float = 600.0) -> None:
    """`apt-get install chromium` may still be running on a fresh machine: wait for ``executable``."""
    deadline = time.monotonic() + timeout
    while not Path(executable).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{executable} not found after {timeout:.0f} s: apt-get install -y {Path(executable).name}")
        time.sleep(5)


def _wait_http(url: str, proc: subprocess.Popen, deadline: float) -> None:
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"streamlit exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"no HTTP 200 from {url}")
        time.sleep(0.1)


def _wait_idle(page, deadline: float, quiet: float = 1.0) -> float:
    """Wait until Streamlit's running indicator has been gone for ``quiet`` seconds; when it went."""
    widget = page.locator("[data-testid='stStatusWidget']")
    quiet_since = None
    while time.monotonic() < deadline:
        if widget.count() > 0 and widget.first.is_visible():
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.perf_counter()
        elif time.perf_counter() - quiet_since > quiet:
            return quiet_since
        page.wait_for_timeout(50)
    raise SystemExit("the app did not stop running")


def model_load_alone() -> float:
    """Seconds to import the library and load MiniLM in a fresh process."""
    code = "from memory import make_embedder; make_embedder('minilm')"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def measure_start(script: str = "app.py") -> dict[str, float | bool]:
    """Start a server on ``script``, open its first page, time it; stop the server."""
    from playwright.sync_api import sync_playwright

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = dict(os.environ, MEMORY_DATA_DIR=data)
        env.pop("MEMORY_CHROMA_HOST", None)
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + TIMEOUT_S
            _wait_http(f"{base}/", proc, deadline)
            http_200 = time.perf_counter() - start
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1500, "height": 1200})
                requested = time.perf_counter()
                page.goto(f"{base}/", timeout=TIMEOUT_S * 1000)
                page.wait_for_selector("[data-testid='stAppViewContainer']", timeout=TIMEOUT_S * 1000)
                page.wait_for_selector("[data-testid='stMainBlockContainer'] h1", timeout=TIMEOUT_S * 1000)
                drawn = time.perf_counter()
                first_page = _wait_idle(page, deadline) - start
                status_shown = page.get_by_text("Loading the MiniLM model").count() > 0
                page.wait_for_selector("[data-testid='stMetric']", timeout=TIMEOUT_S * 1000)
                page.wait_for_selector(".stPlotlyChart .main-svg", state="visible", timeout=TIMEOUT_S * 1000)
                model_idle = _wait_idle(page, deadline)
                model_page = model_idle - start
                errors = page.locator("[data-testid='stException']").count()
                browser.close()
        finally:
            stop(proc)
    if errors:
        raise SystemExit(f"the first page shows {errors} exception(s)")
    return {"http_200_s": http_200, "first_page_s": first_page, "model_page_s": model_page,
            "browser_launch_s": requested - start - http_200, "title_from_request_s": drawn - requested,
            "model_page_from_request_s": model_idle - requested, "loading_status_shown": status_shown}


SCRIPTS = {"app.py": "`streamlit run app.py` (cold)", "serve.py": "`streamlit run serve.py` (warm: the README's)"}
"""The two ways to start the lab, side by side in one run: app.py loads the model and builds the starting state when
the first page asks; serve.py does both before its port opens (serve.py, lab.engine.warm_starting_states)."""

ROWS = [
    ("http_200_s", "HTTP 200 on / (serve.py: after warming)"),
    ("browser_launch_s", "Chromium's own launch (after the HTTP 200, before the request)"),
    ("title_from_request_s", "first page's title drawn, from the browser's request"),
    ("first_page_s", "first page drawn, app idle"),
    ("model_page_s", "page with the model's results, app idle"),
    ("model_page_from_request_s", "page with the model's results, from the browser's request"),
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.lab_start", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="same as the full run (one server start per script)")
    p.parse_args(argv)
    _wait_for_chromium()
    alone = model_load_alone()
    runs = {script: measure_start(script) for script in SCRIPTS}
    data: dict[str, object] = {"model_load_alone_s": alone, **{
        script: {**run, "first_page_over_model_load": float(run["first_page_s"]) / alone,
                 "model_page_over_model_load": float(run["model_page_s"]) / alone} for script, run in runs.items()}}
    lines = ["| from `streamlit run`, seconds | " + " | ".join(SCRIPTS.values()) + " |",
             "|---|" + "---:|" * len(SCRIPTS)]
    for key, label in ROWS:
        lines.append(f"| {label} | " + " | ".join(f"{float(runs[s][key]):.1f}" for s in SCRIPTS) + " |")
    lines.append("| the model's loading status shown on the first page | "
                 + " | ".join("yes" if runs[s]["loading_status_shown"] else "no" for s in SCRIPTS) + " |")
    lines.append(f"| MiniLM load alone (fresh process, imports included) | {alone:.1f} | {alone:.1f} |")
    table = "\n".join(lines)
    write_results("lab_start", data, table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
