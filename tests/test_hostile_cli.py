"""Every hostile CLI input exits 2 with one stderr line naming the file, item and field (never a traceback)."""

import pytest

from memory.reliability.check import Check
from memory.reliability.inputs import (CLI_CASE_NAMES, CliOutcome, check_inputs, cli_cases, run_cli_cases,
                                             write_inputs)


@pytest.fixture(scope="module")
def hostile_folder(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("hostile") / "inputs")


@pytest.fixture(scope="module")
def outcomes(hostile_folder) -> dict[str, CliOutcome]:
    """Every hostile case run once as ``python -m memory ...`` in a subprocess, by the runner the report uses (two
    at a time): the per-case tests and the report's count both judge these outcomes."""
    return {o.case.name: o for o in run_cli_cases(cli_cases(hostile_folder))}


@pytest.mark.process
@pytest.mark.parametrize("name", CLI_CASE_NAMES)
def test_hostile_cli_input_exits_2_with_one_line(outcomes, name):
    outcome = outcomes[name]
    assert outcome.returncode == 2, outcome.lines
    assert len(outcome.lines) == 1, outcome.lines
    line = outcome.lines[0]
    assert "Traceback" not in line
    for word in outcome.case.expect:
        assert word in line, (word, line)


def test_the_case_list_covers_every_input_class():
    names = set(CLI_CASE_NAMES)
    for needed in ("deep-json-scenario", "surrogate-in-content", "surrogate-in-id", "query-not-utf8",
                   "timestamp-year-0", "json-5000-digit-number", "data-dir-is-a-file", "data-dir-dev-null",
                   "threshold-tiny-step", "threshold-to-inf", "threshold-nan", "locomo-dev-zero",
                   "scenario-dev-zero", "synth-huge-users"):
        assert needed in names
    assert len(names) == len(CLI_CASE_NAMES)


@pytest.mark.process
def test_check_inputs_counts_every_case_and_finds_no_failure(hostile_folder, outcomes, lexical):
    """The report's hostile_inputs check hands every CLI case to its runner (here: the outcomes above, each for the
    very command line it is given), judges each outcome, runs every library case, and counts them all."""
    given = []

    def already_run(cases):
        given.extend(cases)
        assert all(outcomes[c.name].case == c for c in cases), "a case differs from the one the fixture ran"
        return [outcomes[c.name] for c in cases]

    check = check_inputs(lexical, 1, hostile_folder, run_cli=already_run)
    assert isinstance(check, Check) and check.name == "hostile_inputs"
    assert [c.name for c in given] == list(CLI_CASE_NAMES)
    assert check.figures["cli_cases"] == len(CLI_CASE_NAMES)
    assert check.cases == check.figures["cli_cases"] + check.figures["library_cases"]
    assert check.figures["library_cases"] >= 40
    assert check.failures == 0, check.figures
