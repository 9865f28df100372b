"""The reliability report: passes on the real engine, and really detects a leak when a guard is removed."""


import pytest

from memory.core.errors import MemoryLabError
from memory.reliability.engine import check_erasure, check_isolation
from memory.reliability.runner import QUICK, STEPS, checks_named, run_report
from memory.reliability.store import check_disk_full

pytestmark = pytest.mark.process

# The sections run here: memory.reliability.runner.QUICK; the others (minutes) run in .ci/run's report
# (``--skip quick``: not twice) and have their own tests (test_faults.py, test_crash_safety.py, test_hostile_cli.py).


def test_report_at_default_scale_passes_with_counts(lexical):
    report = run_report(lexical, scale=1, only=QUICK)
    assert report.ok, report.text()
    by_name = {c.name: c for c in report.checks}
    assert set(by_name) == set(QUICK)
    assert all(c.cases > 0 for c in report.checks)
    assert by_name["erasure"].figures["canary_bytes_before"] > 0  # the scan can see canaries
    assert by_name["erasure"].figures["canary_bytes_left"] == 0
    assert by_name["crash_safety"].figures["killed"] >= 1 and by_name["crash_safety"].figures["records_lost"] == 0
    kills = by_name["async_kills"].figures
    assert kills["killed"] >= 1 and kills["acknowledged"] >= 1 and kills["lost_acknowledged"] == 0


def test_checks_are_named_by_group_or_name_and_an_unknown_one_is_one_line():
    assert checks_named("quick") == QUICK
    assert checks_named(" erase_kills , quick,") == (*QUICK, "erase_kills")  # report order
    assert checks_named("") == ()
    assert set(QUICK) < set(STEPS)
    with pytest.raises(MemoryLabError, match=r"^unknown reliability check 'isolaton' \(use quick or isolation, "):
        checks_named("isolation,isolaton")


def test_isolation_check_catches_a_read_without_the_user(lexical, tmp_path, monkeypatch):
    """The bug injected: the owner key of the record and vector reads loses its user (tenant only)."""
    from memory import Owner
    from memory.store.textstore import TextStore

    def tenant_wide(original, *, pairs: bool):
        def leaky(self, owner, memory_ids=None):
            tenant_id = owner.tenant_id
            users = [r[0] for r in self._rows("SELECT DISTINCT user_id FROM texts WHERE tenant_id = ?", (tenant_id,))]
            parts = [original(self, Owner(tenant_id, u), memory_ids) for u in users]
            if pairs:  # vectors() returns (ids, blobs)
                return [i for p in parts for i in p[0]], [b for p in parts for b in p[1]]
            return [row for p in parts for row in p]
        return leaky

    monkeypatch.setattr(TextStore, "records", tenant_wide(TextStore.records, pairs=False))
    monkeypatch.setattr(TextStore, "vectors", tenant_wide(TextStore.vectors, pairs=True))
    check = check_isolation(lexical, 1, tmp_path / "d")
    assert check.failures > 0


def test_erasure_check_catches_text_left_on_disk(lexical, tmp_path, monkeypatch):
    from memory.store.textstore import TextStore

    original = TextStore.__init__

    def insecure(self, path=None):  # the bug: deleted rows keep their bytes in free pages
        original(self, path)
        self._db.execute("PRAGMA secure_delete = OFF")

    monkeypatch.setattr(TextStore, "__init__", insecure)
    # and the erasure's own repair gone too (a trace its disk scan finds in the text file is rebuilt away)
    monkeypatch.setattr(TextStore, "rebuild", lambda self: None)
    check = check_erasure(lexical, 1, tmp_path / "d")
    assert check.figures["canary_bytes_left"] > 0 and check.failures > 0


def test_disk_full_check_catches_a_write_that_does_not_keep_the_reserve(lexical, tmp_path, monkeypatch):
    """The bug injected: the reserve check before a write is gone, so a write on a full disk goes through."""
    monkeypatch.setattr("memory.runtime.manager.check_space", lambda *_args, **_kwargs: None)
    check = check_disk_full(lexical, 1, tmp_path / "d")
    assert check.figures["refused"] == 2 and check.figures["records_stored"] == 1 and check.failures > 0


def test_erase_kills_check_catches_an_opening_that_does_not_finish_erasures(lexical, tmp_path, monkeypatch):
    """The bug injected: opening the store no longer finishes an interrupted erasure (recover rolls plans forward
    only), so a kill before the text store's deletes, or a full disk there, leaves the user's texts."""
    from memory.runtime.manager import MemoryManager
    from memory.reliability.erase_kills import check_erase_kills

    monkeypatch.setattr(MemoryManager, "complete_erasures", lambda self: [])
    check = check_erase_kills(lexical, 1, tmp_path / "d", hooks=("before_text_delete",), random_kills=0,
                              full_disk=("sqlite_full",))
    assert check.figures["kills"] == 1 and check.figures["full_disk_refusals"] == 1
    assert check.figures["records_left"] > 0 and check.figures["refused_after_opening"] == 2 and check.failures > 0
