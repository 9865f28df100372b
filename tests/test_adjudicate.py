"""The plain two-band rule vs the governed adjudicator, with real MiniLM similarities."""

import dataclasses
import re
import string

import pytest

from memory import MemoryConfig
from lab.reasons import ZH_TEMPLATES, reason_in, say
from memory.write.adjudicate import CandidateRef, Decision, adjudicate, judge, judge_reason, plain_rule
from memory.core.reasons import CODES, EN, Reason
from memory.eval.pairs import PairResult, load_pairs, shipped_pair_files


def _sim(minilm, a, b):
    va, vb = minilm.embed([a, b])
    return float(va @ vb)


def test_plain_rule_bands():
    cfg = MemoryConfig()
    assert plain_rule(0.95, cfg) == plain_rule(0.92, cfg) == "duplicate"
    assert plain_rule(0.9199, cfg) == plain_rule(0.78, cfg) == "update"  # a conflict: the plain rule retires the old fact
    assert plain_rule(0.7799, cfg) == plain_rule(0.1, cfg) == plain_rule(None, cfg) == "new"
    assert plain_rule(0.85, MemoryConfig(duplicate_band=0.8, conflict_band=0.5)) == "duplicate"


def test_changed_value_is_an_update_even_at_093(minilm):
    old, new = "The campaign budget is 500,000 yuan.", "The campaign budget is 300,000 yuan."
    sim = _sim(minilm, old, new)
    assert sim >= 0.92 and plain_rule(sim) == "duplicate"  # the plain rule would lose the update
    verdict, reason = judge(old, new, sim)
    assert verdict == "update"
    assert "500,000 -> 300,000" in reason and "would say duplicate" in reason


def test_changed_value_is_an_update_even_at_070(minilm):
    old, new = "The user lives in Hangzhou.", "The user lives in Shanghai now."
    sim = _sim(minilm, old, new)
    assert sim < 0.78 and plain_rule(sim) == "new"  # the plain rule keeps the stale city
    assert judge(old, new, sim)[0] == "update"
    assert judge(old, new, 0.70)[0] == judge(old, new, 0.93)[0] == "update"  # the band is evidence, not the verdict


def test_paraphrase_is_a_duplicate_even_at_080(minilm):
    old, new = "The user is allergic to peanuts.", "Peanuts give the user an allergic reaction."
    sim = _sim(minilm, old, new)
    assert 0.78 <= sim < 0.92 and plain_rule(sim) == "update"  # the plain rule would retire a valid fact
    assert judge(old, new, sim)[0] == "duplicate"
    assert judge(old, new, 0.80)[0] == "duplicate"
    assert judge("活动预算是50万元。", "活动预算为五十万元。", 0.80)[0] == "duplicate"


def test_different_contexts_coexist(minilm):
    old, new = "On weekdays the user wakes up at 6:30.", "On weekends the user wakes up at 9:00."
    sim = _sim(minilm, old, new)
    assert plain_rule(sim) == "update"
    verdict, reason = judge(old, new, sim)
    assert verdict == "coexist" and "'weekday' vs 'weekend'" in reason
    assert judge("写Go时用户喜欢用Tab缩进。", "写Python时用户喜欢用4个空格缩进。", 0.57)[0] == "coexist"


@pytest.mark.parametrize("old, new", [
    ("The user is vegetarian.", "The user is no longer vegetarian."),
    ("用户是素食者。", "用户不再吃素了。"),
    ("The user likes running.", "The user doesn't like running anymore."),
])
def test_negation_flip_is_an_update(old, new):
    verdict, reason = judge(old, new, 0.87)
    assert verdict == "update"
    assert "no longer holds" in reason


@pytest.mark.parametrize("old, new", [
    ("The user lives in Hangzhou.", "The user works as a nurse."),
    ("The user's favourite colour is blue.", "The user drives a blue car."),
    ("用户最喜欢的颜色是蓝色。", "用户开一辆蓝色的车。"),
])
def test_unrelated_facts_are_new_even_when_cosine_is_high(old, new):
    assert judge(old, new, 0.89)[0] == "new"


@pytest.mark.parametrize("old, new", [
    ("I use VS Code as my editor.", "I switched from VS Code to Neovim."),
    ("I live in Paris.", "I moved from Paris to Berlin."),
    ("我住在北京。", "我从北京搬到了上海。"),
])
def test_a_change_from_the_stored_value_is_an_update(old, new):
    """A change event ("from X to Y") whose X is what the stored fact states retires it, at any cosine."""
    verdict, reason = judge(old, new, 0.2)
    assert verdict == "update" and "change from" in reason


