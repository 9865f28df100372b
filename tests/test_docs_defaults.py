"""The documentation states the code's defaults, indexes every page, and the README keeps CI's test command and its
dependency list (issue 52; unit tests: they read files and import constants, no model, no process).

docs/README.md's "Defaults" table names every default the documentation states (`` | `name` | value | ``); each row
is compared with the value the code uses. Any other statement of a known default in README.md or docs/*.md, written
`` `name` = value `` (docs/lab.md's sidebar table) or `` `name` (default value) ``, is compared too, and so is the
option table of docs/study.md against the CLI's own parser. Change a default in the code and one of these fails."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
INDEX = DOCS / "README.md"
README = ROOT / "README.md"

VALUE = r"\d[\d,]*(?:\.\d+)?|[^\s`|;:,)]+"
"""A stated value: a number (thousands may be comma-separated) or a word (``facts``, ``.memory-data``)."""
STATED = re.compile(rf"`(?P<name>[\w.@-]+)` = `?(?P<eq>{VALUE})"
                    rf"|`(?P<name2>[\w.@-]+)`[^`\n|]{{0,24}}?\(default:?\s+`?(?P<dflt>{VALUE})")
"""A default stated in prose or a table: `` `name` = value `` or `` `name` ... (default value ``."""
ROW = re.compile(r"^\| `(?P<name>[^`]+)` \| (?P<value>[^|]+?) \|", re.M)


def _constant(path: Path, name: str) -> Any:
    """A module-level constant read from the source without importing it (the agent adapters need optional packages)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} sets no constant {name}")


def _keyword_default(path: Path, cls: str, arg: str) -> Any:
    """The default of keyword ``arg`` of ``cls.__init__``, read from the source without importing it."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            init = next(f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
            for a, d in zip(init.args.kwonlyargs, init.args.kw_defaults):
                if a.arg == arg and d is not None:
                    return ast.literal_eval(d)
    raise AssertionError(f"{path.name}: {cls}.__init__ has no keyword {arg} with a default")


def _cli_defaults(command: str) -> dict[str, Any]:
    """Option -> default of one ``python -m memory`` subcommand, from the CLI's own parser."""
    import argparse

    from memory.tools.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {opt: a.default for a in sub.choices[command]._actions for opt in a.option_strings}


