"""Two OS processes on one store (issue 28's untried cases): the reliability checks ``shared_erase`` and
``server_clients`` pass on the real engine, and each catches a bug planted in one of its child processes."""

from __future__ import annotations

import sys

import pytest

from memory.reliability.shared import check_server_clients, check_shared_erase

SHARED_ERASE_FAILURES = ("lost", "erased_records_back", "erased_bytes_back", "erased_ids_back", "erased_recalled",
                         "crashes", "hung", "pending_plans", "orphans", "stray_collections")
SERVER_FAILURES = ("lost", "lost_before_erase", "erased_seen_by_second_client", "erased_seen_by_fresh_process",
                   "erased_bytes_back", "crashes", "hung", "pending_plans", "orphans")


@pytest.mark.process
def test_shared_erase_at_scale_1_loses_nothing_and_brings_nothing_back(lexical, tmp_path):
    check = check_shared_erase(lexical, 1, tmp_path / "d")
    f = check.figures
    assert {k: f[k] for k in SHARED_ERASE_FAILURES if f[k]} == {}, f["first_error"]
    assert check.failures == 0
    assert f["rounds"] == 3 and check.cases == f["acknowledged"] - f["overlapping"] > 0
    # the erasure fell between writes of the erased user: some acknowledged before it, some started after it
    assert f["erased_before"] >= 3 * 2 * 2 and f["written_after"] > 0
    # the same byte scan that finds no erased canary finds every canary written after the erasure
    assert f["canaries_seen_after"] == f["written_after"]


@pytest.mark.process
def test_shared_erase_catches_an_erasure_that_leaves_the_chroma_collection(lexical, tmp_path):
    """The bug planted in both processes: an erasure deletes texts but not the user's Chroma collection."""
    check = check_shared_erase(lexical, 1, tmp_path / "d", rounds=1, fault="skip_chroma_delete")
    f = check.figures
    assert f["crashes"] == 0 and f["erased_before"] > 0
    assert f["erased_ids_back"] > 0 and f["erased_bytes_back"] > 0 and f["stray_collections"] == 1
    assert f["erased_records_back"] == 0  # the texts did go: only the vector side is caught
    assert check.failures > 0


@pytest.mark.process
def test_shared_erase_catches_writes_acknowledged_but_not_stored(lexical, tmp_path):
    """The bug planted in the second process: it acknowledges writes whose text rows it never stored."""
    check = check_shared_erase(lexical, 1, tmp_path / "d", rounds=1, fault="lose_texts")
    f = check.figures
    assert f["crashes"] == 0
    assert f["lost"] >= 2 * 6  # at least its own user's and the shared user's writes of the second process
    assert check.failures > 0


@pytest.mark.process
@pytest.mark.server
def test_server_clients_at_scale_1_see_none_of_the_erased_user(lexical, tmp_path):
    check = check_server_clients(lexical, 1, tmp_path / "d")
    f = check.figures
    assert {k: f[k] for k in SERVER_FAILURES if f[k]} == {}, f["first_error"]
    assert check.failures == 0
    assert f["rounds"] == 2 and check.cases == f["acknowledged"] == 2 * 2 * 3 * 6
    assert f["erased_writes"] == 2 * 2 * 6 and f["erase_reports_ok"] == 2
    assert not (tmp_path / "d" / "server").exists()  # the server's folder is removed after it stopped


@pytest.mark.process
@pytest.mark.server
def test_server_clients_catches_an_erasure_that_leaves_the_server_collection(lexical, tmp_path):
    """The bug planted in the first client: its erasure does not delete the user's collection on the server."""
    check = check_server_clients(lexical, 1, tmp_path / "d", rounds=1, fault="skip_chroma_delete")
    f = check.figures
    assert f["crashes"] == 0 and f["lost"] == 0
    # every one of the 12 writes of the erased user: its vector in the collection and its id on the server
    assert f["erased_seen_by_second_client"] == f["erased_seen_by_fresh_process"] == 2 * 2 * 6
    assert check.failures > 0


def test_server_clients_fails_without_the_chroma_command(lexical, tmp_path, monkeypatch):
    """No ``chroma`` beside the interpreter: the check fails and says why, instead of passing with nothing tried."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    check = check_server_clients(lexical, 1, tmp_path / "d")
    assert check.failures == 1 and check.cases == 0
    assert check.figures["first_error"].startswith("no chroma command beside")
    assert check.figures["rounds"] == 0
