"""Every hostile CLI input exits 2 with one stderr line naming the file, item and field (never a traceback)."""

import pytest

from memory.tools.reliability import Check
from memory.tools.reliability_inputs import CLI_CASE_NAMES, check_inputs, cli_cases, run_cli_case, write_inputs

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("hostile") / "inputs")


@pytest.mark.parametrize("name", CLI_CASE_NAMES)
def test_hostile_cli_input_exits_2_with_one_line(hostile_folder, name):
    case = next(c for c in cli_cases(hostile_folder) if c.name == name)
    outcome = run_cli_case(case)
    assert outcome.returncode == 2, outcome.lines
    assert len(outcome.lines) == 1, outcome.lines
    line = outcome.lines[0]
    assert "Traceback" not in line
    for word in case.expect:
        assert word in line, (word, line)


def test_the_case_list_covers_every_input_class():
    names = set(CLI_CASE_NAMES)
    for needed in ("deep-json-scenario", "surrogate-in-content", "surrogate-in-id", "query-not-utf8",
                   "timestamp-year-0", "json-5000-digit-number", "data-dir-is-a-file", "data-dir-dev-null",
                   "threshold-tiny-step", "threshold-to-inf", "threshold-nan", "locomo-dev-zero",
                   "scenario-dev-zero", "synth-huge-users"):
        assert needed in names
    assert len(names) == len(CLI_CASE_NAMES)


def test_check_inputs_counts_every_case_and_finds_no_failure(tmp_path, lexical):
    check = check_inputs(lexical, 1, tmp_path / "data")
    assert isinstance(check, Check) and check.name == "hostile_inputs"
    assert check.figures["cli_cases"] == len(CLI_CASE_NAMES)
    assert check.cases == check.figures["cli_cases"] + check.figures["library_cases"]
    assert check.figures["library_cases"] >= 40
    assert check.failures == 0, check.figures
