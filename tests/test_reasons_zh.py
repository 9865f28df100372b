"""Chinese reasons name attributes in Chinese (issue 25, item 6): the reader's canonical attribute names are English
words (residence, deadline, budget, ...); on a Chinese page they are shown in Chinese, and only words the message
itself holds stay as written. Unit test: the reader alone, no model."""

from __future__ import annotations

import json
import re

from lab.reasons import ATTRIBUTES_ZH, attribute_zh, say
from memory import Reason
from memory.core.scenario import SCENARIOS_DIR, load_scenario
from memory.eval import shipped_pair_files
from memory.write.extract import extract

ASCII_WORD = re.compile(r"[A-Za-z]{3,}")


def _chinese_texts() -> list[str]:
    texts = [m.content for name in ("workshop_zh", "recall_zh", "seed_demo_zh")
             for m in load_scenario(SCENARIOS_DIR / f"{name}.json").messages]
    for pair in json.loads(shipped_pair_files()["dedup_pairs_zh"].read_text(encoding="utf-8")):
        texts += [pair["existing"], pair["incoming"]]
    return texts


def test_every_attribute_the_reader_gives_on_the_chinese_sets_is_named_in_chinese():
    seen, english = 0, []
    for text in _chinese_texts():
        for fact in extract(text).facts:
            if not fact.attribute:
                continue
            seen += 1
            shown = attribute_zh(fact.attribute)
            foreign = [w for w in ASCII_WORD.findall(shown) if w.lower() not in text.lower()]
            if foreign:
                english.append((text, fact.attribute, shown))
    assert seen > 50, seen
    assert not english, english[:10]


def test_a_reason_on_the_english_canonical_attributes_reads_in_chinese():
    for attribute in ("residence", "deadline", "budget", "prop:deadline", "verb:prefer", "prefer:tea|coffee"):
        shown = attribute_zh(attribute)
        assert not [w for w in ASCII_WORD.findall(shown) if w not in ("tea", "coffee")], (attribute, shown)
    sentence = say(Reason("update.value_changed", {"attribute": "residence", "old": "杭州", "new": "上海"}), "zh")
    assert "住处" in sentence and "residence" not in sentence, sentence
    assert set(ATTRIBUTES_ZH) >= {"residence", "deadline", "budget", "job", "salary"}
