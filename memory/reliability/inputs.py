"""The hostile-input check: every class of bad input, through the CLI and through the library.

:func:`check_inputs` (``check_xxx(embedder, scale, folder) -> Check`` like the checks of
:mod:`memory.reliability.engine`) runs

* every case of :func:`cli_cases` as a user would, ``python -m memory ...`` in a subprocess: a case
  passes when the command exits 2 with exactly one line on stderr (no traceback) that names what
  was wrong (the file, the item, the field or option);
* every case of :func:`library_cases`: a case passes when the call raises a typed error
  (MemoryLabError, ValueError or TypeError), not a crash of another kind and not silence, and the
  store holds what it held before.

The classes: deeply nested JSON, lone surrogates in content and ids, non-UTF-8 arguments, year-0 and
out-of-range times, 5,000-digit numbers, NaN literals, a ``--data-dir`` that is not a folder,
unbounded or non-finite sweep ranges, devices, FIFOs, folders, procfs files, symlinks and oversized
files given as data files, and huge ``synth`` and ``reliability`` sizes.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from memory.embed.embedders import Embedder
from memory.core.errors import MemoryLabError
from memory.core.scenario import SCENARIOS_DIR
from memory.reliability.check import Check

ROOT = Path(__file__).resolve().parents[2]
EN = SCENARIOS_DIR / "workshop_en.json"
TYPED_ERRORS: tuple[type[BaseException], ...] = (MemoryLabError, ValueError, TypeError)
"""What a library case must raise: a typed error, not OverflowError, RecursionError, UnicodeEncodeError..."""
HUGE = "1" * 5000
"""A 5,000-digit number: past Python's int/str conversion limit (4,300 digits)."""
HUGE_INT = 10**5000 // 9
"""The same number as an int (built by arithmetic: ``int(HUGE)`` is refused by that limit)."""
NOTE_PREFIXES = ("loading the ",)
"""Progress notes the CLI may print on stderr before the error line; not counted as lines."""


@dataclass(frozen=True)
class CliCase:
    """One hostile command line and the words its one-line error must hold."""

    name: str
    argv: tuple[str | bytes, ...]
    """Arguments after ``python -m memory`` (bytes for arguments that are not UTF-8)."""
    expect: tuple[str, ...]
    """Substrings the error line must contain (the file, the item, the field or option)."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables."""


@dataclass(frozen=True)
class CliOutcome:
    """What one CLI case did."""

    case: CliCase
    returncode: int
    lines: list[str]
    """Non-empty stderr lines, progress notes left out."""

    @property
    def ok(self) -> bool:
        return (self.returncode == 2 and len(self.lines) == 1 and "Traceback" not in self.lines[0]
                and all(word in self.lines[0] for word in self.case.expect))


def write_inputs(folder: Path) -> Path:
    """Write the hostile data files the CLI cases read into ``folder`` (created); returns it."""
    folder.mkdir(parents=True, exist_ok=True)

    def scenario(**message: Any) -> str:
        m = {"id": "m1", "tenant_id": "acme", "user_id": "alice", "content": "The budget is 300,000 yuan.",
             "timestamp": "2026-05-01T10:00:00Z", **message}
        return json.dumps({"name": "hostile", "messages": [m]})

    files = {
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "deep70.json": json.dumps({"name": "deep", "messages": [], "extra": "@"}).replace('"@"', "[" * 70 + "]" * 70),
        "surrogate_content.json": scenario(content="budget \\ud800 yuan").replace("\\\\ud800", "\\ud800"),
        "surrogate_id.json": scenario(user_id="al@ice").replace("@", "\\udc00"),
        "surrogate_pairs.json": json.dumps([{"id": "p1", "existing": "a", "incoming": "b@"}]).replace("@", "\\udfff"),
        "year0.json": scenario(timestamp="0000-01-01T00:00:00Z"),
        "year_out.json": scenario(timestamp="9999-12-31T23:59:59-05:00"),
        "bigint.json": scenario(importance=0.5).replace("0.5", HUGE),
        "nan.json": scenario(importance=0.5).replace("0.5", "NaN"),
        "big.json": scenario(content="x" * 4000),
        "not_a_folder": "a file",
    }
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    fifo = folder / "fifo.json"
    if not fifo.exists() and hasattr(os, "mkfifo"):
        os.mkfifo(fifo)
    link = folder / "link.json"
    if not link.is_symlink():
        link.symlink_to("/dev/zero")
    (folder / "a_folder.json").mkdir(exist_ok=True)
    return folder


