"""Hostile settings files are data, parsed safely, at every entry point (issue 50, items 3-5).

The files: arrays and inline tables 50,000 deep (over the size cap) and 10,000-20,000 deep (under it), 5,000-digit
integers (JSON and TOML, in ``config`` and in ``provenance``, decimal and hex), quadratic TOML (a dotted key of
39,000 parts in 78 KB, and of 30,000 parts under the cap, in a key and in a table header), Markdown and HTML in
string fields and in the file's name, a 100 MB (sparse) file, a symlink to /dev/zero and a FIFO. The entry points:
the library's loader and parser, the CLI (in this process, and as ``python -m memory recall`` in a subprocess), the
MCP server's start (``python -m memory mcp ... --settings F`` in a subprocess, and ``server_config``) and the lab's
"Apply a settings file" uploader (AppTest). At each: a one-line DataFileError (status 2 and one stderr line for a
process), never a traceback, never a folder of the server in what the lab shows, at most 1 s of CPU for the file, and
refused before any model loads. A subprocess's CPU is its own (``os.wait4``'s rusage for that child), less the CPU of
the same command refused for a trivial reason (an empty object): the interpreter and the library's imports are not
the file's cost.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_inprocess import run_cli

from memory import DataFileError
from memory.core.datafile_limits import SETTINGS_LIMITS, check_json_text, check_toml_text
from memory.eval import OperatingPoint, load_operating_point, parse_operating_point
from memory.eval.operating_point import MAX_SETTINGS_BYTES

try:  # imported here, not in a test: the mcp SDK's import reads subprocess.Popen, which unit tests replace
    from memory.adapters import mcp_server
except ImportError:  # an optional extra (requirements-adapters.txt): the tests that need it skip
    mcp_server = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
CPU_LIMIT = 1.0
HEAD_JSON = '"format": "memory-governance-lab/operating-point", "version": 1'
HEAD_TOML = 'format = "memory-governance-lab/operating-point"\nversion = 1\nembedder = "minilm"\n'
LINK = "[Session expired: sign in](https://evil.example/login)"
IMAGE = "![x](https://evil.example/pixel.png)"
HTML = "<img src=https://evil.example/p.png><a href=https://evil.example>x</a>"
RECALL = ("recall", "--scenario", "workshop_en", "--tenant", "acme", "--user", "alice", "--query", "budget?")


def _json(body: str) -> bytes:
    return ("{" + HEAD_JSON + ", " + body + "}").encode()


CONTENT: dict[str, tuple[bytes, tuple[str, ...]]] = {
    # name -> (the file's bytes, words its one-line refusal must hold)
    "deep-array-50k.toml": ((HEAD_TOML + "[provenance]\nnote = " + "[" * 50_000 + "]" * 50_000 + "\n").encode(),
                            ("bytes", "65,536")),
    "deep-array-20k.toml": ((HEAD_TOML + "[provenance]\nnote = " + "[" * 20_000 + "]" * 20_000 + "\n").encode(),
                            ("line 5", "nested more than 16")),
    "deep-inline-50k.toml": ((HEAD_TOML + "[provenance]\nnote = " + "{a=" * 50_000 + "1" + "}" * 50_000 + "\n").encode(),
                             ("bytes", "65,536")),
    "deep-inline-10k.toml": ((HEAD_TOML + "[provenance]\nnote = " + "{a=" * 10_000 + "1" + "}" * 10_000 + "\n").encode(),
                             ("line 5", "nested more than 16")),
    "deep-array-50k.json": (_json('"provenance": {"note": ' + "[" * 50_000 + "]" * 50_000 + "}"), ("bytes",)),
    "deep-object-8k.json": (_json('"embedder": "minilm", "provenance": {"note": ' + '{"a": ' * 8_000 + "1"
                                  + "}" * 8_000 + "}"), ("line 1", "nested more than 16")),
    "bigint-config.json": (_json('"embedder": "minilm", "config": {"top_k": ' + "9" * 5000 + "}"),
                           ("a number of 5,000 characters",)),
    "bigint-provenance.json": (_json('"embedder": "minilm", "provenance": {"questions": ' + "9" * 5000 + "}"),
                               ("a number of 5,000 characters",)),
    "bigint-config.toml": ((HEAD_TOML + "[config]\ntop_k = " + "9" * 5000 + "\n").encode(),
                           ("line 5", "a number of 5,000 characters")),
    "bigint-provenance.toml": ((HEAD_TOML + "[provenance]\nquestions = " + "9" * 5000 + "\n").encode(),
                               ("line 5", "a number of 5,000 characters")),
    "bigint-hex.toml": ((HEAD_TOML + "[provenance]\nquestions = 0x" + "f" * 5000 + "\n").encode(),
                        ("line 5", "a number of 5,002 characters")),
    "bigfloat.json": (_json('"embedder": "minilm", "config": {"threshold": 0.' + "4" * 5000 + "}"),
                      ("a number of 5,002 characters",)),
    "dotted-78k.toml": ((HEAD_TOML + "a" + ".a" * 39_000 + " = 1\n").encode(), ("78,", "bytes")),
    "dotted-60k.toml": ((HEAD_TOML + "a" + ".a" * 30_000 + " = 1\n").encode(),
                        ("line 4", "a dotted key of 30,001 parts (at most 16)")),
    "dotted-header.toml": ((HEAD_TOML + "[a" + ".a" * 30_000 + "]\n").encode(), ("line 4", "30,001 parts")),
    "dotted-quoted.toml": ((HEAD_TOML + '"a"' + ' . "a"' * 9000 + " = 1\n").encode(), ("line 4", "9,001 parts")),
    "many-lines.toml": ((HEAD_TOML + "\n" * 20_000).encode(), ("20,004 lines",)),
    "markdown-link.json": (_json(f'"embedder": "{LINK}"'), ("embedder", "Session expired")),
    "markdown-image.toml": ((HEAD_TOML + f'judge = "{IMAGE}"\n').encode(), ("judge", "pixel.png")),
    "markdown-html.json": (_json(f'"embedder": "minilm", "write_path": "{HTML}"'), ("write_path", "evil.example")),
    "markdown-key.toml": ((HEAD_TOML + f'[provenance]\n"{LINK}" = 1\n').encode(), ("provenance", "Session expired")),
}
"""Files whose bytes are hostile: every entry point, the lab's upload included."""
PATH_ONLY = ("huge-100mb.json", "dev-zero-link.json", "fifo.json")
"""Files a path can name but an upload cannot hold (sparse 100 MB, a symlink to /dev/zero, a FIFO)."""
ALL_FILES = (*CONTENT, *PATH_ONLY)
IN_PROCESSES = ("deep-array-20k.toml", "deep-inline-50k.toml", "deep-array-50k.json", "bigint-config.json",
                "bigint-provenance.toml", "dotted-78k.toml", "dotted-60k.toml", "markdown-link.json", *PATH_ONLY)
