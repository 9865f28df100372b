"""AppTest: what a participant of a shared lab can feed the server (issue 10, item 1: safe to share, as shipped).

* The study page has no free-form path: besides shipped scenarios, the upload and the LoCoMo sample it offers the
  files of the instructor's folder (MEMORY_DATASETS_DIR) by name, and reads each through
  memory.core.safefile.read_regular_file (a symlink out of the folder, a FIFO or an oversized file is refused with one
  line, without its bytes being read).
* Uploads are capped in bytes (checked before the bytes are taken) and in messages (MEMORY_MAX_UPLOAD_MESSAGES);
  past a cap the sidebar says so in the UI language and the lab keeps its shipped scenario.

The lexical embedder throughout: these tests are about the UI and the files it reads, not about retrieval.
Fixtures and helpers come from tests/test_app.py and tests/test_app_study.py.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import tomllib
from pathlib import Path

import pytest

from lab.state import DEFAULT_SCENARIOS
from streamlit.runtime.uploaded_file_manager import UploadedFile

from memory.core.safefile import max_file_bytes
from memory.core.scenario import shipped_scenarios
from memory.eval.study import run_study
from memory.eval.synth import SynthSpec, generate_scenario

from lab import i18n
from lab.state import DEFAULTS, JOB_KEY
from test_app import lab_env, metric, open_app, texts  # noqa: F401 - lab_env: autouse fixture
from test_app_study import PAGE, _point, _shown_point
from test_datasets import _sample

pytestmark = pytest.mark.app

ROOT = Path(__file__).resolve().parent.parent
RANGE_FIELDS = {"study.thresholds", "study.top_ks", "study.decays"}


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """The instructor's datasets folder, named by MEMORY_DATASETS_DIR."""
    path = tmp_path / "datasets"
    path.mkdir()
    monkeypatch.setenv("MEMORY_DATASETS_DIR", str(path))
    return path


@pytest.fixture
def reads(monkeypatch) -> set[int]:
    """Inodes of the files this process reads bytes of (os.read, as memory.core.safefile reads) or opens with open()
    (Path.read_bytes, json.load): a refused file must be in neither. Recorded before a blocking open of a FIFO."""
    seen: set[int] = set()
    real_read, real_open, real_builtin_open = os.read, io.open, builtins.open

    def read(fd, n):
        try:
            seen.add(os.fstat(fd).st_ino)
        except OSError:
            pass
        return real_read(fd, n)

    def opener(real):
        def opened(file, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)):
                try:
                    seen.add(os.stat(file).st_ino)
                except (OSError, ValueError):
                    pass
            return real(file, *args, **kwargs)
        return opened

    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(io, "open", opener(real_open))
    monkeypatch.setattr(builtins, "open", opener(real_builtin_open))
    return seen


def _locomo_file(path: Path) -> Path:
    path.write_text(json.dumps([_sample()]), encoding="utf-8")
    return path


def _free_text_fields(at) -> list[str]:
    """Keys of the page's text inputs other than the three sweep ranges (a path field would be one)."""
    return [w.key for w in at.text_input if w.key not in RANGE_FIELDS]


# --- the study page: datasets by name ---------------------------------------------------------------------

def test_no_path_field_and_no_folder_when_unset(monkeypatch):
    monkeypatch.delenv("MEMORY_DATASETS_DIR", raising=False)
    at = open_app(PAGE, embedder="lexical", dataset="/etc/passwd")
    assert not at.exception
    options = at.selectbox(key="dataset").options
    assert set(options) <= {*shipped_scenarios(), "locomo-sample"}, options
    assert at.selectbox(key="dataset").value == "workshop_en", "a path in the URL is not an option"
    assert not _free_text_fields(at), "no text field may take a server path"
    assert "passwd" not in texts(at.error) + texts(at.warning) + texts(at.info)
    at.query_params["dataset"] = "locomo-file"
    at.run()
    assert not at.exception and not _free_text_fields(at)


