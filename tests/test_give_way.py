"""Background loads give way to page runs (lab.loading.FOREGROUND): bounded waits, identical vectors, and a real
background job that waits while a page runs. The lexical embedder stands in for MiniLM where a test is about the
waiting, not the model (bench/room_load.py measures the effect with MiniLM)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from lab import loading
from lab.loading import EMBED_CHUNK, Foreground, GivingWayEmbedder, giving_way
from memory import LexicalEmbedder, MemoryConfig, MemoryManager, Message, Owner, StoreLocation


def in_job_thread(fn):
    """Run ``fn`` in a thread flagged as a background job's; its result."""
    out = {}

    def run():
        loading._job_thread.on = True
        out["value"] = fn()

    t = threading.Thread(target=run)
    t.start()
    t.join(10)
    assert not t.is_alive()
    return out["value"]


def test_a_give_way_point_waits_for_a_page_run_at_most_as_long_as_the_job_worked():
    fg = Foreground()
    assert fg.give_way() == 0.0  # nothing running

    def job():
        fg.give_way()  # starts the job's work clock
        time.sleep(0.2)  # 0.2 s of work
        with_run = threading.Thread(target=hold, args=(fg, 1.0))
        with_run.start()
        time.sleep(0.05)
        waited = fg.give_way()  # a page run of 1 s: the job waits about its 0.25 s of work, not the whole run
        with_run.join()
        return waited

    waited = in_job_thread(job)
    assert 0.15 < waited < 0.6, waited


def hold(fg: Foreground, seconds: float) -> None:
    with fg.running():
        time.sleep(seconds)


def test_the_wait_ends_when_the_page_run_ends():
    fg = Foreground()

    def job():
        fg.give_way()
        time.sleep(1.0)  # worked long enough that the bound is not what ends the wait
        page = threading.Thread(target=hold, args=(fg, 0.3))
        page.start()
        time.sleep(0.05)
        started = time.monotonic()
        fg.give_way()
        page.join()
        return time.monotonic() - started

    waited = in_job_thread(job)
    assert 0.15 < waited < 0.9, waited
    assert fg.active == 0


def test_a_page_threads_own_calls_never_wait():
    with loading.FOREGROUND.running():
        started = time.monotonic()
        loading.give_way()  # not a job's thread
        assert time.monotonic() - started < 0.05


def test_the_giving_way_embedder_gives_the_wrapped_embedders_vectors_batch_by_model_batch():
    """In a job's thread the texts go to the model in its own batches (its ``batch_size``, else EMBED_CHUNK) of
    similar length, longest first, each distinct text once; the rows come back in the input's order."""
    texts = [f"memory number {i} about budgets" + " and deadlines" * (i % 7) for i in range(3 * EMBED_CHUNK + 5)]
    texts += texts[:10]  # repeated texts are embedded once
    inner = LexicalEmbedder()
    calls: list[list[str]] = []

    class Counting:
        name, dim = inner.name, inner.dim

        def embed(self, batch):
            calls.append(list(batch))
            return inner.embed(batch)

    wrapped = GivingWayEmbedder(Counting())
    assert (wrapped.name, wrapped.dim) == (inner.name, inner.dim)
    in_job = in_job_thread(lambda: wrapped.embed(texts))
    assert [len(c) for c in calls] == [EMBED_CHUNK] * 3 + [5]
    assert sorted(t for c in calls for t in c) == sorted(set(texts))
    assert all(min(map(len, a)) >= max(map(len, b)) for a, b in zip(calls, calls[1:])), "not length-sorted"
    assert np.array_equal(in_job, inner.embed(texts))
    calls.clear()
    assert np.array_equal(wrapped.embed(texts), inner.embed(texts)) and [len(c) for c in calls] == [len(texts)]

    Counting.batch_size = 50  # a model that names its batch size is called with it
    calls.clear()
    assert np.array_equal(in_job_thread(lambda: wrapped.embed(texts)), inner.embed(texts))
    assert [len(c) for c in calls] == [50] * 3 + [3 * EMBED_CHUNK + 5 - 150]


