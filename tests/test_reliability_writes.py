"""The write-path reliability checks on real Chroma and the real MiniLM: both pass."""

from memory.reliability.writes import check_messages, check_poison


def test_check_messages_counts_no_dropped_turn(minilm, tmp_path):
    check = check_messages(minilm, 1, tmp_path)
    assert check.failures == 0, check.figures
    assert check.figures["turns_sent"] == check.figures["turns_stored"] == 10


def test_check_poison_counts_no_other_failure(minilm, tmp_path):
    check = check_poison(minilm, 1, tmp_path)
    assert check.failures == 0 and check.cases == 21, check.figures
