"""The recall page's teaching affordances (lab/teaching.py), as a participant uses them: pin A and compare with B,
add a message of one's own and see the write path decide, export the comparison. Real MiniLM, real Chroma."""

from __future__ import annotations

import pytest

from lab import lesson, teaching
from memory import MemoryConfig
from tests.test_app import lab_env, open_app  # noqa: F401 - lab_env is a fixture
from tests.test_lesson import memories, side_tables
from tests.test_room_erase import downloads  # noqa: F401 - a fixture

pytestmark = [pytest.mark.app, pytest.mark.usefixtures("lab_env")]


def ab_table(at):
    frames = [t.value for t in at.table if list(t.value.columns) == ["A", "B"]]
    assert len(frames) == 1, [list(t.value.columns) for t in at.table]
    return frames[0]


def test_pinned_a_stays_while_b_follows_the_sliders():
    at = open_app()
    at.button(key="ab.pin").click().run()
    at.sidebar.slider(key="threshold").set_value(0.6).run()
    table = ab_table(at)
    assert (table.loc["Similarity threshold", "A"], table.loc["Similarity threshold", "B"]) == ("0.3", "0.6")
    assert int(table.loc["Governed", "B"]) < int(table.loc["Governed", "A"]), table
    at.button(key="ab.unpin").click().run()
    assert not [t for t in at.table if list(t.value.columns) == ["A", "B"]]


def write(at, text: str):
    if text:
        at.text_input(key="add.text").input(text)
    [b for b in at.button if b.label == "Write it"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_restated_budget_goes_through_the_write_path_and_leads_governed_recall():
    at = write(open_app(), "The campaign budget is 350,000 yuan now.")
    decided = [t.value for t in at.table if "decision" in t.value.columns]
    assert decided and "update" in set(decided[0]["decision"]), decided
    governed = memories(side_tables(at)[1])
    assert "350,000" in governed[0] and not any("300,000" in m for m in governed), governed


def test_on_the_raw_path_the_message_is_stored_as_is_beside_the_old_value():
    at = write(open_app(write_path="raw"), "The campaign budget is 350,000 yuan now.")
    assert any("Stored as-is" in c.value for c in at.caption)
    governed = memories(side_tables(at)[1])
    assert any("350,000" in m for m in governed) and any("300,000" in m or "500,000" in m for m in governed)


def test_an_empty_or_oversized_message_is_refused_and_nothing_is_written():
    at = open_app()
    before = memories(side_tables(at)[1])
    write(at, "")
    assert any("Type a message first" in e.value for e in at.error)
    write(at, "x" * (MemoryConfig().max_message_chars + 1))
    assert any(e.value.startswith("Not written") for e in at.error), [e.value for e in at.error]
    assert memories(side_tables(at)[1]) == before


def test_the_markdown_summary_holds_the_settings_counts_and_both_lists(make_manager):
    from memory import Message, govern

    manager = make_manager()
    manager.add_many([Message(tenant_id="acme", user_id="alice", content=c, id=f"m{i}") for i, c in enumerate(
        ["The campaign budget was cut to 300,000 yuan.", "I had pasta for lunch.", "The launch is in July."])])
    manager.add_many([Message(tenant_id="acme", user_id="bob", content="Bob's budget is 9 yuan.", id="b1")])
    candidates = manager.candidates(lesson.QUERY, tenant_id="acme", user_id="alice", pool=3)
    result = govern(candidates, MemoryConfig())
    private = {"b1"}
    text = teaching.summary_markdown(query=lesson.QUERY, user=lesson.USER, embedder="minilm", write_path="raw",
                                     config=MemoryConfig(), result=result,
                                     kinds=lambda r: ("private",) if r.message_id in private else ())
    assert lesson.QUERY in text and "threshold = 0.3" in text and "top_k = 5" in text
    for hit in result.governed + result.blind:
        assert hit.record.content in text
    assert f"| {len(result.blind)} | {len(result.governed)} |" in text


def test_the_markdown_export_holds_the_pinned_comparison(downloads):  # noqa: F811 - the fixture
    """Issue 25, item 4: with A pinned, the slides' Markdown carries the A/B table and A's governed list too."""
    at = open_app()
    at.button(key="ab.pin").click().run()
    at.sidebar.slider(key="threshold").set_value(0.5).run()
    assert not at.exception
    exported = [data.decode("utf-8") for name, data in downloads.items() if name.endswith(".md")]
    assert exported, list(downloads)
    text = exported[-1]
    assert "## A / B" in text or f"## {teaching.t('ab.title')}" in text, text[-800:]
    assert "| 0.3 | 0.5 |" in text, text[-800:]
    shown = ab_table(at)
    assert str(shown.loc[shown.index[0], "A"]) in text
