"""The package installs whole (issue 52): a wheel built from this tree, installed in a fresh venv outside the
repository, runs the CLI's demo, the lab's pages and the ``memory-lab`` command from there.

One wheel and one venv per run (about 6 s): the tree is copied without tests/, bench/, docs/ or
fixtures/ (so the build needs none of them), built with ``pip wheel --no-build-isolation`` (offline), and installed
with ``--no-deps --no-index`` into a venv made with ``--system-site-packages`` (the dependencies come from this
machine, nothing is downloaded). Every command runs from an empty temporary folder, without PYTHONPATH, and
``memory`` and ``lab`` are checked to be the venv's own (the repository is not on sys.path).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from lab import PAGES
from memory.core.scenario import SCENARIOS_DIR, load_scenario
from memory.eval.pairs import PAIRS_DIR, load_pairs, shipped_pair_files

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parent.parent
LEFT_OUT = {".git", "tests", "bench", "docs", "fixtures", "test-artifacts", "build", "dist", "data", ".memory-data"}
"""Top-level entries of the repository the build is given without (besides caches and hidden tool folders)."""
RUNTIME_FILES = ("memory/eval/score_scales.json", "memory/write/judges/judge_model.json",
                 "memory/write/judges/chat_prompt.md", "lab/locales/en.json", "lab/locales/zh.json")
"""Package data the library and the lab read at run time, beside the scenarios, the pages and the entry scripts."""
ENTRY = ("app.py", "serve.py", ".streamlit/config.toml")


def _source_copy(dst: Path) -> Path:
    """The working tree as a build sees it: no tests, benches, docs, training or held-out sets (fixtures/), caches or
    build leftovers."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        top = Path(folder).resolve() == ROOT
        return {n for n in names if n in ("__pycache__", ".DS_Store") or n.endswith((".pyc", ".egg-info"))
                or (top and (n in LEFT_OUT or (n.startswith(".") and n != ".streamlit")))}

    shutil.copytree(ROOT, dst, ignore=ignore)
    return dst


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "MEMORY_DATA_DIR", "MEMORY_CHROMA_HOST", "MEMORY_LAB_WARM")}
    return {**env, **extra}


class Installed:
    """The venv holding the installed wheel, and a way to run its Python from a folder far from the repository."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.wheel = next((base / "dist").glob("*.whl"))
        self.venv = base / "venv"
        self.python = self.venv / "bin" / "python"
        self.site = next((self.venv / "lib").glob("python3*/site-packages"))
        self.work = base / "work"
        self.work.mkdir(exist_ok=True)

    def run(self, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.python), *args], cwd=self.work, env=_env(**env), capture_output=True,
                              text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    """Built and installed once per run: under pytest-xdist the first worker to get here builds in the run's shared
    temporary folder while the others wait on its lock, then use the same venv."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # the run's folder is the parent of each worker's own
    shared = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    with open(shared / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = shared / "wheel"
        if not (base / "installed").is_file():
            shutil.rmtree(base, ignore_errors=True)
            _build_and_install(base)
            (base / "installed").touch()
    return Installed(base)


def _build_and_install(base: Path) -> None:
    src = _source_copy(base / "src")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                            "-q", "-w", str(base / "dist"), str(src)], capture_output=True, text=True, timeout=180)
    assert built.returncode == 0, built.stderr[-2000:]
    # --without-pip: the venv runs the machine's pip (a system site package), which installs into the venv
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(base / "venv")],
                   check=True, timeout=60)
    inst = Installed(base)
    done = inst.run("-m", "pip", "install", "--no-deps", "--no-index", "-q", str(inst.wheel))
    assert done.returncode == 0, done.stderr[-2000:]
    where = inst.run("-c", "import sys, memory, lab; print(memory.__file__, lab.__file__, ':'.join(sys.path))")
    assert where.returncode == 0, where.stderr
    memory_file, lab_file, path = where.stdout.split()
    assert Path(memory_file).is_relative_to(inst.site) and Path(lab_file).is_relative_to(inst.site), where.stdout
    assert str(ROOT) not in path.split(":"), path


