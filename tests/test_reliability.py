"""The reliability report: passes on the real engine, and really detects a leak when a guard is removed."""

import pytest

import memory.store as store_module
from memory.reliability import check_erasure, check_isolation, run_report


def test_report_at_default_scale_passes_with_counts(lexical):
    report = run_report(lexical, scale=1)
    assert report.ok, report.text()
    by_name = {c.name: c for c in report.checks}
    assert set(by_name) == {"isolation", "erasure", "hostile_input", "crash_safety"}
    assert all(c.cases > 0 for c in report.checks)
    assert by_name["erasure"].figures["canary_bytes_before"] > 0  # the scan can see canaries
    assert by_name["erasure"].figures["canary_bytes_left"] == 0
    assert by_name["crash_safety"].figures["killed"] >= 1 and by_name["crash_safety"].figures["records_lost"] == 0


def test_isolation_check_catches_a_filter_without_the_user(lexical, tmp_path, monkeypatch):
    original = store_module.scope_where

    def leaky(tenant_id, user_id, *, scope, now=None):  # the bug: user_id dropped from the where
        where = original(tenant_id, user_id, scope=scope, now=now)
        where["$and"] = [c for c in where["$and"] if "user_id" not in c]
        return where

    monkeypatch.setattr(store_module, "scope_where", leaky)
    check = check_isolation(lexical, 1, tmp_path / "d")
    assert check.failures > 0


def test_erasure_check_catches_text_left_on_disk(lexical, tmp_path, monkeypatch):
    from memory.textstore import TextStore

    monkeypatch.setattr(TextStore, "compact", lambda self: None)
    original = TextStore.__init__

    def insecure(self, path=None):  # the bug: deleted rows keep their bytes in free pages
        original(self, path)
        self._db.execute("PRAGMA secure_delete = OFF")

    monkeypatch.setattr(TextStore, "__init__", insecure)
    check = check_erasure(lexical, 1, tmp_path / "d")
    assert check.figures["canary_bytes_left"] > 0 and check.failures > 0