"""One file of each kind, also given to real processes (every file goes through the same code in this process)."""
NAMED_WITH_A_LINK = "[Sign in](mailto:help@evil.example) ![x](https:evil.example).json"
"""An upload's name is the participant's words too (a browser sends a base name: no slash)."""
TRIVIAL = "trivial.json"
"""``{}``: refused at once (no format): the CPU of a command that reads a settings file and stops."""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hostile-settings")
    for name, (data, _) in CONTENT.items():
        (folder / name).write_bytes(data)
    with open(folder / "huge-100mb.json", "wb") as f:
        f.truncate(100 * 1024 * 1024)
    (folder / "dev-zero-link.json").symlink_to("/dev/zero")
    os.mkfifo(folder / "fifo.json")
    (folder / TRIVIAL).write_text("{}", encoding="utf-8")
    return folder


def _one_line_refusal(message: str, name: str) -> None:
    assert "\n" not in message and "Traceback" not in message, message
    assert name in message, (name, message)
    for word in CONTENT.get(name, (b"", ()))[1]:
        assert word in message, (word, message)


# --- the library ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_FILES)
def test_the_loader_refuses_each_file_in_one_line_within_a_second(hostile, name):
    start = time.process_time()
    with pytest.raises(DataFileError) as caught:
        load_operating_point(hostile / name)
    cpu = time.process_time() - start
    _one_line_refusal(str(caught.value), name)
    assert cpu <= CPU_LIMIT, (name, cpu)


@pytest.mark.parametrize("name", list(CONTENT))
def test_the_parser_names_the_file_alone_never_its_folder(name):
    data, _ = CONTENT[name]
    source = f"/srv/lab/private/{name}"
    start = time.process_time()
    with pytest.raises(DataFileError) as caught:
        parse_operating_point(data, source=source, toml=name.endswith(".toml"))
    assert time.process_time() - start <= CPU_LIMIT
    message = str(caught.value)
    _one_line_refusal(message, name)
    assert "/srv" not in message and "private" not in message, message
    assert message.startswith(f"{name}: "), message