def test_the_wheel_carries_every_file_read_at_run_time_and_no_training_or_held_out_set(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    scenarios = sorted(p.name for p in SCENARIOS_DIR.glob("*.json"))
    assert {"workshop_en.json", "workshop_zh.json", "recall_zh.json", "seed_demo_zh.json"} <= set(scenarios)
    assert {f"memory/scenarios/{name}" for name in scenarios} <= names
    pairs = sorted(p.name for p in PAIRS_DIR.glob("*.json"))  # the Dedup page's teaching sets
    assert pairs == ["dedup_pairs_en.json", "dedup_pairs_zh.json"]
    assert {f"memory/scenarios/pairs/{name}" for name in pairs} <= names
    assert set(RUNTIME_FILES) <= names
    in_packages = {p.relative_to(ROOT).as_posix() for folder in ("memory", "lab") for p in (ROOT / folder).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts}
    assert in_packages - names == set(), "files in the packages the wheel leaves out (pyproject.toml package-data)"
    assert {spec.path for spec in PAGES} <= names
    for name in ENTRY:  # the lab's entry scripts, copied by setup.py, byte for byte the repository's
        assert (installed.site / "lab" / "_app" / name).read_bytes() == (ROOT / name).read_bytes(), name
    fixtures = ROOT / "fixtures"  # the judge's training and held-out sets: training and benches only
    judge_sets = {p.name for folder in ("training", "independent") for p in (fixtures / folder).rglob("*.json")}
    assert len(judge_sets) > 50
    assert not [n for n in names if n.rsplit("/", 1)[-1] in judge_sets or "fixtures/" in n or "training/" in n
                or "independent/" in n or n.startswith(("tests/", "bench/"))]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "memory-lab = lab.launch:main" in zipfile.ZipFile(installed.wheel).read(entry_points).decode()


def test_installed_demo_replays_the_seed_scenario(installed):
    """``python -m memory demo`` reads its scenario from the package: the seed's two thresholded records."""
    done = installed.run("-m", "memory", "demo")
    assert done.returncode == 0, done.stderr[-2000:]
    thresholded = done.stdout.split("thresholded:")[1]
    assert "0.354  如何治理记忆污染？" in thresholded and "0.277  请记录，第二篇要讨论记忆污染。" in thresholded
    assert "guest records after erase: 0" in done.stdout


DATA_SCRIPT = """
import json
from lab.i18n import LOCALES, TEXT
from memory import make_judge, shipped_scenarios
from memory.eval import load_scales

judge = make_judge("learned")  # reads the packaged memory/write/judges/judge_model.json
print(json.dumps({"scenarios": {k: str(v) for k, v in shipped_scenarios().items()}, "judge": type(judge).__name__,
                  "scales": sorted(load_scales()), "locales": str(LOCALES),
                  "zh": TEXT["page.recall"]["zh"]}))
"""


def test_installed_library_reads_its_packaged_data(installed):
    """The scenarios, the learned judge's weights, the score scales and the lab's catalogue, read from the venv."""
    done = installed.run("-c", DATA_SCRIPT)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(seen["scenarios"]) == sorted(p.stem for p in SCENARIOS_DIR.glob("*.json"))
    assert all(Path(path).is_relative_to(installed.site / "memory" / "scenarios") for path in seen["scenarios"].values())
    assert seen["judge"] == "LearnedJudge"
    assert {"minilm", "e5"} <= set(seen["scales"])
    assert Path(seen["locales"]).is_relative_to(installed.site) and seen["zh"]


LAB_SCRIPT = """
import json, sys
from pathlib import Path
import lab
from streamlit.testing.v1 import AppTest

app = Path(lab.__file__).parent / "_app" / "app.py"
at = AppTest.from_file(str(app), default_timeout=120)
# the lesson's settings but for the embedder and the judge: no model to load (the learned judge reads MiniLM's
# vectors; its packaged weights are loaded in test_installed_library_reads_its_packaged_data)
at.query_params.update(embedder="lexical", judge="rules")
at.run()
first = {"exception": [str(e.value) for e in at.exception], "selectbox": {s.key: s.value for s in at.selectbox},
         "scenarios": list(at.selectbox(key="scenario").options), "tables": [len(d.value) for d in at.dataframe]}
pages = {}
for spec in lab.PAGES:  # page paths are relative to the folder holding lab/, app.py is in lab/_app/
    at.switch_page(str(Path("..") / Path(spec.path).relative_to("lab"))).run()
    pages[spec.path] = {"exception": [str(e.value) for e in at.exception], "info": [str(i.value) for i in at.info],
                        "selectbox": {s.key: [s.value, list(s.options)] for s in at.selectbox},
                        "tables": [[len(d.value), [str(c) for c in d.value.columns]] for d in at.dataframe]}
print(json.dumps({"first": first, "pages": pages}))
"""


def test_installed_lab_opens_the_lesson_and_every_page(installed):
    """The installed lab's router (lab/_app/app.py) under AppTest: the first page replays the lesson scenario from
    the package (its first question and its users are offered), and every page runs; the Dedup page offers the two
    teaching pair sets from the package and decides the English one's pairs."""
    script = installed.work / "open_lab.py"
    script.write_text(LAB_SCRIPT, encoding="utf-8")
    done = installed.run(str(script), timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    first = seen["first"]
    assert first["exception"] == []
    lesson = load_scenario(SCENARIOS_DIR / "workshop_en.json")
    assert first["selectbox"]["scenario"] == "workshop_en"
    assert sorted(first["scenarios"]) == sorted(p.stem for p in SCENARIOS_DIR.glob("*.json"))
    assert first["selectbox"]["q"] == lesson.queries[0].query
    assert first["selectbox"]["user"] == f"{lesson.queries[0].tenant_id}/{lesson.queries[0].user_id}"
    assert first["tables"] and all(rows > 0 for rows in first["tables"])
    assert {path: page["exception"] for path, page in seen["pages"].items()} == {spec.path: [] for spec in PAGES}
    dedup = seen["pages"]["lab/pages/dedup.py"]
    assert dedup["selectbox"]["pairs"] == ["dedup_pairs_en", ["dedup_pairs_en", "dedup_pairs_zh"]]
    english = len(load_pairs(shipped_pair_files()["dedup_pairs_en"]))
    assert [rows for rows, columns in dedup["tables"] if "plain_error" in columns] == [english]
    assert not any("upload a pair file" in line for line in dedup["info"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_memory_lab_command_serves_the_installed_lab_with_its_settings(installed, tmp_path):
    """``memory-lab`` (lab/launch.py) runs the installed serve.py under Streamlit: the health endpoint answers and
    the page is served. Its settings are the packaged .streamlit/config.toml (read from beside the script): with an
    empty HOME, Streamlit would announce usage statistics unless that file's gatherUsageStats = false is read."""
    port = _free_port()
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(installed.venv / "bin" / "memory-lab"), "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1"],
                                cwd=installed.work, env=_env(MEMORY_LAB_WARM="none", HOME=str(tmp_path)),
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline, health = time.monotonic() + 60, ""
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read().decode()
                break
            except OSError:
                time.sleep(0.3)
        assert health == "ok", log.read_text()
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status == 200 and "<div id=\"root\">" in page.read().decode()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    output = log.read_text()
    assert f"127.0.0.1:{port}" in output and "gatherUsageStats" not in output, output
