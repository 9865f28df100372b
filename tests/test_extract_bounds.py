"""Value normalisation is total for numbers of any length, and extraction is bounded per message."""

from hypothesis import given, settings
from hypothesis import strategies as st

import memory.write.extract as extract_module
from memory.write.adjudicate import adjudicate
from memory.write.extract import MAX_CLAUSE_CHARS, extract, extract_facts, read_limit
from memory.write.lexicon import decimal_token, normalize_values_en, normalize_values_zh, zh_to_int
from memory.write.reading import read_statement

digits = st.text("0123456789", min_size=1, max_size=1500).filter(lambda d: d[0] != "0")


@settings(max_examples=60, deadline=None)
@given(digits)
def test_numbers_of_any_length_normalise_exactly(number):
    assert normalize_values_en(f"budget is {number} yuan") == f"budget is n{number} yuan"
    assert normalize_values_zh(f"预算{number}元") == f"预算n{number}元"
    assert read_statement(f"The user's budget is {number} yuan.").value == f"n{number}"


def test_past_float_range_and_past_int_conversion_limits():
    big = "9" * 400  # float("9" * 309) is inf: the old normalisation raised OverflowError
    assert decimal_token(big) == "n" + big
    assert decimal_token("1.5", 10_000) == "n15000" and decimal_token("2.5") == "n2" and decimal_token("1,500") == "n1500"
    huge = "1" + "0" * 5000  # str(int) refuses past 4,300 digits
    assert normalize_values_en(f"{huge} k") == f"n{huge}000"
    assert zh_to_int("1.5万") == 15000 and zh_to_int("五十万") == 500000 and zh_to_int(huge) is None
    past_float = "9" * 320  # a clause of it still fits MAX_CLAUSE_CHARS
    [fact] = extract_facts(f"My budget is {past_float} yuan.")
    assert fact.value == "n" + past_float


def test_two_long_amounts_that_differ_in_the_last_digit_are_an_update():
    from memory.write.adjudicate import CandidateRef

    a, b = "7" * 350, "7" * 349 + "8"
    d = adjudicate(f"The user's budget is {b} yuan.", [(CandidateRef("x", f"The user's budget is {a} yuan."), 0.99)])
    assert d.decision == "update" and "7,777" in d.reason


def test_read_limit_cuts_at_the_last_sentence_break():
    text = "I live in Paris. I like tea. " * 10
    assert read_limit(text, 10_000) == len(text)
    assert read_limit(text, 40) == text.rindex(".", 0, 40) + 1
    assert read_limit("x" * 100, 40) == 40  # no break: exactly the bound


def test_only_the_bounded_part_and_no_overlong_clause_is_read(monkeypatch):
    read: list[str] = []
    real = extract_module._fact
    monkeypatch.setattr(extract_module, "_fact", lambda text, said="": read.append(text) or real(text, said))
    adversarial = {"I ": "I " * 50_000, "token": "a" * 100_000, "zh": "我喜欢喝咖啡" * 16_000,
                   "commas": "a, " * 30_000, "breaks": "I live in Paris. " * 5_000}
    for name, text in adversarial.items():
        read.clear()
        result = extract(text, read_chars=4_000)
        assert result.read_chars <= 4_000 and result.total_chars == len(text), name
        assert not result.complete, name
        assert all(len(t) <= MAX_CLAUSE_CHARS + 20 for t in read), name  # rewritten clauses stay clause-sized
    assert extract("I " * 50_000).long_clauses == 1 and extract("I " * 50_000).facts == []
    assert [f.text for f in extract("I live in Paris. " * 5_000).facts] == ["The user lives in Paris."]


def test_a_short_turn_is_read_whole():
    result = extract("I live in Hangzhou. My favourite colour is blue.")
    assert result.complete and [f.attribute for f in result.facts] == ["residence", "favourite colour"]