@pytest.mark.parametrize("old, new", [
    ("My sister lives in Paris.", "I moved from Paris to Berlin."),  # someone else's value
    ("我用Java写代码。", "我哥哥从Java转到了Go。"),  # someone else's change
    ("I visited Paris last year.", "I moved from Paris to Berlin."),  # a past event stays true
    ("I like tea.", "I switched from coffee to tea."),  # the stored fact states the new value
])
def test_a_change_event_does_not_retire_what_it_does_not_replace(old, new):
    assert judge(old, new, 0.6)[0] != "update"


def test_adjudicate_keeps_the_strongest_relation_and_logs_everything():
    cands = [(CandidateRef("m1", "The user likes jazz music."), 0.40),
             (CandidateRef("m2", "The user lives in Hangzhou."), 0.35)]
    d = adjudicate("The user lives in Shanghai now.", cands)
    assert (d.decision, d.candidate.id, d.similarity, d.plain_rule) == ("update", "m2", 0.35, "new")
    assert d.reason.rstrip(")").endswith(".") and "hangzhou -> shanghai" in d.reason
    assert set(d.to_dict()) == {"fact", "candidate", "similarity", "plain_rule", "decision", "reason", "code", "params",
                                "plain"}
    assert (d.why.code, d.why.params["old"], d.why.params["new"]) == ("update.value_changed", "hangzhou", "shanghai")
    assert d.why.plain == (0.35, "new")  # the plain rule disagrees, and says so
    assert Reason.from_dict(d.to_dict()) == d.why  # the decision log keeps the code, not a sentence
    assert "“hangzhou” -> “shanghai”" in reason_in(d, "zh") and "旧事实" in reason_in(d, "zh")

    none = adjudicate("The user lives in Shanghai.", [])
    assert (none.decision, none.plain_rule, none.candidate, none.similarity) == ("new", "new", None, None)

    unrelated = adjudicate("The user works as a nurse.", cands)
    assert unrelated.decision == "new" and unrelated.candidate.id == "m1"  # reported against the nearest


CJK = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_TEMPLATE_WORDS = re.compile(r"\b(?:fact|facts|stored|context|statement|value|attribute|plain rule)\b")


@pytest.mark.parametrize("pairs", ["dedup_pairs_en", "dedup_pairs_zh"])
def test_every_reason_reads_in_both_languages(pairs):
    """The lab shows reasons in its language, rendered from the decision's code: every rule the shipped pairs
    reach has an English and a Chinese sentence (the same values quoted in both), at similarities in each band."""
    seen = set()
    for p in load_pairs(shipped_pair_files()[pairs]):
        for sim in (0.5, 0.85, 0.95):
            verdict, why = judge_reason(p.existing, p.incoming, sim)
            assert judge(p.existing, p.incoming, sim) == (verdict, why.text())
            assert why.code in CODES and why.code.split(".")[0] == verdict, why
            zh, en = say(why, "zh"), say(why, "en")
            assert en == why.text()
            assert CJK.search(zh) and not ENGLISH_TEMPLATE_WORDS.search(zh), zh
            if pairs.endswith("_en.json"):
                assert not CJK.search(en), en
            seen.add(why.code)
    assert len(seen) >= 6, seen


def test_every_code_has_a_sentence_in_both_languages_and_no_engine_module_carries_chinese():
    """One source per language: the library's English (memory/core/reasons.py), the lab's Chinese (lab/reasons.py)."""
    assert set(ZH_TEMPLATES) == set(CODES)
    for code in CODES:  # same fields in both sentences, so a code renders whatever its parameters
        fields = {f.lower() for _, f, _, _ in string.Formatter().parse(EN[code]) if f}  # "Attribute": capitalised
        assert fields == {f.lower() for _, f, _, _ in string.Formatter().parse(ZH_TEMPLATES[code]) if f}, code
    assert not any(CJK.search(sentence) for sentence in EN.values())
    for record in (Decision, PairResult):  # a decision carries a code, not a sentence per UI language
        assert not [f.name for f in dataclasses.fields(record) if "zh" in f.name or f.name == "reason"]


def test_a_reason_with_an_unknown_code_is_refused_and_a_legacy_log_entry_still_reads():
    with pytest.raises(ValueError, match="Reason.code"):
        Reason("update.because")
    legacy = Reason.from_dict({"reason": "Same budget with a new value (500,000 -> 300,000)."})
    assert legacy.code == "legacy" and reason_in({"reason": legacy.params["text"]}, "zh") == legacy.params["text"]


def test_an_injected_judge_decides_and_a_bad_verdict_is_named():
    def always_new(existing, incoming, similarity, *, config):
        return "new", Reason("new.unrelated")

    cands = [(CandidateRef("m2", "The user lives in Hangzhou."), 0.35)]
    assert adjudicate("The user lives in Shanghai now.", cands, judge=always_new).decision == "new"
    with pytest.raises(ValueError, match="verdict 'maybe'"):
        adjudicate("x", cands, judge=lambda *a, **k: ("maybe", Reason("new.unrelated")))