def cli_cases(folder: Path) -> list[CliCase]:
    """Every hostile command line, reading the files :func:`write_inputs` put in ``folder``."""
    f = {name: str(folder / name) for name in (
        "deep.json", "deep70.json", "surrogate_content.json", "surrogate_id.json", "surrogate_pairs.json",
        "year0.json", "year_out.json", "bigint.json", "nan.json", "big.json", "not_a_folder", "fifo.json",
        "link.json", "a_folder.json")}
    who = ("--tenant", "acme", "--user", "alice", "--embedder", "lexical")

    def recall(path: str, *more: str | bytes, query: str | bytes = "budget") -> tuple[str | bytes, ...]:
        return ("recall", "--scenario", path, *who, "--query", query, *more)

    def study(*more: str) -> tuple[str, ...]:
        return ("study", "--dataset", "workshop_en", "--mode", "lexical", *more)

    out = str(folder / "synth-out.json")
    cases = [
        CliCase("deep-json-scenario", recall(f["deep.json"]), ("deep.json", "nested too deeply")),
        CliCase("deep-json-70-levels", recall(f["deep70.json"]), ("deep70.json", "extra", "nested deeper than 64")),
        CliCase("deep-json-pairs", ("dedup", "--pairs", f["deep.json"], "--embedder", "lexical"),
                ("deep.json", "nested")),
        CliCase("deep-json-locomo", ("study", "--dataset", "locomo:" + f["deep.json"], "--mode", "lexical"),
                ("deep.json", "nested")),
        CliCase("surrogate-in-content", recall(f["surrogate_content.json"]),
                ("surrogate_content.json", "messages[0].content", "lone surrogate")),
        CliCase("surrogate-in-id", recall(f["surrogate_id.json"]),
                ("surrogate_id.json", "messages[0].user_id", "lone surrogate")),
        CliCase("surrogate-in-pairs", ("dedup", "--pairs", f["surrogate_pairs.json"], "--embedder", "lexical"),
                ("surrogate_pairs.json", "[0].incoming", "lone surrogate")),
        CliCase("query-not-utf8", recall(str(EN), query=b"\xff\xfe budget"), ("--query", "lone surrogate")),
        CliCase("tenant-not-utf8", ("recall", "--scenario", str(EN), "--tenant", b"ac\xffme", "--user", "alice",
                                    "--query", "budget", "--embedder", "lexical"), ("--tenant", "lone surrogate")),
        CliCase("timestamp-year-0", recall(f["year0.json"]), ("year0.json", "messages[0]", "timestamp")),
        CliCase("timestamp-past-9999", recall(f["year_out.json"]), ("year_out.json", "timestamp", "out of range")),
        CliCase("as-of-year-0", recall(str(EN), "--as-of", "0000-01-01T00:00:00Z"), ("--as-of", "0000-01-01")),
        CliCase("as-of-nan", recall(str(EN), "--as-of", "nan"), ("--as-of", "nan")),
        CliCase("json-5000-digit-number", recall(f["bigint.json"]), ("bigint.json", "4,300 digits")),
        CliCase("json-nan-literal", recall(f["nan.json"]), ("nan.json", "NaN")),
        CliCase("top-k-5000-digits", recall(str(EN), "--top-k", HUGE), ("--top-k", "invalid int value")),
        CliCase("threshold-1e5000", recall(str(EN), "--threshold", "1e5000"), ("threshold", "finite")),
        CliCase("study-top-k-5000-digits", study("--top-k", HUGE), ("top_k", "finite")),
        CliCase("data-dir-is-a-file", ("erase-audit", "--scenario", str(EN), *who, "--data-dir", f["not_a_folder"]),
                ("not_a_folder", "--data-dir", "not a folder")),
        CliCase("data-dir-dev-null", ("erase-audit", "--scenario", str(EN), *who, "--data-dir", "/dev/null"),
                ("/dev/null", "--data-dir", "device")),
        CliCase("data-dir-in-proc", ("erase-audit", "--scenario", str(EN), *who, "--data-dir", "/proc/self/mgl"),
                ("/proc/self/mgl", "--data-dir")),
        CliCase("threshold-tiny-step", study("--threshold", "0:1:1e-9"), ("threshold", "0:1:1e-9", "limit is 1,000")),
        CliCase("threshold-to-inf", study("--threshold", "0:inf:0.1"), ("threshold", "stop", "finite")),
        CliCase("threshold-nan", study("--threshold", "nan"), ("threshold", "nan", "finite")),
        CliCase("sweep-too-many-settings", study("--threshold", "0:1:0.002", "--top-k", "1:100:1"),
                ("sweep has 50,100 settings", "limit is 10,000")),
        CliCase("locomo-dev-zero", ("study", "--dataset", "locomo:/dev/zero", "--mode", "lexical"),
                ("/dev/zero", "LoCoMo file")),
        CliCase("scenario-dev-zero", recall("/dev/zero"), ("/dev/zero", "scenario file")),
        CliCase("pairs-dev-zero", ("dedup", "--pairs", "/dev/zero", "--embedder", "lexical"),
                ("/dev/zero", "pair file")),
        CliCase("scenario-procfs", recall("/proc/self/environ"), ("/proc/self/environ", "pseudo-file")),
        CliCase("scenario-fifo", recall(f["fifo.json"]), ("fifo.json", "FIFO")),
        CliCase("scenario-directory", recall(f["a_folder.json"]), ("a_folder.json", "directory")),
        CliCase("scenario-symlink-to-device", recall(f["link.json"]), ("link.json", "/dev/zero", "pseudo-file")),
        CliCase("scenario-over-size-cap", recall(f["big.json"]), ("big.json", "the limit is", "MEMORY_MAX_FILE_MB"),
                env={"MEMORY_MAX_FILE_MB": "0.001"}),
        CliCase("synth-huge-users", ("synth", "--users", str(10**12), "--out", out), ("users", "[1, 1,000]")),
        CliCase("synth-huge-messages", ("synth", "--messages", str(10**9), "--out", out), ("messages", "100,000")),
        CliCase("synth-users-times-messages", ("synth", "--users", "1000", "--messages", "100000", "--out", out),
                ("users x messages", "2,000,000")),
        CliCase("reliability-huge-scale", ("reliability", "--scale", str(10**9)), ("--scale", "[1, 100]")),
    ]
    return cases