@pytest.fixture(scope="module")
def monkeypatch_module():
    """A monkeypatch for the module: the defaults are read with the environment variables that override them unset."""
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def code(monkeypatch_module) -> dict[str, list[tuple[str, Any]]]:
    """Every documented default's name -> where the code sets it and the value there (each must equal the docs')."""
    from lab import state
    from lab.i18n import LANGUAGES
    from lab.rooms import DEFAULT_IDLE_MINUTES, DEFAULT_MAX_LABS
    from memory import DEFAULT_JUDGE, MemoryConfig, MemoryManager, make_embedder
    from memory.core.datafile_limits import SETTINGS_LIMITS
    from memory.core.safefile import max_file_bytes
    from memory.eval import MAX_SETTINGS_BYTES, OperatingPoint
    from memory.eval.calibration import config_for
    from memory.eval.study import MAX_SWEEP_POINTS, MAX_SWEEP_SETTINGS
    from memory.runtime.manager import PLAN_CHARS, PLAN_MESSAGES, write_wait_seconds
    from memory.store.chroma import DEFAULT_CACHE_MB, EXACT_SCAN_MAX, StoreLocation
    from memory.store.space import reserve_bytes
    from memory.write.extract import DEFAULT_READ_CHARS
    from serve import warm_languages

    for env in ("MEMORY_MAX_FILE_MB", "MEMORY_DISK_RESERVE_MB", "MEMORY_WRITE_WAIT_S", "MEMORY_DATA_DIR",
                "MEMORY_CHROMA_HOST", "MEMORY_MAX_UPLOAD_MESSAGES"):
        monkeypatch_module.delenv(env, raising=False)
    config, lab = MemoryConfig(), state.widget_defaults("en")
    point = {f.name: f.default for f in dataclasses.fields(OperatingPoint)}
    study = _cli_defaults("study")
    found: dict[str, list[tuple[str, Any]]] = {
        name: [(f"MemoryConfig.{name}", getattr(config, name))] for name in (f.name for f in dataclasses.fields(config))}
    for name in ("threshold", "top_k", "window_size", "decay_rate", "alpha", "beta", "gamma", "duplicate_band",
                 "conflict_band", "token_budget"):
        found[name].append((f"the lab's sidebar ({name})", lab[name]))
    e5, e5_zh, lexical = config_for("e5"), config_for("e5", language="zh"), config_for("lexical")
    found |= {
        "threshold@e5": [('config_for("e5")', e5.threshold)],
        "threshold@e5@zh": [('config_for("e5", language="zh")', e5_zh.threshold)],
        "threshold@lexical": [('config_for("lexical")', lexical.threshold)],
        "duplicate_band@e5": [('config_for("e5")', e5.duplicate_band)],
        "conflict_band@e5": [('config_for("e5")', e5.conflict_band)],
        "write_path": [("lab.state.DEFAULT_WRITE_PATH", state.DEFAULT_WRITE_PATH), ("lab sidebar", lab["write_path"]),
                       ("OperatingPoint.write_path", point["write_path"]), ("study --write-path", study["--write-path"])],
        "judge": [("memory.DEFAULT_JUDGE", DEFAULT_JUDGE), ("lab.state.DEFAULT_JUDGE", state.DEFAULT_JUDGE),
                  ("lab sidebar", lab["judge"]), ("OperatingPoint.judge", point["judge"]),
                  ("study --judge", study["--judge"])],
        "make_embedder": [("make_embedder()", inspect.signature(make_embedder).parameters["name"].default),
                          ("study --embedder", study["--embedder"]), ("OperatingPoint.embedder", point["embedder"])],
        "embedder": [("lab.state.DEFAULT_EMBEDDER", state.DEFAULT_EMBEDDER), ("lab sidebar", lab["embedder"])],
        "scenario": [('DEFAULT_SCENARIOS["en"]', state.DEFAULT_SCENARIOS["en"]), ("lab sidebar", lab["scenario"])],
        "scenario@zh": [('DEFAULT_SCENARIOS["zh"]', state.DEFAULT_SCENARIOS["zh"])],
        "lang": [("lab.i18n.LANGUAGES (its first)", next(iter(LANGUAGES)))],
        "MEMORY_LAB_MAX_LABS": [("lab.rooms.DEFAULT_MAX_LABS", DEFAULT_MAX_LABS)],
        "MEMORY_LAB_IDLE_MINUTES": [("lab.rooms.DEFAULT_IDLE_MINUTES", DEFAULT_IDLE_MINUTES)],
        "MEMORY_MAX_UPLOAD_MESSAGES": [("lab.state.max_upload_messages()", state.max_upload_messages())],
        "server.maxUploadSize": [(".streamlit/config.toml", tomllib.loads(
            (ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))["server"]["maxUploadSize"])],
        "MEMORY_LAB_WARM": [("serve.warm_languages(None)", ",".join(warm_languages(None)))],
        "MEMORY_MAX_FILE_MB": [("max_file_bytes() / 2**20", max_file_bytes() / 2**20)],
        "MAX_SETTINGS_BYTES": [("memory.eval.MAX_SETTINGS_BYTES", MAX_SETTINGS_BYTES)],
        "settings_max_lines": [("SETTINGS_LIMITS.max_lines", SETTINGS_LIMITS.max_lines)],
        "settings_max_depth": [("SETTINGS_LIMITS.max_depth", SETTINGS_LIMITS.max_depth)],
        "MEMORY_DATA_DIR": [("StoreLocation.from_env().data_dir", str(StoreLocation.from_env().data_dir))],
        "MEMORY_VECTOR_CACHE_MB": [("memory.store.chroma.DEFAULT_CACHE_MB", DEFAULT_CACHE_MB)],
        "EXACT_SCAN_MAX": [("memory.store.chroma.EXACT_SCAN_MAX", EXACT_SCAN_MAX)],
        "MEMORY_DISK_RESERVE_MB": [("reserve_bytes() / 2**20", reserve_bytes() / 2**20)],
        "MEMORY_WRITE_WAIT_S": [("write_wait_seconds()", write_wait_seconds())],
        "PLAN_MESSAGES": [("memory.runtime.manager.PLAN_MESSAGES", PLAN_MESSAGES)],
        "PLAN_CHARS": [("memory.runtime.manager.PLAN_CHARS", PLAN_CHARS)],
        "DEFAULT_READ_CHARS": [("memory.write.extract.DEFAULT_READ_CHARS", DEFAULT_READ_CHARS)],
        "MAX_SWEEP_POINTS": [("memory.eval.study.MAX_SWEEP_POINTS", MAX_SWEEP_POINTS)],
        "MAX_SWEEP_SETTINGS": [("memory.eval.study.MAX_SWEEP_SETTINGS", MAX_SWEEP_SETTINGS)],
        "disk_scan": [("MemoryManager.erase_user(disk_scan=...)",
                       inspect.signature(MemoryManager.erase_user).parameters["disk_scan"].default)],
        "user_at": [("GovernedStore(user_at=...)",
                     _keyword_default(ROOT / "memory" / "adapters" / "langgraph_store.py", "GovernedStore", "user_at"))],
        "mcp_port": [("memory.adapters.mcp_server.DEFAULT_PORT",
                      _constant(ROOT / "memory" / "adapters" / "mcp_server.py", "DEFAULT_PORT"))],
    }
    return found