def test_folder_files_are_listed_by_name_and_studied(folder, monkeypatch):
    locomo = _locomo_file(folder / "made-up-locomo.json")
    scenario = folder / "tiny-scenario.json"
    scenario.write_bytes(shipped_scenarios()["workshop_en"].read_bytes())
    (folder / "notes.txt").write_text("not a dataset")
    (folder / "sub.json").mkdir()
    (folder / ".hidden.json").write_text("[]")
    at = open_app(PAGE, embedder="lexical")
    options = at.selectbox(key="dataset").options
    assert options[-2:] == ["made-up-locomo.json", "tiny-scenario.json"], options
    assert not {"notes.txt", "sub.json", ".hidden.json"} & set(options)
    at.selectbox(key="dataset").set_value("made-up-locomo.json")
    at.selectbox(key="mode").set_value("lexical").run()
    assert not at.exception
    assert not at.radio(key="study.unit").disabled, "a JSON list is a LoCoMo file: turns or facts"
    assert int(metric(at, "Questions")) == 2 and "Run study" in texts(at.info)
    at.button(key="study.run").click().run()
    assert not at.exception
    assert _shown_point(at) == _point(run_study(f"locomo:{locomo}", mode="lexical"))
    at.selectbox(key="dataset").set_value("tiny-scenario.json")
    at.selectbox(key="mode").set_value("dense").run()
    assert not at.exception and at.radio(key="study.unit").disabled, "a JSON object is a scenario: turns only"
    at.button(key="study.run").click().run()
    assert _shown_point(at) == _point(run_study(str(scenario), mode="dense", embedder="lexical"))


def test_an_edited_folder_file_is_studied_afresh(folder):
    path = _locomo_file(folder / "made-up.json")
    at = open_app(PAGE, embedder="lexical", dataset="made-up.json", mode="lexical")
    assert int(metric(at, "Questions")) == 2
    sample = _sample()
    sample["qa"] = sample["qa"][:1]
    path.write_text(json.dumps([sample]), encoding="utf-8")
    at.run()
    assert int(metric(at, "Questions")) == 1, "the digest is of the bytes read, so an edit is seen"


def test_a_symlink_out_of_the_folder_is_refused(folder, tmp_path, reads):
    outside = _locomo_file(tmp_path / "secret.json")
    (folder / "escape.json").symlink_to(outside)
    (folder / "inside.json").symlink_to(_locomo_file(folder / "real.json"))
    reads.clear()  # writing the files above opened them
    at = open_app(PAGE, embedder="lexical", dataset="escape.json", mode="lexical")
    assert not at.exception
    error = texts(at.error)
    assert "escape.json" in error and "outside the allowed folder" in error, error
    assert len(error.splitlines()) == 1, "one line"
    assert not [m for m in at.metric if m.label == "Questions"], "nothing of it is studied"
    assert outside.stat().st_ino not in reads, "the file outside was never read"
    at.selectbox(key="dataset").set_value("inside.json").run()
    assert not at.exception and int(metric(at, "Questions")) == 2, "a link within the folder is fine"


def test_a_fifo_and_an_oversized_file_are_refused_without_reading(folder, reads):
    os.mkfifo(folder / "pipe.json")
    (folder / "via-link.json").symlink_to(folder / "pipe.json")
    big = folder / "big.json"
    with big.open("wb") as f:  # sparse: one byte over the cap costs no disk
        f.truncate(max_file_bytes() + 1)
    reads.clear()
    at = open_app(PAGE, embedder="lexical", dataset="via-link.json")
    assert "pipe.json" not in at.selectbox(key="dataset").options, "a FIFO is not a dataset"
    assert not at.exception and "FIFO (named pipe), not a regular file" in texts(at.error), texts(at.error)
    at.selectbox(key="dataset").set_value("big.json").run()
    assert not at.exception
    assert "big.json" in texts(at.error) and "the limit is" in texts(at.error), texts(at.error)
    assert not {(folder / "pipe.json").stat().st_ino, big.stat().st_ino} & reads, "refused before any byte is read"