CLI_CASE_NAMES: tuple[str, ...] = tuple(c.name for c in cli_cases(Path("/nonexistent")))


def run_cli_case(case: CliCase, *, timeout: float = 300) -> CliOutcome:
    """Run one case as ``python -m memory ...`` from the repository root."""
    argv = [os.fsencode(sys.executable), b"-m", b"memory", *(os.fsencode(a) for a in case.argv)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **case.env}
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=timeout, env=env)
    text = proc.stderr.decode("utf-8", "backslashreplace")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(NOTE_PREFIXES)]
    return CliOutcome(case, proc.returncode, lines)


def library_cases(
    embedder: Embedder, folder: Path, *, scale: int = 1,
) -> tuple[list[tuple[str, Callable[[], Any]]], Callable[[], bool]]:
    """(name, call) pairs, each of which must raise a typed error, and a test that the store the calls ran
    against still holds exactly what it held before (one record, one message in the window).

    ``folder`` holds :func:`write_inputs`' files; ``scale`` adds 20 random cases per unit.
    """
    from memory.core.config import MemoryConfig
    from memory.runtime.lifecycle import forget, set_valid_until
    from memory.runtime.manager import MemoryManager
    from memory.core.safefile import read_regular_file
    from memory.core.scenario import load_scenario, parse_scenario
    from memory.core.owner import Owner
    from memory.core.schema import Message, parse_time
    from memory.store.chroma import StoreLocation
    from memory.eval.study import parse_range, validate_options
    from memory.eval.synth import SynthSpec

    mm = MemoryManager(MemoryConfig(threshold=0.0), embedder=embedder, location=StoreLocation(),
                       workspace=f"inputs-{uuid.uuid4().hex[:10]}")
    mm.add(Message(tenant_id="acme", user_id="alice", id="a1", content="The campaign budget is 300,000 yuan.",
                   timestamp=parse_time("2026-05-01T10:00:00Z", "timestamp")))
    memory_id = mm.records(tenant_id="acme", user_id="alice")[0].memory_id

    def msg(**kw: Any) -> Callable[[], Any]:
        return lambda: Message(**{"tenant_id": "acme", "user_id": "alice", "content": "hello", **kw})

    def add(**kw: Any) -> Callable[[], Any]:
        return lambda: mm.add(msg(**kw)())

    def recent(user_id: str) -> Callable[[], Any]:
        return lambda: mm.recent(tenant_id="acme", user_id=user_id)

    nan, inf = float("nan"), float("inf")
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("identifier-lone-surrogate", lambda: Owner.of("acme", "al\ud800ice")),
        ("identifier-surrogateescape-byte", lambda: Owner.of("acme", os.fsdecode(b"al\xffice"))),
        ("message-content-surrogate", add(content="budget \udcff")),
        ("message-id-surrogate", add(id="m\udc001")),
        ("message-timestamp-nan", add(timestamp=nan)),
        ("message-timestamp-inf", add(timestamp=inf)),
        ("message-timestamp-5000-digits", add(timestamp=HUGE_INT)),
        ("message-timestamp-year-0", add(timestamp="0000-01-01T00:00:00Z")),
        ("message-timestamp-past-9999", add(timestamp=1e300)),
        ("message-importance-nan", add(importance=nan)),
        ("message-importance-5000-digits", add(importance=HUGE_INT)),
        ("retrieve-as-of-nan", lambda: mm.retrieve("budget", tenant_id="acme", user_id="alice", as_of=nan)),
        ("retrieve-as-of-year-0", lambda: mm.retrieve("budget", tenant_id="acme", user_id="alice",
                                                      as_of="0000-01-01T00:00:00Z")),
        ("retrieve-query-surrogate", lambda: mm.retrieve("budget \ud800", tenant_id="acme", user_id="alice")),
        ("forget-decay-negative", lambda: forget(mm, tenant_id="acme", user_id="alice", decay_rate=-5)),
        ("forget-decay-nan", lambda: forget(mm, tenant_id="acme", user_id="alice", decay_rate=nan)),
        ("forget-days-nan", lambda: forget(mm, tenant_id="acme", user_id="alice", days=nan)),
        ("forget-floor-bool", lambda: forget(mm, tenant_id="acme", user_id="alice", floor=True)),
        ("forget-as-of-inf", lambda: forget(mm, tenant_id="acme", user_id="alice", as_of=inf)),
        ("valid-until-nan", lambda: set_valid_until(mm, memory_id, tenant_id="acme", user_id="alice", valid_until=nan)),
        ("config-5000-digit-int", lambda: MemoryConfig(top_k=HUGE_INT)),
        ("range-tiny-step", lambda: parse_range("0:1:1e-9", name="threshold")),
        ("range-to-inf", lambda: parse_range("0:inf:0.1", name="threshold")),
        ("range-nan", lambda: parse_range("nan", name="threshold")),
        ("range-endless-iterator", lambda: parse_range(iter(lambda: 0.5, None), name="threshold")),
        ("sweep-too-many-settings", lambda: validate_options(thresholds="0:1:0.002", top_ks="1:100:1",
                                                             decay_rates="0")),
        ("synth-huge-users", lambda: SynthSpec(users=10**12)),
        ("synth-users-times-messages", lambda: SynthSpec(users=1000, messages=100_000)),
        ("read-dev-zero", lambda: read_regular_file("/dev/zero", what="scenario file")),
        ("read-procfs", lambda: read_regular_file("/proc/self/status", what="scenario file")),
        ("read-directory", lambda: read_regular_file(folder / "a_folder.json", what="scenario file")),
        ("read-fifo", lambda: read_regular_file(folder / "fifo.json", what="scenario file")),
        ("read-symlink-leaving-root", lambda: read_regular_file(folder / "link.json", what="file", root=folder)),
        ("read-over-cap", lambda: read_regular_file(folder / "big.json", what="file", max_bytes=1000)),
        ("read-missing", lambda: read_regular_file(folder / "missing.json", what="file")),
        ("scenario-deep-json", lambda: load_scenario(folder / "deep.json")),
        ("scenario-5000-digit-number", lambda: load_scenario(folder / "bigint.json")),
        ("scenario-surrogate-text", lambda: parse_scenario('{"name": "x", "messages": ["\ud800"]}', source="upload")),
    ]
    rng = random.Random(scale)
    for i in range(10 * scale):  # random identifiers with a lone surrogate, random out-of-range times
        name = "".join(rng.choice("abcdé") for _ in range(rng.randint(1, 8)))
        cut = rng.randint(0, len(name))
        bad_id = name[:cut] + chr(rng.randint(0xD800, 0xDFFF)) + name[cut:]
        cases.append((f"random-surrogate-id-{i}", recent(bad_id)))
        bad_ts = rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(11.81, 300)
        cases.append((f"random-time-{i}", add(timestamp=bad_ts)))
    def unchanged() -> bool:
        return mm.store.count() == 1 and [m.id for m in mm.recent(tenant_id="acme", user_id="alice")] == ["a1"]

    return cases, unchanged