@pytest.mark.process
def test_a_real_background_job_waits_while_a_page_runs(tmp_path, monkeypatch):
    fg = Foreground()
    monkeypatch.setattr(loading, "FOREGROUND", fg)
    waits = []
    real = fg.give_way
    monkeypatch.setattr(fg, "give_way", lambda: waits.append(real()) or waits[-1])
    manager = MemoryManager(MemoryConfig(), embedder=GivingWayEmbedder(LexicalEmbedder()),
                            location=StoreLocation(data_dir=tmp_path), workspace="give-way")
    messages = [Message(tenant_id="t", user_id=f"u{i % 3}", content=f"note {i}: the budget is {i} yuan", id=f"m{i}")
                for i in range(300)]
    with fg.running():  # a page runs for the whole job's start
        job = loading.start_job(manager, None, messages)
        time.sleep(1.0)
    job.join(60)
    assert job.state == "done" and job.done == 300
    assert manager.store.count(Owner("t", "u0")) == 100  # nothing lost by waiting
    assert sum(w > 0 for w in waits) >= 1, waits  # it did wait for the page


def test_an_ingestor_extractor_gives_way_before_each_message(monkeypatch):
    seen = []
    monkeypatch.setattr(loading, "give_way", lambda: seen.append("wait"))
    extract = giving_way(lambda text, **kw: seen.append(text) or [])
    extract("a", max_chars=10)
    extract("b", max_chars=10)
    assert seen == ["wait", "a", "wait", "b"]


def test_a_room_arriving_at_once_builds_each_starting_state_once():
    """lab.loading.Bases: 12 arrivals at once ask for one starting state; one builds it, the others wait for that build
    and get the same object. (The build is a stand-in object: this test is about how many builds run, not what a
    build holds; tests/test_snapshot.py and test_app.py check the real one.)"""
    bases = loading.Bases()
    started = threading.Barrier(12)
    calls: list[int] = []
    made = object()

    def build():
        calls.append(1)
        time.sleep(0.2)  # long enough that every other arrival asks while this build runs
        return made

    got: list[object] = []

    def arrive():
        started.wait()
        got.append(bases.get(("workshop_en", "minilm", "facts"), build))

    threads = [threading.Thread(target=arrive) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and bases.builds == 1
    assert len(got) == 12 and all(g is made for g in got)
    assert bases.built(("workshop_en", "minilm", "facts")) is made and bases.built(("workshop_en", "e5", "facts")) is None


def test_a_failed_starting_state_is_not_kept():
    bases = loading.Bases()

    def fail():
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        bases.get("k", fail)
    assert bases.built("k") is None and bases.get("k", lambda: "ok") == "ok" and bases.builds == 1


@pytest.mark.process
def test_the_progress_bar_moves_within_one_write_plan(tmp_path, monkeypatch):
    """A load of one plan (fewer messages than LOAD_BATCH) shows progress while its model batches are embedded,
    before anything is written; ``done`` counts only written messages (a resumed load starts there). The lexical
    embedder stands in for MiniLM: this is about the bar, not the model."""
    seen: list[tuple[float, int]] = []
    holder: dict = {}

    class Watching:
        name, dim, batch_size = LexicalEmbedder().name, LexicalEmbedder().dim, 16

        def embed(self, batch):
            job = holder.get("job")
            if job is not None:
                seen.append((job.fraction, job.done))
            return LexicalEmbedder().embed(batch)

    manager = MemoryManager(MemoryConfig(), embedder=GivingWayEmbedder(Watching()),
                            location=StoreLocation(data_dir=tmp_path), workspace="progress")
    messages = [Message(tenant_id="t", user_id=f"u{i % 3}", content=f"note {i}: the budget is {i} yuan", id=f"m{i}")
                for i in range(160)]
    assert len(messages) < loading.LOAD_BATCH
    gate = threading.Event()
    real = loading.give_way

    def waiting() -> None:  # hold the job at its first give-way point until the test has the job in hand
        gate.wait(10)
        real()
    monkeypatch.setattr(loading, "give_way", waiting)
    job = loading.start_job(manager, None, messages)
    holder["job"] = job
    gate.set()
    job.join(60)
    assert job.state == "done" and job.done == 160 and job.fraction == 1.0
    assert len(seen) == 10, "ten model batches of 16"
    fractions = [f for f, _ in seen]
    assert all(done == 0 for _, done in seen), "nothing counts as written before the plan is written"
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] > 0.5, fractions
    assert manager.store.count(Owner("t", "u0")) == 54