def test_the_path_only_files_are_refused_before_a_byte_is_read(hostile):
    messages = {}
    for name in PATH_ONLY:
        with pytest.raises(DataFileError) as caught:
            load_operating_point(hostile / name)
        messages[name] = str(caught.value)
    assert "104,857,600 bytes; the limit is 65,536" in messages["huge-100mb.json"], messages
    assert "MEMORY_MAX_FILE_MB" not in messages["huge-100mb.json"], "the settings cap is fixed; no variable raises it"
    assert "kernel pseudo-file" in messages["dev-zero-link.json"], messages
    assert "FIFO" in messages["fifo.json"], messages


def test_a_study_file_still_loads_in_both_formats(tmp_path):
    """The limits leave every file a study writes alone, and text that only looks hostile inside strings too."""
    from memory import MemoryConfig

    point = OperatingPoint("minilm", "raw", "rules", MemoryConfig(threshold=0.4217, top_k=7, decay_rate=0.01),
                           {"dataset": "[[[{{{ a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r # ''' \"\"\"",
                            "note": "9" * 500, "questions": 304, "f1": 0.123456})
    for suffix in ("json", "toml"):
        assert load_operating_point(point.save(tmp_path / f"point.{suffix}")) == point


@pytest.mark.parametrize(("text", "toml", "words"), [
    ('x = """\n' + "[" * 40 + '\n"""\n', True, None),  # brackets in a multi-line string are text
    ("x = '" + "a." * 40 + "'\n", True, None),  # dots in a literal string are not a dotted key
    ('x = """a""""\n' + "a" + ".a" * 20 + " = 1\n", True, ("line 2", "21 parts")),  # """" closes, then code again
    ('x = "\\"' + "[" * 20 + '"\n', True, None),  # an escaped quote does not end the string
    ('x = "\\\n' + "[" * 20 + "\n", True, ("line 2", "nested")),  # a basic string ends at the line's end
    ("x = 1 # " + "[" * 40 + "\n", True, None),  # a comment
    ("[a.b]\nc.d = [1.5, 2.5]\n", True, None),
    ('{"a": "' + "[" * 40 + '\\" ' + "{" * 40 + '"}', False, None),
    ('{"a": [' + "1" * 65 + "]}", False, ("line 1", "65 characters")),
    ("{}" + "\n" * 1000, False, ("1,001 lines",)),
])
def test_the_scan_knows_strings_and_comments(text, toml, words):
    check = check_toml_text if toml else check_json_text
    if words is None:
        check(text, "f")
        return
    with pytest.raises(DataFileError) as caught:
        check(text, "f")
    for word in words:
        assert word in str(caught.value), str(caught.value)


def test_the_scan_is_linear_at_the_cap():
    """A file of 64 KB of the shapes the parsers find hardest, each under every limit, parses in well under a second:
    the limits, not luck, bound the parse."""
    cap, most_lines = SETTINGS_LIMITS.max_bytes, SETTINGS_LIMITS.max_lines - 10

    def fill(line_of) -> str:
        lines, size = [], len(HEAD_TOML)
        while size + len(line_of(len(lines))) < cap and len(lines) < most_lines:
            lines.append(line_of(len(lines)))
            size += len(lines[-1])
        assert size > cap - 100, "the shape fills the cap"
        return HEAD_TOML + "".join(lines)

    shapes = {
        "16-part keys": fill(lambda i: f"k{i:04d}" + ".aaaa" * 15 + " = 1\n"),
        "16-part headers": fill(lambda i: f"[k{i:04d}" + ".aaaa" * 14 + "]\n"),
        "16 deep": fill(lambda i: f"k{i:04d} = " + "[" * 16 + "1," * 24 + "]" * 16 + "\n"),
        "long numbers": fill(lambda i: f"k{i:04d} = [" + "9" * 64 + "]\n"),
    }
    for what, text in shapes.items():
        check_toml_text(text, "p.toml")  # under every limit
        start = time.process_time()
        with pytest.raises(DataFileError, match="unknown field 'k0000'"):  # parsed, then not an operating point
            parse_operating_point(text, source="p.toml", toml=True)
        assert time.process_time() - start <= 0.5, what


# --- the CLI and the MCP server, in this process ----------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_FILES)
def test_the_cli_refuses_each_file_before_the_model_loads(hostile, name, monkeypatch):
    import memory.embed.embedders as embedders

    def no_model(*_args, **_kwargs):
        raise AssertionError("a model loaded before the settings file was refused")

    monkeypatch.setattr(embedders, "make_embedder", no_model)
    start = time.process_time()
    done = run_cli(*RECALL, "--settings", str(hostile / name))
    cpu = time.process_time() - start
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    _one_line_refusal(lines[0], name)
    assert cpu <= CPU_LIMIT, (name, cpu)