def run_cli_cases(cases: Sequence[CliCase]) -> list[CliOutcome]:
    """Run ``cases`` with :func:`run_cli_case`, two subprocesses at a time; the outcomes in the order of ``cases``."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run_cli_case, cases))


def check_inputs(embedder: Embedder, scale: int, folder: Path, *,
                 run_cli: Callable[[list[CliCase]], list[CliOutcome]] = run_cli_cases) -> Check:
    """Run every hostile CLI case (``run_cli``: subprocesses, two at a time) and every library case; count failures."""
    write_inputs(folder)
    check = Check("hostile_inputs")
    outcomes = run_cli(cli_cases(folder))
    failed = [o.case.name for o in outcomes if not o.ok]
    cases, unchanged = library_cases(embedder, folder, scale=scale)
    lib_failed = [name for name, call in cases if not _raises_typed(call)]
    if not unchanged():
        lib_failed.append("store-changed")
    check.cases = len(outcomes) + len(cases)
    check.failures = len(failed) + len(lib_failed)
    check.figures = {"cli_cases": len(outcomes), "library_cases": len(cases), "cli_failed": failed[:10],
                     "library_failed": lib_failed[:10]}
    return check


def _raises_typed(call: Callable[[], Any]) -> bool:
    """True when ``call`` raises one of TYPED_ERRORS; False when it returns or crashes with anything else."""
    try:
        call()
    except TYPED_ERRORS:
        return True
    except Exception:  # noqa: BLE001 - an untyped crash (OverflowError, RecursionError, ...) is what is counted
        return False
    return False
