"""Atomic fact extraction (deterministic, EN + ZH): the A6 example, fillers, qualifiers, bad input."""

import pytest

from memory.core.errors import InputError
from memory.write.extract import extract, extract_facts, fact_from_text, is_filler
from memory.write.reading import read_statement

A6_ZH = ("我上个月在你们这买了个智能手表，黑色那个，表带有点紧。今天我想给女朋友也买一个粉色的，预算 1500 左右，"
         "续航要超过一周，别像我那个两天就得充一次。")
A6_EN = ("I bought a smartwatch from you last month, the black one, and the strap is a bit tight. Today I want to buy "
         "one for my girlfriend too, a pink one. My budget is about 1500, and the battery should last more than a week, "
         "not like mine, which has to be charged every two days.")


def _find(facts, *needles):
    found = [f for f in facts if all(n in f.text for n in needles)]
    assert found, f"no fact with {needles} in {[f.text for f in facts]}"
    return found[0]


@pytest.mark.parametrize("text, lang", [(A6_ZH, "zh"), (A6_EN, "en")])
def test_a6_example_gives_atomic_facts_with_sensible_categories(text, lang):
    facts = extract_facts(text)
    assert len(facts) >= 4
    assert {f.language for f in facts} == {lang}
    if lang == "zh":
        bought, strap = _find(facts, "上个月", "智能手表"), _find(facts, "表带", "紧")
        pink, budget = _find(facts, "女朋友", "粉色"), _find(facts, "预算", "1500")
        battery, complaint = _find(facts, "续航", "一周"), _find(facts, "两天", "充")
    else:
        bought, strap = _find(facts, "bought", "smartwatch"), _find(facts, "strap", "tight")
        pink, budget = _find(facts, "girlfriend", "pink"), _find(facts, "budget", "1500")
        battery, complaint = _find(facts, "battery", "week"), _find(facts, "two days")
    assert bought.category == "episodic_fact"
    assert strap.category == "preference" and complaint.category == "preference"  # pain points (the article's 偏好/痛点)
    assert pink.category == "preference"
    assert budget.category == "business_rule" and budget.attribute == "budget" and budget.value == "n1500"
    assert battery.category == "business_rule"
    assert "watch" in pink.domain_tags
    assert ("智能手表" if lang == "zh" else "pink smartwatch") in pink.text  # "a pink one" / "一个粉色的" resolved
    # every fact stands alone: no first person left
    for f in facts:
        assert not any(w in f.text.split() for w in ("I", "my", "me")) and "我" not in f.text


@pytest.mark.parametrize("text", ["ok thanks", "OK, thank you!", "哈哈好的", "好的，谢谢！", "嗯嗯", "lol", "Thanks :)", "👍"])
def test_fillers_give_no_facts(text):
    assert is_filler(text)
    assert extract_facts(text) == []


@pytest.mark.parametrize("text", ["What's for lunch?", "Can you recommend a watch?", "你能帮我查一下吗？", "明天会下雨吗"])
def test_questions_give_no_facts(text):
    assert extract_facts(text) == []


def test_filler_and_question_are_dropped_around_a_fact():
    facts = extract_facts("Haha ok. What's the weather? I live in Hangzhou. Thanks!")
    assert [f.text for f in facts] == ["The user lives in Hangzhou."]
    assert facts[0].category == "user_profile"
    assert (facts[0].subject, facts[0].attribute, facts[0].value) == ("user", "residence", "hangzhou")


@pytest.mark.parametrize("text, context", [
    ("When writing Go, I prefer tabs.", "writing go"),
    ("On weekends I wake up at 9:00.", "weekend"),
    ("At work I drink black coffee.", "work"),
    ("The user's budget for the watch is about 1500 yuan.", "watch"),
    ("写Go时我喜欢用Tab缩进。", "写go"),
    ("工作日我6点半起床。", "weekday"),
    ("用户买手表的预算大约是1500元。", "手表"),
])
def test_context_qualifier_is_kept_with_its_clause(text, context):
    facts = extract_facts(text)
    assert len(facts) == 1, [f.text for f in facts]
    assert facts[0].context == context