@pytest.mark.parametrize("name", ALL_FILES)
def test_the_mcp_command_reads_the_settings_before_the_server_is_configured(hostile, name, monkeypatch):
    """``python -m memory mcp`` refuses the file before it configures, opens or serves anything: the adapters'
    server_config is never reached (it would fail this test)."""
    _require_mcp()

    def not_reached(**_kwargs):
        raise AssertionError("the server was configured before the settings file was refused")

    monkeypatch.setattr(mcp_server, "server_config", not_reached)
    done = run_cli("mcp", "--tenant", "t", "--user", "u", "--settings", str(hostile / name))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    _one_line_refusal(lines[0], name)


@pytest.mark.parametrize("name", ["deep-inline-10k.toml", "bigint-config.toml", "dotted-header.toml",
                                  "huge-100mb.json"])
def test_server_config_refuses_a_path_in_one_line(hostile, name, tmp_path):
    _require_mcp()
    server_config = mcp_server.server_config
    with pytest.raises(DataFileError) as caught:
        server_config(tenant="t", user="u", settings=hostile / name, data_dir=tmp_path / "data")
    _one_line_refusal(str(caught.value), name)
    point = OperatingPoint("lexical", "raw")
    assert server_config(tenant="t", user="u", settings=point, data_dir=tmp_path / "data").point is point


def _require_mcp() -> None:
    if mcp_server is None:
        from optional import require_adapter_package

        require_adapter_package("mcp")  # skips (fails under MEMORY_REQUIRE_ADAPTERS=1)


# --- real processes: the CLI and the MCP server's start ---------------------------------------------------------


@dataclass(frozen=True)
class Child:
    returncode: int
    stdout: str
    lines: list[str]
    cpu: float
    """The child's own user + system CPU seconds (os.wait4's rusage of that process)."""