def test_a_folder_that_cannot_be_listed_shows_a_message(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMORY_DATASETS_DIR", str(tmp_path / "missing"))
    at = open_app(PAGE, embedder="lexical")
    assert not at.exception and "MEMORY_DATASETS_DIR" in texts(at.warning)
    assert int(metric(at, "Questions")) > 0, "the shipped scenarios are still studied"


# --- uploads: capped in messages and bytes ----------------------------------------------------------------

def _upload(at, name: str, data: bytes):
    at.sidebar.file_uploader[0].set_value((name, data, "application/json")).run()
    assert not at.exception


def _synthetic(messages: int) -> bytes:
    """A synthetic scenario of about ``messages`` messages (memory.eval.synth; 2,500 asked gives 2,496)."""
    return json.dumps(generate_scenario(SynthSpec(messages=messages))).encode("utf-8")


def _kept_the_shipped_scenario(at, lang: str = "en") -> None:
    assert at.session_state["lab.settings"].scenario_key == DEFAULT_SCENARIOS[lang], "nothing was loaded"
    assert JOB_KEY not in at.session_state, "no load was started"
    assert int(metric(at, i18n.TEXT["recall.m_blind"][lang])) == DEFAULTS.top_k, "the recall page still works"


@pytest.mark.parametrize("lang, fragments", [
    ("en", ("big.json holds {n:,} messages", "limited to 2,000", "MEMORY_MAX_UPLOAD_MESSAGES", "stays in use")),
    ("zh", ("big.json 含 {n:,} 条消息", "上限为 2,000 条", "MEMORY_MAX_UPLOAD_MESSAGES", "仍使用所选场景")),
])
def test_an_upload_over_the_message_cap_is_refused(lang, fragments):
    at = open_app(embedder="lexical", lang=lang)
    data = _synthetic(2_500)
    n = len(json.loads(data)["messages"])
    assert n > 2_000
    _upload(at, "big.json", data)
    message = texts(at.sidebar.error)
    assert all(f.format(n=n) in message for f in fragments), message
    assert len(message.splitlines()) == 1
    _kept_the_shipped_scenario(at, lang)


def test_the_message_cap_is_configurable_and_1500_messages_pass(monkeypatch):
    at = open_app(embedder="lexical")
    _upload(at, "workshop.json", _synthetic(1_500))
    assert not at.sidebar.error, texts(at.sidebar.error)
    current = at.session_state["lab.settings"]
    assert current.scenario_key.startswith("upload-") and len(current.scenario.messages) == 1_500
    job = at.session_state[JOB_KEY]
    job.cancel()  # the load itself is tests/test_app_loading.py's subject
    job.join(120)
    monkeypatch.setenv("MEMORY_MAX_UPLOAD_MESSAGES", "1000")
    at.run()
    assert "limited to 1,000" in texts(at.sidebar.error)
    assert at.session_state["lab.settings"].scenario_key == "workshop_en"
    monkeypatch.setenv("MEMORY_MAX_UPLOAD_MESSAGES", "lots")
    at.run()
    assert not at.exception and "MEMORY_MAX_UPLOAD_MESSAGES must be a whole number" in texts(at.sidebar.error)


@pytest.mark.parametrize("lang, fragments", [
    ("en", ("big.json is 0.0", "MB; uploads are limited to 0.03 MB (MEMORY_MAX_FILE_MB)", "stays in use")),
    ("zh", ("big.json 大小为 0.0", "上传上限为 0.03 MB（MEMORY_MAX_FILE_MB）", "仍使用所选场景")),
])
def test_an_upload_over_the_byte_cap_is_refused_before_its_bytes_are_taken(lang, fragments, monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_FILE_MB", "0.03")  # above the shipped scenarios (22 KB), below the upload
    taken = []
    monkeypatch.setattr(UploadedFile, "getvalue", lambda self: taken.append(self.name) or io.BytesIO.getvalue(self))
    at = open_app(embedder="lexical", lang=lang)
    data = _synthetic(200)
    assert len(data) > 0.03 * 1024 * 1024
    _upload(at, "big.json", data)
    message = texts(at.sidebar.error)
    assert all(f in message for f in fragments), message
    assert "big.json" not in taken, "the size is checked before getvalue()"
    _kept_the_shipped_scenario(at, lang)


def test_the_dedup_pair_upload_has_the_same_byte_cap(monkeypatch):
    monkeypatch.setenv("MEMORY_MAX_FILE_MB", "0.03")
    taken = []
    monkeypatch.setattr(UploadedFile, "getvalue", lambda self: taken.append(self.name) or io.BytesIO.getvalue(self))
    at = open_app("lab/pages/dedup.py", embedder="lexical")
    pairs = [{"id": f"p{i}", "existing": f"The budget is {i} dollars.", "incoming": f"The budget is now {i + 1}.",
              "expected": "update"} for i in range(600)]
    at.file_uploader(key="dedup.upload").set_value(("pairs.json", json.dumps(pairs).encode(), "application/json"))
    at.run()
    assert not at.exception
    assert "pairs.json is 0.0" in texts(at.error) and "limited to 0.03 MB" in texts(at.error), texts(at.error)
    assert "pairs.json" not in taken, "the size is checked before getvalue()"


def test_the_shipped_config_caps_uploads_and_hides_admin_actions():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert 1 <= config["server"]["maxUploadSize"] <= 10
    assert config["server"]["fileWatcherType"] == "none"
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["toolbarMode"] == "viewer"