def test_first_person_is_rewritten_and_values_stay_whole():
    facts = extract_facts("I'm a data engineer. My favourite colour is blue. The campaign budget is 500,000 yuan.")
    assert [f.text for f in facts] == [
        "The user is a data engineer.", "The user's favourite colour is blue.", "The campaign budget is 500,000 yuan."]
    assert [f.category for f in facts] == ["user_profile", "preference", "business_rule"]
    assert read_statement(facts[2].text).value == "n500000"


def test_negation_and_values_are_read():
    veg, meat = read_statement("The user is no longer vegetarian."), read_statement("用户不吃肉。")
    assert (veg.attribute, veg.negated) == ("diet", True)
    assert (meat.attribute, meat.negated) == ("diet", False)  # not eating meat is being vegetarian
    assert read_statement("活动预算为五十万元。").value == read_statement("活动预算是50万元。").value == "n500000"
    assert read_statement("I get out of bed at half past six.").value == "t0630"


def test_extraction_is_deterministic():
    assert extract_facts(A6_ZH) == extract_facts(A6_ZH)
    assert fact_from_text("The user lives in Hangzhou.").to_dict()["attribute"] == "residence"


@pytest.mark.parametrize("bad, words", [
    ("", "empty"), ("   \n ", "empty"), (None, "must be text"), (123, "must be text"), (b"bytes", "must be text"),
    ("x" * 1_000_001, "limit"),
])
def test_bad_input_is_a_clear_error(bad, words):
    with pytest.raises(InputError) as err:
        extract_facts(bad)
    assert words in str(err.value) and "content" in str(err.value)


# --- a clause keeps its subject and its thing (issue 48: the message path as right as the pair path) ---------------

@pytest.mark.parametrize("text, fact", [
    ("got a new number, it ends in 9032 now", "The user got a new number, it ends in 9032 now."),
    ("gave up on spanish, deleted duolingo", "The user gave up on spanish, deleted duolingo."),
    ("Got a Pixel 8 now, traded in the old iPhone.", "The user got a Pixel 8 now, traded in the old iPhone."),
    ("My son quit football; he's doing judo instead.", "The user's son quit football, he's doing judo instead."),
    ("I've stopped playing five-a-side on Sundays, my knee can't take it.",
     "The user has stopped playing five-a-side on Sundays, the user's knee can't take it."),
    ("用户已经从腾讯离职，去了字节跳动。", "用户已经从腾讯离职，去了字节跳动。"),
    ("我喜欢喝黑咖啡，不加糖也不加奶。", "用户喜欢喝黑咖啡，不加糖也不加奶。"),
    ("我的旧手机坏了，它用了五年。", "用户的旧手机坏了，它用了五年。"),
])
def test_a_clause_without_its_own_subject_stays_with_the_clause_it_needs(text, fact):
    """Split off, "It ends in 9032 now." and "Deleted duolingo." are about nothing: no judge can tell they change the
    stored phone number or end the stored spanish course."""
    assert [f.text for f in extract_facts(text)] == [fact]


@pytest.mark.parametrize("text, fact", [
    ("Deleted duolingo.", "The user deleted duolingo."),
    ("Just got a dog.", "The user just got a dog."),
    ("Allergic to nuts.", "The user is allergic to nuts."),
    ("I think I still have Spotify Premium.", "The user thinks the user still has Spotify Premium."),
    ("Use metric units.", "Use metric units."),  # an instruction, not something said of the speaker
    ("Don't forget my birthday.", "Don't forget the user's birthday."),
])
def test_a_sentence_that_opens_with_its_verb_is_said_of_the_speaker(text, fact):
    assert [f.text for f in extract_facts(text)] == [fact]