def _same(stated: str, value: Any) -> bool:
    """A value as the docs write it (``0.30``, ``2,000``, ``facts``) against the code's."""
    stated = stated.strip().strip("`").rstrip(",.")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return stated == str(value)
    try:
        return float(stated.replace(",", "")) == pytest.approx(float(value))
    except ValueError:
        return False


def _table() -> dict[str, str]:
    """docs/README.md's "Defaults" table: name -> the value as written."""
    text = INDEX.read_text(encoding="utf-8").split("\n## Defaults\n", 1)[1]
    return {m["name"]: m["value"] for m in ROW.finditer(text)}


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def test_the_defaults_table_states_every_default_the_code_sets_as_the_code_sets_it(code):
    """Each row of docs/README.md's table against every place in the code that sets it; no row the test cannot check,
    no checked default missing from the table."""
    table = _table()
    assert sorted(table) == sorted(code), (sorted(set(table) - set(code)), sorted(set(code) - set(table)))
    wrong = [(name, table[name], where, value) for name in table for where, value in code[name]
             if not _same(table[name], value)]
    assert not wrong, wrong


def test_every_default_stated_in_the_readme_and_the_docs_is_the_codes(code):
    """`` `name` = value `` and `` `name` (default value) `` anywhere in README.md and docs/*.md, for every known
    name: the value must be the code's (a page that states a default in another words is not checked: write it in one
    of these forms)."""
    checked, wrong = 0, []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for m in STATED.finditer(text):
            name, stated = (m["name"], m["eq"]) if m["name"] else (m["name2"], m["dflt"])
            if name not in code:
                continue
            checked += 1
            line = text.count("\n", 0, m.start()) + 1
            wrong += [(f"{page.relative_to(ROOT)}:{line}", name, stated, where, value)
                      for where, value in code[name] if not _same(stated, value)]
    assert not wrong, wrong
    assert checked >= 25, checked  # docs/lab.md's sidebar table, the room and file caps in lab.md, trust.md, library.md


def test_the_study_options_table_gives_the_clis_own_defaults():
    """docs/study.md's option table (`` | `--opt` | meaning | `default` | ``) against `python -m memory study`'s parser."""
    text = (DOCS / "study.md").read_text(encoding="utf-8")
    table = text.split("| option | meaning | default |", 1)[1].split("\n\n", 1)[0]
    defaults, checked = _cli_defaults("study"), 0
    for row in table.strip().splitlines()[1:]:
        options, _, stated = (cell.strip() for cell in row.strip("|").split("|"))
        values = re.findall(r"`([^`]*)`", stated)
        if not values:  # "required", "none", "no budget", "off"
            continue
        names = re.findall(r"`(--[\w-]+)`", options)
        assert len(names) == len(values), row
        for name, value in zip(names, values):
            assert str(defaults[name]) == value, (name, value, defaults[name])
            checked += 1
    assert checked >= 8, checked


