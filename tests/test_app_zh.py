"""The recall page in Chinese: drop reasons, stages and pollution kinds are worded from codes, not left English."""

from __future__ import annotations

from lab import i18n
from test_app import frame_with, lab_env, open_app  # noqa: F401 - lab_env: autouse fixture


def test_recall_page_words_reasons_stages_and_kinds_in_chinese():
    at = open_app(lang="zh", embedder="minilm", threshold="0.5")
    frame = frame_with(at, "reason")
    dropped = frame[frame["stage"] == i18n.TEXT["stage.threshold"]["zh"]]
    assert not dropped.empty, frame["stage"].tolist()  # the stage column is in Chinese
    assert all(r.startswith("相似度 ") and "< 阈值 0.500" in r for r in dropped["reason"]), dropped["reason"].tolist()
    assert "threshold" not in set(frame["stage"]) and "governed" not in set(frame["stage"])
    english = {"noise", "stale", "private", "contradiction", "forbidden", "erased"}
    shown = {k for cell in frame["pollution"] for k in cell.split(", ") if k}
    assert shown and not shown & english, shown  # labels exist at this setting, all in Chinese


def test_english_page_keeps_the_librarys_reason_sentence():
    at = open_app(embedder="minilm", threshold="0.5")
    frame = frame_with(at, "reason")
    dropped = frame[frame["stage"] == "threshold"]
    assert not dropped.empty and all(r.startswith("similarity ") for r in dropped["reason"])