@pytest.mark.parametrize("text, facts", [
    # a clause with no predicate of its own goes with the clause it qualifies (before it, or after it when it leads)
    ("Our lab meets once a week, on Tuesdays.", ["Our lab meets once a week, on Tuesdays."]),
    ("My commute is on two wheels, pedal-powered.", ["The user's commute is on two wheels, pedal-powered."]),
    ("I fly to Boston on May 12, leaving at five past seven in the morning.",
     ["The user flies to Boston on May 12, leaving at five past seven in the morning."]),
    ("Sertraline 50mg. Once a day.", ["Sertraline 50mg, Once a day."]),
    ("gym days for me are Mon, Wed and Fri", ["Gym days for the user are Mon, Wed and Fri."]),
    ("Of all painters, Frida Kahlo's the one I love most.", ["Of all painters, Frida Kahlo's the one the user loves most."]),
    ("I've got a golden retriever; his name's Biscuit.", ["The user has got a golden retriever, his name's Biscuit."]),
    # asides say nothing; a title's period ends no sentence
    ("Just so you know, I'm seeing my dentist on the third of May.",
     ["The user is seeing the user's dentist on the third of May."]),
    ("I'm 72 inches tall, for what it's worth.", ["The user is 72 inches tall."]),
    ("Prof. Okafor supervises my PhD research.", ["Prof. Okafor supervises the user's PhD research."]),
    ("青霉素我用不了，一用就过敏。", ["青霉素用户用不了，一用就过敏。"]),
    ("我骑自行车通勤，单程八千米左右。", ["用户骑自行车通勤，单程八千米左右。"]),
    # and a clause with a subject or a verb of its own stays a fact of its own
    ("I moved to Denver. Once a week I ski.", ["The user moved to Denver.", "Once a week the user skis."]),
])
def test_a_clause_with_no_predicate_goes_with_the_clause_it_qualifies(text, facts):
    """On the message path a fragment stored alone ("On Tuesdays.", "Prof.", "Just so you know.") is a fact about
    nothing, judged new beside a restatement: the message then kept a duplicate (64 of 102 training pairs whose message
    path differed from the pair path, bench.message_path --sets training --details)."""
    assert [f.text for f in extract_facts(text)] == facts


def test_clauses_with_subjects_of_their_own_are_still_atomic_facts():
    facts = extract_facts("I pay 45 bucks monthly for my mobile, and the data's unlimited. This weekend I'm hiking.")
    assert [f.text for f in facts] == ["The user pays 45 bucks monthly for the user's mobile.", "The data's unlimited.",
                                       "This weekend the user is hiking."]


def test_joining_stops_at_the_clause_limit():
    """Pronoun clauses chain while the joined clause fits; past the limit each is a fact of its own, none unread."""
    text = "I bought a bike. " + " ".join(["It is red and fast and light."] * 20)
    result = extract(text, clause_chars=120)
    assert result.complete and all(len(f.text) <= 125 for f in result.facts) and len(result.facts) > 1


@pytest.mark.parametrize("a, b", [
    ("用户体重82公斤。", "用户体重164斤。"), ("用户每天运动1.5小时。", "用户每天运动90分钟。"),
    ("用户每天运动一个半小时。", "用户每天运动90分钟。"), ("The user runs 1.5 hours a day.", "The user runs 90 minutes a day."),
    ("The user naps for half an hour.", "The user naps for 30 mins."), ("The user weighs 82 kilos.", "The user weighs 82 kg."),
])
def test_a_value_is_read_whole_with_its_unit(a, b):
    """82公斤 is not n82 and a stray 公; 1.5 hours is not two hours: one value, one unit, in either wording."""
    ra, rb = read_statement(a), read_statement(b)
    assert ra.values == rb.values and ra.tokens == rb.tokens, (ra.tokens, rb.tokens)
    assert ra.values & {"n82", "n90", "n30"}  # kilograms, minutes: not n164 jin, not 1.5 rounded to n2
