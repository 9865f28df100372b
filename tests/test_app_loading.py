"""AppTest: the lab does not block on the model or on a large upload.

* The first page draws (title, sidebar, a "loading the model" status) while the model is still loading.
  This one test uses a STAND-IN loader: it returns the real MiniLM (the ``minilm`` fixture) only once the
  test releases a gate, so "still loading" is a state the test holds, not a race with a real load.
* A large uploaded scenario (>= lab.loading.BACKGROUND_AT messages) loads in a background job with a
  progress bar and ends with every record stored (real MiniLM, real Chroma on disk).
* Cancel stops the job between two batches; the lab keeps what was written, says so, and loads the rest
  on request.

The job is paused deterministically through lab.loading.SLOT (every batch of a background job enters it): the
test holds it, or swaps in a turnstile that stops the job before its second batch.
No wall-clock assertions: waits have generous deadlines and fail with a message, never a speed claim.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from memory import Owner
from memory.eval.synth import SynthSpec, generate_scenario

from lab import loading, models
from lab.loading import SLOT
from lab.state import JOB_KEY
from test_app import APP, TIMEOUT, lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse fixture

pytestmark = pytest.mark.app

WAIT_S = 600.0
"""Deadline for a background job (a failure message, not a speed claim)."""


def _upload_bytes(messages: int) -> bytes:
    return json.dumps(generate_scenario(SynthSpec(users=30, messages=messages, seed=1))).encode("utf-8")


def _stored(job: loading.IngestJob) -> int:
    store = job.manager.store
    return sum(store.count(Owner(tenant, user)) for tenant, user in store.owners())


def _wait_until(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what} after {WAIT_S:.0f} s"
        time.sleep(0.05)


@pytest.fixture
def gated_model(minilm, monkeypatch):
    """STAND-IN loader (this test only): 'loads' MiniLM by waiting for the test to open the gate."""
    gate = threading.Event()

    def slow_loader(name: str):
        assert name == "minilm", name
        gate.wait(WAIT_S)
        return minilm

    models.forget()
    monkeypatch.setattr(models, "loader", slow_loader)
    yield gate
    gate.set()
    models.forget()  # the next test's load goes through the real loader again (already in memory: instant)


def test_first_page_draws_while_the_model_is_still_loading(gated_model):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title and at.title[0].value == "Blind top-k vs governed recall", "the page draws its title at once"
    assert len(at.sidebar.slider) >= 4, "and the shared sidebar"
    assert [s.label for s in at.status] == ["Loading the MiniLM model (once per server process)…"]
    assert at.status[0].state == "running"
    assert not at.metric, "nothing that needs the model is drawn yet"
    assert not models.ready("minilm")

    gated_model.set()
    models.get("minilm", timeout=WAIT_S)
    at.run()  # what the status's poll does once the model is ready
    assert not at.exception, [e.value for e in at.exception]
    assert not at.status, "the status is gone"
    assert int(metric(at, "Blind top-k")) == 5, "the page now shows the model's results"


def test_large_upload_loads_in_the_background_and_stores_every_record():
    at = open_app(write_path="raw")  # MiniLM, the shipped scenario (small: loads in the page's run); as-is records
    assert JOB_KEY not in at.session_state
    data = _upload_bytes(300)
    total = len(json.loads(data)["messages"])
    assert total >= loading.BACKGROUND_AT
    with SLOT:  # the job cannot write a batch yet: the page must not wait for it
        at.sidebar.file_uploader[0].set_value(("big.json", data, "application/json")).run()
        assert not at.exception, [e.value for e in at.exception]
        job = at.session_state[JOB_KEY]
        assert not job.finished and job.done == 0
        assert "in the background: 0/%d messages" % total in at.progress[0].proto.text
        assert at.button(key="engine.cancel").label == "Cancel loading"
        assert not at.metric, "the page waits for the load"
    job.join(WAIT_S)
    assert job.state == "done" and job.done == total, (job.state, job.error)
    assert _stored(job) == total, "raw write path: one record per message"
    at.run()  # the progress poll's rerun
    assert not at.exception, [e.value for e in at.exception]
    assert not [p for p in at.progress if "in the background" in p.proto.text] and not at.warning
    assert at.session_state["lab.settings"].scenario.name.startswith("synth")
    assert at.selectbox(key="user").value.startswith("tenant-"), "the uploaded scenario's users are in the lab"
    assert int(metric(at, "Blind top-k")) == 5


class _Turnstile:
    """Stands in for lab.loading.SLOT: lets the first batch through, then holds the job before its second
    batch until the test opens it (a real SLOT is not fair: a test cannot reliably win it between batches)."""

    def __init__(self) -> None:
        self.entries = 0
        self.reached = threading.Event()
        self.go = threading.Event()

    def __enter__(self) -> None:
        self.entries += 1
        if self.entries == 2:
            self.reached.set()
            assert self.go.wait(WAIT_S), "the test never opened the turnstile"

    def __exit__(self, *exc) -> None:
        return None


def test_cancel_stops_the_load_between_batches_and_the_rest_loads_on_request(monkeypatch):
    batch = 256  # batches smaller than LOAD_BATCH, so an upload under the cap has three
    monkeypatch.setattr(loading, "LOAD_BATCH", batch)
    at = open_app(write_path="raw")  # one record per message: the stored count is the batches written
    data = _upload_bytes(650)
    total = len(json.loads(data)["messages"])
    assert total > 2 * batch, "at least three batches"
    turnstile = _Turnstile()
    monkeypatch.setattr(loading, "SLOT", turnstile)
    at.sidebar.file_uploader[0].set_value(("big.json", data, "application/json")).run()
    job = at.session_state[JOB_KEY]
    assert turnstile.reached.wait(WAIT_S), "the job did not reach its second batch"
    assert job.done == batch and not job.finished
    at.button(key="engine.cancel").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert job.cancelling
    assert at.button(key="engine.cancel").disabled, "cancel was taken"
    turnstile.go.set()
    job.join(WAIT_S)
    assert job.state == "cancelled", (job.state, job.error)
    assert job.done == batch, "stopped before the second batch"
    assert _stored(job) == job.done, "the batches before the cancel stay written, nothing after"

    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"this lab holds its first {job.done} of {total} messages" in texts(at.warning)
    assert int(metric(at, "Blind top-k")) >= 1, "the lab works on what was loaded"

    at.button(key="engine.resume").click().run()
    rest = at.session_state[JOB_KEY]
    assert rest is not job
    rest.join(WAIT_S)
    assert rest.state == "done" and rest.done == total, (rest.state, rest.error)
    assert _stored(rest) == total
    at.run()
    assert not at.exception and not at.warning