def test_the_docs_index_lists_every_page_of_docs():
    """docs/README.md links every .md of docs/ (itself excepted), each with a line saying what it is for, and links
    nothing that is not there."""
    text = INDEX.read_text(encoding="utf-8").split("\n## Defaults\n", 1)[0]
    listed = re.findall(r"^\| \[([^\]]+)\]\(([^)]+)\) \| (.+) \|$", text, re.M)
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert {target for _, target, _ in listed} == pages, ({t for _, t, _ in listed} ^ pages)
    assert all(len(what.split()) >= 5 for _, _, what in listed), listed


def test_the_readme_prints_cis_test_command_and_lists_every_dependency():
    """The README's test command is the one `.ci/run` runs (it says: exactly as printed there), in a bash block after
    "Run the tests:"; every package of requirements*.txt has a row in its dependency table. The README stays short."""
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(ci) if line.startswith("# The README's test command"))
    command = next(line for line in ci[start + 1:] if line.startswith("pip "))
    assert command.startswith("pip install -r requirements.txt && pytest"), command
    assert f"Run the tests:\n\n```bash\n{command}\n```" in readme, command
    table = readme.split("## Dependencies, and why each is there", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"`([\w.-]+)(?:==[\w.]+)?`", table))
    for req in ("requirements.txt", "requirements-adapters.txt"):
        for line in (ROOT / req).read_text(encoding="utf-8").splitlines():
            name = line.split("==")[0].strip()
            if name and not name.startswith(("#", "-r")):
                assert name in rows, (req, name)
    assert len(readme.splitlines()) <= 350


def test_the_labs_shipped_streamlit_settings_are_the_ones_docs_lab_md_gives():
    """docs/lab.md's "Safe to share" table (`` | `section.key` | `value` | why | ``) against .streamlit/config.toml."""
    shipped = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    text = (DOCS / "lab.md").read_text(encoding="utf-8").split("| setting | value | why |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| `(\w+)\.(\w+)` \| `([^`]+)`", text, re.M)
    assert len(rows) >= 4, rows
    for section, key, value in rows:
        assert str(shipped[section][key]).lower() == value.strip('"').lower(), (section, key, value)


def test_every_settings_file_cap_the_pages_state_is_the_codes():
    """A paragraph about settings files that gives a size in KB (the README's "at most 64 KB", trust.md's, study.md's)
    gives the code's cap."""
    from memory.eval import MAX_SETTINGS_BYTES

    stated = [(page.name, int(kb)) for page in _pages()
              for paragraph in page.read_text(encoding="utf-8").split("\n\n")
              if re.search(r"ettings[ -]files?", paragraph) for kb in re.findall(r"\b(\d+) KB\b", paragraph)]
    assert {page for page, _ in stated} >= {"README.md", "trust.md", "study.md"}, stated
    assert all(kb * 1024 == MAX_SETTINGS_BYTES for _, kb in stated), stated


def test_every_relative_link_of_the_readme_and_the_docs_leads_to_a_file():
    """A page moved or renamed leaves no dead link behind in README.md or docs/*.md."""
    dead = [(page.name, target) for page in _pages()
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
            if "://" not in target and not (page.parent / target).exists()]
    assert not dead, dead


def test_the_readmes_settings_file_and_mcp_configuration_are_what_the_code_reads(tmp_path):
    """The README's settings file loads as an operating point (the defaults' write path and judge, the study's
    threshold), and its MCP client configuration is JSON that starts `python -m memory mcp`."""
    import json

    from memory import DEFAULT_JUDGE
    from memory.eval import load_operating_point

    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", README.read_text(encoding="utf-8"), re.S)]
    point_text = next(b for b in blocks if b.get("format") == "memory-governance-lab/operating-point")
    (tmp_path / "point.json").write_text(json.dumps(point_text), encoding="utf-8")
    point = load_operating_point(tmp_path / "point.json")
    assert (point.write_path, point.judge, point.config.threshold) == ("facts", DEFAULT_JUDGE, 0.35)
    server = next(b for b in blocks if "mcpServers" in b)["mcpServers"]["memory"]
    assert server["args"][:3] == ["-m", "memory", "mcp"], server
