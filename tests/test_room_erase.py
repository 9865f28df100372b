"""AppTest: erasure a workshop room can trust (issue 10, item 1).

* An erase asks first, and the confirmation erases exactly the user it names: never a user the picker moved to.
* Afterwards the page says who was erased, with what result, and that the picker moved.
* Nothing of the lab keeps the erased user's texts: not trace.json (the last recall it exports), not the
  session's candidate cache, not the token-count memo.
* Pickers keep ids that contain "/" apart.

Real Chroma in a temporary data folder; the lexical embedder, since these tests are about the UI and the
lab's bookkeeping, not about ranking quality.
"""

from __future__ import annotations

import json

import pytest
from streamlit.runtime.caching import cache_resource_api
from streamlit.runtime.media_file_manager import MediaFileManager

from memory import Candidates, MemoryManager

from lab import models, views
from test_app import erase_confirmed, frame_with, lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse

pytestmark = pytest.mark.app

ALICE = ("acme", "alice")


def owner_counts(at) -> dict[tuple[str, str], int]:
    """(tenant, user) -> records the inspector shows (every user, every scope); the page is left on the inspector."""
    at.switch_page("lab/pages/inspector.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = frame_with(at, "security_level")
    return {owner: int(n) for owner, n in table.groupby(["tenant_id", "user_id"]).size().items()}


def on_erasure_page(at):
    at.switch_page("lab/pages/erasure.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts_of(at, owner: tuple[str, str]) -> list[str]:
    """The owner's record texts that no other user of the lab also holds (bob lives in Hangzhou too), as the
    inspector shows them (the page is left on the inspector)."""
    owner_counts(at)
    table = frame_with(at, "security_level")
    mine = (table["tenant_id"] == owner[0]) & (table["user_id"] == owner[1])
    others = set(table[~mine]["content"])
    return [text for text in table[mine]["content"] if text not in others]


def cached_candidates() -> list[Candidates]:
    """Every Candidates object held by any st.cache_resource cache of any session (what the cache can return)."""
    with cache_resource_api._resource_caches._caches_lock:
        caches = [c for per_session in cache_resource_api._resource_caches._function_caches.values()
                  for c in per_session.values()]
    return [entry.value for cache in caches for entry in list(cache._mem_cache.values())
            if isinstance(entry.value, Candidates)]


def held_texts(candidates: list[Candidates]) -> set[str]:
    return {record.content for c in candidates for record, _ in c.hot + c.active}


@pytest.fixture
def audits(monkeypatch):
    """(tenant, user) of every MemoryManager.audit_user call, in order (the real audit runs)."""
    seen: list[tuple[str, str]] = []
    original = MemoryManager.audit_user

    def audit_user(self, *, tenant_id, user_id, **kw):
        seen.append((tenant_id, user_id))
        return original(self, tenant_id=tenant_id, user_id=user_id, **kw)

    monkeypatch.setattr(MemoryManager, "audit_user", audit_user)
    return seen


@pytest.fixture
def downloads(monkeypatch):
    """file name -> the bytes a page last offered on a download button (what a participant's click receives)."""
    offered: dict[str, bytes] = {}
    original = MediaFileManager.add

    def add(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if file_name and isinstance(path_or_data, bytes):
            offered[file_name] = path_or_data
        return original(self, path_or_data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", add)
    return offered


# --- the confirmation ------------------------------------------------------------------------------

def test_one_click_on_erase_only_asks():
    at = open_app(embedder="lexical")
    counts = owner_counts(at)
    on_erasure_page(at)
    assert at.selectbox(key="user").value == "acme/alice"
    at.button(key="erasure.erase.acme/alice").click().run()
    assert not at.exception
    assert "Erase acme/alice? This cannot be undone" in texts(at.warning)
    assert at.button(key="erasure.confirm.acme/alice").label == "Yes, erase acme/alice"
    assert "Verified" not in texts(at.success)
    assert owner_counts(at) == counts, "one click erased something"


def test_cancel_erases_nothing_and_says_so():
    at = open_app("lab/pages/erasure.py", embedder="lexical")
    at.button(key="erasure.erase.acme/alice").click().run()
    at.button(key="erasure.cancel.acme/alice").click().run()
    assert not at.exception
    assert "Erasure of acme/alice cancelled: nothing was erased." in texts(at.info)
    assert not [b for b in at.button if b.key.startswith("erasure.confirm.")]
    assert "acme/alice" in at.selectbox(key="user").options


def test_confirm_erases_exactly_the_named_user():
    at = open_app(embedder="lexical")
    counts = owner_counts(at)
    assert counts[ALICE] >= 20 and len(counts) >= 4  # alice's facts of the scenario (as many as the judge keeps)
    erase_confirmed(on_erasure_page(at), "acme/alice")
    after = owner_counts(at)
    assert ALICE not in after
    assert after == {owner: n for owner, n in counts.items() if owner != ALICE}, "another user's records changed"


def test_a_confirmation_for_one_user_never_erases_the_user_the_picker_moved_to(audits):
    at = open_app(embedder="lexical")
    counts = owner_counts(at)
    on_erasure_page(at)
    at.button(key="erasure.erase.acme/alice").click().run()
    at.selectbox(key="user").set_value("acme/bob").run()
    assert not at.exception
    assert "The erasure of acme/alice was not confirmed and is cancelled" in texts(at.info)
    assert at.button(key="erasure.erase.acme/bob").label == "Erase acme/bob"
    assert not [b for b in at.button if b.key.startswith("erasure.confirm.")], "a confirmation carried over to bob"
    assert owner_counts(at) == counts
    # the hurried case: the picker moves to bob and alice's confirmation is clicked in the same rerun
    on_erasure_page(at)
    at.selectbox(key="user").set_value("acme/alice").run()
    at.button(key="erasure.erase.acme/alice").click().run()
    # each user's checks (a scan of the session folder) ran once for this data version, not once per rerun
    assert audits == [ALICE, ("acme", "bob")]
    at.selectbox(key="user").set_value("acme/bob")
    at.button(key="erasure.confirm.acme/alice").click().run()
    assert not at.exception
    after = owner_counts(at)
    assert ALICE not in after, "the confirmation named alice"
    assert after == {owner: n for owner, n in counts.items() if owner != ALICE}, "bob (or anyone else) lost records"


def test_after_erasing_the_page_says_who_was_erased_and_where_the_picker_moved():
    at = open_app("lab/pages/erasure.py", embedder="lexical")
    erase_confirmed(at, "acme/alice")
    now = at.selectbox(key="user").value
    assert now != "acme/alice"

    def says_it() -> None:
        assert "Erasure of acme/alice" in texts(at.subheader)
        assert "Verified: nothing of the user remains" in texts(at.success)
        assert f"acme/alice was erased and is no longer in this lab, so the picker now shows {now}." in texts(at.info)

    says_it()
    at.sidebar.slider(key="threshold").set_value(0.4).run()  # lasting: not a toast gone after the next rerun
    assert not at.exception
    says_it()


def test_the_page_says_it_in_chinese():
    at = open_app("lab/pages/erasure.py", embedder="lexical", lang="zh", scenario="workshop_en")  # the page's words
    at.button(key="erasure.erase.acme/alice").click().run()
    assert "删除 acme/alice？此操作无法撤销" in texts(at.warning)
    at.button(key="erasure.confirm.acme/alice").click().run()
    assert not at.exception
    assert "acme/alice 的删除结果" in texts(at.subheader) and "acme/alice 已删除" in texts(at.info)


# --- nothing of the lab keeps the erased user's texts -----------------------------------------------------

def test_trace_json_holds_none_of_the_erased_users_texts_after_a_recall(downloads):
    at = open_app(embedder="lexical")  # the recall page, on alice's first labelled query: the last recall is hers
    assert int(metric(at, "Governed")) > 0
    alice = texts_of(at, ALICE)
    before = downloads["trace.json"].decode("utf-8")
    assert json.loads(before)["last_recall"]["user_id"] == "alice"
    assert any(text in before for text in alice), "the test must see alice's texts in the export first"
    erase_confirmed(on_erasure_page(at), "acme/alice")
    at.switch_page("lab/pages/inspector.py").run()
    assert not at.exception
    trace = downloads["trace.json"].decode("utf-8")
    json.loads(trace)
    assert json.loads(trace)["last_erasure"]["owner"] == "acme/alice"
    assert [text for text in alice if text in trace] == []
    csv = downloads["memory_records.csv"].decode("utf-8")
    assert [text for text in alice if text in csv] == []


def test_the_candidate_cache_and_token_and_vector_memos_hold_none_of_the_erased_users_texts():
    """The token-count memo is process-wide: it also held the recall page's context, built from alice's texts. So
    is the embedder's memo of vectors (lab.models.RememberingEmbedder), which held every text the lab embedded."""
    at = open_app(embedder="lexical")
    alice = set(texts_of(at, ALICE))
    vectors = models.get("lexical").memo
    assert alice & held_texts(cached_candidates()), "the recall must have cached alice's candidates first"
    assert any(text in views.cached_count_tokens for text in alice)
    assert alice & set(vectors), "the lab must have remembered alice's vectors first"
    erase_confirmed(on_erasure_page(at), "acme/alice")
    held = cached_candidates()
    assert [c for c in held if (c.tenant_id, c.user_id) == ALICE] == []
    assert alice & held_texts(held) == set()
    assert [held for held in views.cached_count_tokens if any(text in held for text in alice)] == []
    assert [held for held in vectors if any(text in held for text in alice)] == []
    assert len(vectors) > 0, "only alice's texts leave the memo of vectors"
    # a recall for alice now (a link shared before the erasure) finds nothing of hers
    at.switch_page("lab/pages/recall.py").run()
    at.query_params["user"] = "acme/alice"
    at.run()
    assert not at.exception and "acme/alice" in texts(at.caption)
    shown = "\n".join(df.value.to_csv() for df in at.dataframe)
    assert [text for text in alice if text in shown] == []
    assert alice & held_texts(cached_candidates()) == set()


# --- ids that contain "/" ----------------------------------------------------------------------------

SLASHED = json.dumps({"name": "slashes", "language": "en", "messages": [
    {"id": "s1", "tenant_id": "a/b", "user_id": "c", "content": "The launch is on Monday.",
     "timestamp": "2026-01-01T00:00:00Z"},
    {"id": "s2", "tenant_id": "a", "user_id": "b/c", "content": "My locker code is 4411.",
     "timestamp": "2026-01-02T00:00:00Z"},
    {"id": "s3", "tenant_id": "a", "user_id": "b/c", "content": "I prefer tea to coffee.",
     "timestamp": "2026-01-03T00:00:00Z"},
], "queries": [{"id": "q1", "tenant_id": "a", "user_id": "b/c", "query": "what is my locker code", "relevant": ["s2"]}]})


def upload_slashed(at):
    at.sidebar.file_uploader[0].set_value(("slashes.json", SLASHED.encode(), "application/json")).run()
    assert not at.exception and at.session_state["lab.settings"].scenario.name == "slashes"
    return at


def test_inspector_picker_keeps_slashed_ids_apart():
    at = upload_slashed(open_app("lab/pages/inspector.py", embedder="lexical"))
    assert at.selectbox(key="who").options == ["all", "a%2Fb/c", "a/b%2Fc"]
    for label, owner, n in (("a%2Fb/c", ("a/b", "c"), 1), ("a/b%2Fc", ("a", "b/c"), 2)):
        at.selectbox(key="who").set_value(label).run()
        assert not at.exception
        shown = frame_with(at, "security_level")
        assert set(zip(shown["tenant_id"], shown["user_id"])) == {owner} and len(shown) == n, label


def test_erasing_a_slashed_id_keeps_its_look_alike():
    at = upload_slashed(open_app("lab/pages/erasure.py", embedder="lexical"))
    at.selectbox(key="user").set_value("a%2Fb/c").run()
    erase_confirmed(at, "a%2Fb/c")
    assert "Erasure of a%2Fb/c" in texts(at.subheader)
    assert owner_counts(at) == {("a", "b/c"): 2}