def _child(argv: list[str]) -> Child:
    """``python -m memory ARGV`` from the repository root, stdin closed; its status, output and own CPU time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "memory", *argv], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err)
        deadline = time.monotonic() + 120
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        text = err.read().decode("utf-8", "backslashreplace")
        return Child(proc.returncode, out.read().decode("utf-8", "backslashreplace"),
                     [ln for ln in text.splitlines() if ln.strip()], usage.ru_utime + usage.ru_stime)


def _children(commands: dict[str, list[str]]) -> dict[str, Child]:
    with ThreadPoolExecutor(max_workers=2) as pool:  # two at a time: the machine has two cores
        futures = {key: pool.submit(_child, argv) for key, argv in commands.items()}
        return {key: future.result() for key, future in futures.items()}


@pytest.fixture(scope="module")
def cli_children(hostile) -> dict[str, Child]:
    """Each of IN_PROCESSES (and the trivial file) given to ``python -m memory recall ... --settings F``."""
    return _children({name: [*RECALL, "--settings", str(hostile / name)] for name in (TRIVIAL, *IN_PROCESSES)})


@pytest.fixture(scope="module")
def mcp_children(hostile, tmp_path_factory) -> tuple[dict[str, Child], dict[str, Path]]:
    """Each of IN_PROCESSES (and the trivial file) given to ``python -m memory mcp --tenant t --user u --settings F
    --data-dir D``, D fresh for each: (the outcomes, the data folders)."""
    base = tmp_path_factory.mktemp("mcp-data")
    dirs = {name: base / f"d{i}" for i, name in enumerate((TRIVIAL, *IN_PROCESSES))}
    commands = {name: ["mcp", "--tenant", "t", "--user", "u", "--settings", str(hostile / name),
                       "--data-dir", str(dirs[name])] for name in dirs}
    return _children(commands), dirs


@pytest.mark.process
@pytest.mark.parametrize("name", IN_PROCESSES)
def test_the_cli_process_exits_2_with_one_line_within_a_second_of_cpu(cli_children, name):
    child, trivial = cli_children[name], cli_children[TRIVIAL]
    assert trivial.returncode == 2 and len(trivial.lines) == 1, trivial.lines
    assert child.returncode == 2, child.lines
    assert len(child.lines) == 1 and child.lines[0].startswith("error: "), child.lines
    _one_line_refusal(child.lines[0], name)
    assert child.stdout == ""
    assert child.cpu - trivial.cpu <= CPU_LIMIT, (name, child.cpu, trivial.cpu)


@pytest.mark.process
@pytest.mark.parametrize("name", IN_PROCESSES)
def test_the_mcp_server_exits_2_at_start_with_one_line_before_it_opens_anything(mcp_children, name):
    children, dirs = mcp_children
    child, trivial = children[name], children[TRIVIAL]
    assert trivial.returncode == 2 and len(trivial.lines) == 1, trivial.lines
    assert child.returncode == 2, child.lines
    assert len(child.lines) == 1 and child.lines[0].startswith("error: "), child.lines
    _one_line_refusal(child.lines[0], name)
    assert child.stdout == "", "nothing on the stdio wire"
    assert not dirs[name].exists(), "the memory was never opened (so no model loaded)"
    assert child.cpu - trivial.cpu <= CPU_LIMIT, (name, child.cpu, trivial.cpu)


@pytest.mark.process
def test_no_child_loaded_a_model(cli_children, mcp_children):
    """A model takes seconds of CPU to load; every refusal costs what refusing ``{}`` costs, give or take."""
    children = {**{f"cli {k}": v for k, v in cli_children.items()},
                **{f"mcp {k}": v for k, v in mcp_children[0].items()}}
    assert not [k for k, c in children.items() if any("loading" in line or "serving" in line for line in c.lines)]
    worst = max(children.items(), key=lambda kv: kv[1].cpu)
    assert worst[1].cpu <= max(cli_children[TRIVIAL].cpu, mcp_children[0][TRIVIAL].cpu) + CPU_LIMIT, worst


# --- the lab ----------------------------------------------------------------------------------------------------


LAB_GROUPS = {
    "deep-and-numbers": [n for n in CONTENT if n.startswith(("deep", "big"))] + ["huge-100mb.json"],
    "dotted-and-markdown": [n for n in CONTENT if not n.startswith(("deep", "big"))] + [NAMED_WITH_A_LINK],
}
"""The uploads, in two sessions of the lab (each about a dozen runs of the study page)."""


@pytest.mark.app
@pytest.mark.parametrize("group", LAB_GROUPS)
def test_the_lab_shows_each_refusal_escaped_and_keeps_the_sidebar(group):
    """Hostile files uploaded in turn on the study page (a 100 MB upload and a file named with a link among them):
    no exception, one error naming the file by its name, no Markdown rendered from the file (no link, no image), the
    sidebar as it was, and the callback's CPU (the page's run, less a run refusing ``{}``) under a second."""
    from test_app import open_app
    from test_app_hostile_links import assert_no_markup

    from lab import i18n

    at = open_app("lab/pages/study.py", embedder="lexical")
    keys = ("threshold", "top_k", "decay_rate")

    def uploader():
        return [u for u in at.file_uploader if u.label == i18n.TEXT["agents.apply"]["en"]][0]

    def sidebar():
        return ({k: at.sidebar.slider(key=k).value for k in keys}, at.sidebar.selectbox(key="embedder").value,
                at.sidebar.selectbox(key="write_path").value)

    def upload(name: str, data: bytes) -> tuple[float, list[str]]:
        start = time.process_time()
        uploader().set_value((name, data, "application/octet-stream")).run()
        cpu = time.process_time() - start
        assert not at.exception, [e.value for e in at.exception]
        return cpu, [e.value for e in at.error]

    assert uploader().proto.max_upload_size_mb == 1, "the browser refuses more than 1 MB"
    before = sidebar()
    baseline, _ = upload(TRIVIAL, b"{}")
    every = {**{name: data for name, (data, _) in CONTENT.items()}, NAMED_WITH_A_LINK: b"{}"}
    files = {name: every[name] if name in every else b"\0" * (100 * 1024 * 1024) for name in LAB_GROUPS[group]}
    cpus, shown = {}, {}
    for name, data in files.items():
        cpu, errors = upload(name, data)
        assert len(errors) == 1, (name, errors)
        message = errors[0]
        assert "\n" not in message and "Traceback" not in message, message
        assert str(ROOT) not in message and tempfile.gettempdir() not in message, message
        shown[name] = message.replace("\\", "").replace("\u2060", "")  # as the reader sees it
        assert name in shown[name], (name, message)
        for word in CONTENT.get(name, (b"", ()))[1]:
            assert word in shown[name], (word, message)
        assert_no_markup(at)
        assert sidebar() == before, name
        cpus[name] = cpu - baseline
    assert max(cpus.values()) <= CPU_LIMIT, cpus
    if "huge-100mb.json" in shown:
        assert "104,857,600 bytes; at most 65,536" in shown["huge-100mb.json"], shown["huge-100mb.json"]
    else:
        assert "Session expired" in shown["markdown-link.json"] and "pixel.png" in shown["markdown-image.toml"]


def test_the_cap_is_one_constant_everywhere():
    assert MAX_SETTINGS_BYTES == SETTINGS_LIMITS.max_bytes == 64 * 1024
