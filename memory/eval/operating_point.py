"""A study's answer as one small file: the operating point (model, threshold on that model's scale, top_k, decay,
window, write path, judge) and where it came from.

A threshold study ends with "this threshold, this model, this write path" for a user's own data. This module turns
that answer into a file the library, the CLI, the lab and the agent adapters (``memory.adapters``) all load, so an
agent recalls with the setting that was measured::

    {"format": "memory-governance-lab/operating-point", "version": 1,
     "embedder": "minilm", "write_path": "facts", "judge": "learned",
     "config": {"threshold": 0.42, "top_k": 5, "decay_rate": 0.0, "window_size": 6, ...},
     "provenance": {"dataset": "locomo:locomo-sample.json", "sha256": "9f2c...", "embedder": "minilm",
                    "mode": "dense", "unit": "turns", "rule": "f1", "recall": 0.61, "precision": 0.48, "f1": 0.54,
                    "avg_injected": 2.31, "token_budget": 1000000, "questions": 304,
                    "measured_at": "2026-12-03T10:30:00Z"}}

The same keys in TOML (``[config]`` and ``[provenance]`` tables) when the file name ends in ``.toml``. ``config`` may
name only some of MemoryConfig's fields (the rest keep their defaults); ``provenance`` is optional, and so is each of
its fields (a file written before a field existed still loads). A bad file is a one-line
:class:`~memory.core.errors.DataFileError` naming the file and the field.

The provenance is true to the study it came from (:func:`study_provenance`): ``dataset`` names the data as the person
who studied it knows it (a built-in scenario by its name, any other file by its file name, a LoCoMo file as
``locomo:<file name>``), ``sha256`` is the hash of the bytes the study read, ``embedder`` the model whose similarities
were swept (it must be the point's own: a threshold is on its model's scale), and the figures (``precision``,
``recall``, ``f1``, ``avg_injected``, as the study reports them) are the study's for this point's threshold, top_k and
decay, measured under ``token_budget`` (1,000,000: none). A point whose setting the study did not measure carries no
figures.

A settings file is outside input (the lab takes it from an upload, the CLI and the MCP server from a path), so it is
data, parsed safely: at most 64 KB (:data:`MAX_SETTINGS_BYTES`), refused before any byte is read when larger (a
device, a FIFO or a link to one is refused too), then held to :data:`~memory.core.datafile_limits.SETTINGS_LIMITS`
(1,000 lines, 16 levels of nesting, 16 parts to a dotted key, 64 characters to a number) by a scan linear in its
length before ``tomllib`` or ``json`` sees it. Every refusal names the file by its name only (never the folder it is
in) and, where it can, the line or the field; values quoted in a message are cut short.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import time
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from memory.core.config import MemoryConfig
from memory.core.datafile_limits import SETTINGS_LIMITS, check_json_text, check_size, check_toml_text
from memory.core.errors import ConfigError, DataFileError, InputError
from memory.core.safefile import read_regular_file, shown
from memory.core.scenario import load_json, parse_scenario, read_data_file, shipped_scenarios
from memory.embed.embedders import EMBEDDER_NAMES, ENDPOINT, LOCAL_PREFIX, Embedder, LexicalEmbedder, make_embedder
from memory.eval.datasets import LOCOMO_PREFIX, UNITS, Dataset, Unit, parse_locomo, scenario_dataset
from memory.eval.ranking import MODES
from memory.store.chroma import StoreLocation
from memory.write.adjudicate import Judge
from memory.write.judges import DEFAULT_JUDGE, DEFAULT_WRITE_PATH, JUDGE_NAMES, make_judge
from memory.write.ingest import Ingestor

if TYPE_CHECKING:
    from memory.eval.results import StudyResult, SweepRow
    from memory.runtime.manager import MemoryManager

FORMAT = "memory-governance-lab/operating-point"
VERSION = 1
WRITE_PATHS = ("raw", "facts")
"""``raw`` stores each message as-is; ``facts`` distils atomic facts and decides duplicate / update / coexist / new."""
JUDGES = JUDGE_NAMES
"""``rules``: the rules (memory.write.adjudicate.judge_reason); ``learned``: the learned judge
(memory.write.judges.learned); ``bands``: the plain two-band rule (memory.write.judges)."""
PROVENANCE_FIELDS: dict[str, type | tuple[type, ...]] = {
    "dataset": str, "sha256": str, "source": str, "embedder": str, "mode": str, "unit": str, "rule": str,
    "measured_at": str, "questions": int, "token_budget": int, "recall": (int, float), "precision": (int, float),
    "f1": (int, float), "avg_injected": (int, float), "note": str,
}
"""What a provenance may say, and the type of each (any other key is an error: a typo should not pass silently)."""
FIGURES = ("precision", "recall", "f1", "avg_injected")
"""The study's figures a point carries for its setting (memory.eval.results.Metrics; the study page shows them)."""
_SHARES = ("precision", "recall", "f1")
"""Figures that are shares, in [0, 1]."""
_CHOICES = {"mode": MODES, "unit": UNITS}
_SHA256 = re.compile(r"[0-9a-f]{64}")
KEYS = ("format", "version", "embedder", "write_path", "judge", "config", "provenance")
MAX_SETTINGS_BYTES = SETTINGS_LIMITS.max_bytes


def check_settings_size(size: int, name: str) -> None:
    """A one-line DataFileError naming the file ``name`` when a settings file of ``size`` bytes is over the cap:
    for a caller that knows the size before it has the bytes (the lab's uploader)."""
    check_size(size, name)
"""The largest settings file read, at every entry point (library, CLI, MCP server, the lab's upload): 64 KB; a study
writes under 1 KB."""


@dataclass(frozen=True)
class OperatingPoint:
    """A measured setting of the memory: what to build a manager with, and where the setting came from."""

    embedder: str = "minilm"
    """The model whose similarity scale ``config.threshold`` is on (a name make_embedder knows)."""
    write_path: str = DEFAULT_WRITE_PATH
    """``raw`` or ``facts`` (:data:`WRITE_PATHS`)."""
    judge: str = DEFAULT_JUDGE
    """``rules``, ``learned`` or ``bands`` (:data:`JUDGES`); used by the ``facts`` write path."""
    config: MemoryConfig = field(default_factory=MemoryConfig)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    """Where the point came from (:data:`PROVENANCE_FIELDS`): the dataset, the rule and its figures."""

    def __post_init__(self) -> None:
        _check_choices(self.embedder, self.write_path, self.judge, "OperatingPoint")
        _check_provenance(dict(self.provenance), "OperatingPoint.provenance", embedder=self.embedder)

    # --- using it -----------------------------------------------------------
    def make_judge(self) -> Judge:
        """The write path's judge this point names."""
        return make_judge(self.judge)

    def open(self, *, location: StoreLocation | None = None, workspace: str = "default",
             embedder: Embedder | None = None) -> tuple["MemoryManager", Ingestor | None]:
        """A manager with this point's config and model (``embedder`` if given: it must be the named model), and
        the write path: an Ingestor with this point's judge for ``facts``, None for ``raw`` (write with
        ``manager.add_many``)."""
        from memory.runtime.manager import MemoryManager

        model = embedder if embedder is not None else make_embedder(self.embedder)
        expected = {"minilm": "minilm", "e5": "e5", "lexical": LexicalEmbedder().name}.get(self.embedder)
        if expected is not None and model.name != expected:
            raise InputError(f"the operating point's threshold is on {self.embedder}'s scale; got embedder "
                             f"{model.name!r}")
        manager = MemoryManager(self.config, embedder=model, location=location or StoreLocation(),
                                workspace=workspace)
        ingestor = Ingestor(manager, judge=self.make_judge()) if self.write_path == "facts" else None
        return manager, ingestor

    # --- the file -------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "embedder": self.embedder, "write_path": self.write_path,
                "judge": self.judge, "config": self.config.to_dict(), "provenance": dict(self.provenance)}

    def dumps(self, fmt: str = "json") -> str:
        """The file's text: ``json`` or ``toml``."""
        data = self.to_dict()
        if fmt == "json":
            return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        if fmt != "toml":
            raise InputError(f"format must be json or toml, got {fmt!r}")
        head = {k: v for k, v in data.items() if not isinstance(v, dict)}
        lines = [f"{k} = {_toml_value(v)}" for k, v in head.items()]
        for table in ("config", "provenance"):
            lines += ["", f"[{table}]"] + [f"{k} = {_toml_value(v)}" for k, v in data[table].items()]
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> Path:
        """Write the file (TOML if the name ends in ``.toml``, else JSON) in one step: a reader never sees half a
        file."""
        path = Path(path)
        text = self.dumps("toml" if path.suffix.lower() == ".toml" else "json")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


def operating_point_from_study(result: "StudyResult", *, write_path: str = DEFAULT_WRITE_PATH, judge: str = DEFAULT_JUDGE,
                               base: MemoryConfig | None = None, dataset: str | None = None,
                               sha256: str | None = None) -> OperatingPoint:
    """The operating point a dense study recommends: its threshold, top_k and decay on ``base`` (the window and
    everything else the study did not sweep; the token budget too, unless the study set one), with the study's
    provenance and its figures for that setting (:func:`study_provenance`; ``dataset`` and ``sha256`` name the data
    as it was read, see :func:`load_studied`)."""
    row = result.recommended.row
    if row is None:
        raise InputError(f"the study recommends no setting ({result.recommended.note or result.recommended.rule}); "
                         "there is nothing to export")
    if result.mode != "dense" or not result.embedder:
        raise InputError(f"only a dense study's threshold is on a model's scale (this study is {result.mode}); "
                         "run the study with --mode dense to export an operating point")
    config = (base or MemoryConfig()).replace(threshold=row.threshold, top_k=row.top_k, decay_rate=row.decay_rate)
    if result.token_budget < MemoryConfig.range_of("token_budget")[1]:  # the study measured under a budget: keep it
        config = config.replace(token_budget=result.token_budget)
    provenance = study_provenance(result, config, dataset=dataset, sha256=sha256)
    return OperatingPoint(result.embedder, write_path, judge, config, provenance)


def study_provenance(result: "StudyResult", config: MemoryConfig, *, dataset: str | None = None,
                     sha256: str | None = None) -> dict[str, Any]:
    """What a settings file of ``config`` says of the study ``result``: the dataset (``dataset``, else the study's
    own name for it) and its ``sha256``, the model, mode, unit, question count and the budget the figures were measured
    under, and, when ``config``'s threshold, top_k and decay are a setting the study swept (with the study's score
    weights), that setting's figures (:data:`FIGURES`) and, for the recommended setting, the rule that chose it. A
    setting the study did not measure gets a note instead of figures."""
    provenance: dict[str, Any] = {"dataset": dataset or result.dataset, "source": Path(result.source).name}
    if sha256 is not None:
        provenance["sha256"] = sha256
    if result.embedder:
        provenance["embedder"] = result.embedder
    provenance |= {"mode": result.mode, "unit": result.unit, "questions": result.questions,
                   "token_budget": result.token_budget,
                   "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    row = measured_row(result, config)
    if row is None:
        provenance["note"] = (f"threshold {config.threshold:g}, top_k {config.top_k}, decay {config.decay_rate:g} "
                              "is not a setting this study measured: no figures")
        return provenance
    chosen = result.recommended.row
    if chosen is not None and chosen.setting == row.setting:
        provenance["rule"] = result.recommended.rule
    for name in FIGURES:
        value = getattr(row, name, None)
        if isinstance(value, (int, float)) and math.isfinite(value):
            provenance[name] = round(float(value), 6)
    return provenance


def measured_row(result: "StudyResult", config: MemoryConfig) -> "SweepRow | None":
    """The study's row for ``config``'s threshold, top_k and decay, or None when the study did not sweep that setting
    or scored with other weights (its figures would not be this config's)."""
    study = MemoryConfig()
    if (config.alpha, config.beta, config.gamma) != (study.alpha, study.beta, study.gamma):
        return None
    try:
        return result.row(threshold=config.threshold, top_k=config.top_k, decay_rate=config.decay_rate)
    except KeyError:
        return None


def content_hash(raw: bytes) -> str:
    """The ``sha256`` a provenance names: the SHA-256 of a dataset's bytes, 64 lowercase hex digits."""
    return hashlib.sha256(raw).hexdigest()


def load_studied(spec: str | Path, *, unit: Unit = "turns") -> tuple[Dataset, str, str]:
    """A study's dataset as :func:`memory.eval.load_dataset` reads it (``locomo:PATH``, a scenario file, or a shipped
    scenario's stem), with the name a provenance gives it and the :func:`content_hash` of the very bytes parsed:
    ``(dataset, name, sha256)``. The name is a shipped scenario's own name, else the file's name (``locomo:`` and
    the file's name for LoCoMo), never a folder."""
    if unit not in UNITS:
        raise InputError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    text = str(spec)
    if text.startswith(LOCOMO_PREFIX):
        path = Path(text[len(LOCOMO_PREFIX):])
        raw = read_data_file(path, "LoCoMo file")
        return parse_locomo(raw, source=str(path), unit=unit), LOCOMO_PREFIX + path.name, content_hash(raw)
    path = Path(text)
    shipped = not path.exists() and text in shipped_scenarios()
    if shipped:
        path = shipped_scenarios()[text]
    if unit != "turns":
        raise InputError(f"unit {unit!r} needs a LoCoMo dataset (locomo:PATH); scenario files only have turns")
    raw = read_data_file(path, "scenario file")
    scenario = parse_scenario(raw, source=str(path))
    return scenario_dataset(scenario), scenario.name if shipped else path.name, content_hash(raw)


def load_operating_point(path: str | Path) -> OperatingPoint:
    """Read an operating-point file (JSON, or TOML by its ``.toml`` name); a one-line DataFileError naming the file
    and the field when it is not one. Only a regular file of at most :data:`MAX_SETTINGS_BYTES` is read."""
    raw = read_regular_file(path, what="operating point", max_bytes=MAX_SETTINGS_BYTES)
    return parse_operating_point(raw, source=str(path), toml=Path(path).suffix.lower() == ".toml")


def parse_operating_point(raw: bytes | str, *, source: str = "<operating point>", toml: bool = False) -> OperatingPoint:
    """An operating point from a file's bytes (see :func:`load_operating_point`): at most :data:`MAX_SETTINGS_BYTES`,
    and within :data:`~memory.core.datafile_limits.SETTINGS_LIMITS` before it is parsed. Errors name the file by the
    last part of ``source`` only."""
    where = shown(Path(source).name or source)
    if isinstance(raw, bytes):
        check_size(len(raw), where)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DataFileError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    elif isinstance(raw, str):
        text = raw
    else:
        raise DataFileError(f"{where}: expected the file's bytes or text, got {type(raw).__name__}")
    data: Any
    if toml:
        check_toml_text(text, where)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DataFileError(f"{where}: not TOML: {exc}") from None
        except RecursionError:  # not reached past the depth limit: kept so that no parser error leaves as a traceback
            raise DataFileError(f"{where}: TOML nested too deeply") from None
        except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit (idem)
            raise DataFileError(f"{where}: unusable TOML value: {_brief(str(exc).splitlines()[0])}") from None
    else:
        check_json_text(text, where)
        data = load_json(text, where)
    if not isinstance(data, dict):
        raise DataFileError(f"{where}: an operating point is an object with {', '.join(KEYS)}")
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise DataFileError(f"{where}: unknown field {_brief(unknown[0])} (known: {', '.join(KEYS)})")
    if data.get("format") != FORMAT:
        raise DataFileError(f"{where}: format: expected {FORMAT!r}, got {_brief(data.get('format'))}")
    if data.get("version") != VERSION:
        raise DataFileError(f"{where}: version: expected {VERSION}, got {_brief(data.get('version'))}")
    embedder, write_path, judge = data.get("embedder"), data.get("write_path", "facts"), data.get("judge", DEFAULT_JUDGE)
    try:
        _check_choices(embedder, write_path, judge, where)
    except InputError as exc:
        raise DataFileError(str(exc)) from None
    config = data.get("config", {})
    if not isinstance(config, dict):
        raise DataFileError(f"{where}: config: expected a table of MemoryConfig fields, got {type(config).__name__}")
    known = {f.name for f in fields(MemoryConfig)}
    for name, value in config.items():
        if name not in known:
            raise DataFileError(f"{where}: config.{_brief_key(name)}: not a MemoryConfig field "
                                f"(known: {', '.join(sorted(known))})")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataFileError(f"{where}: config.{name}: expected a number, got {_brief(value)}")
    try:
        memory_config = MemoryConfig.from_dict(config)
    except ConfigError as exc:
        raise DataFileError(f"{where}: config: {exc}") from None
    provenance = data.get("provenance", {})
    try:
        _check_provenance(provenance, f"{where}: provenance", embedder=str(embedder))
    except InputError as exc:
        raise DataFileError(str(exc)) from None
    return OperatingPoint(str(embedder), write_path, judge, memory_config, dict(provenance))


def _check_choices(embedder: Any, write_path: Any, judge: Any, where: str) -> None:
    if not isinstance(embedder, str) or not (embedder in EMBEDDER_NAMES or embedder.startswith(LOCAL_PREFIX)
                                             or embedder == ENDPOINT):
        raise InputError(f"{where}: embedder: expected one of {', '.join(EMBEDDER_NAMES)} (or {LOCAL_PREFIX}<folder>), "
                         f"got {_brief(embedder)}")
    if not isinstance(write_path, str) or write_path not in WRITE_PATHS:
        raise InputError(f"{where}: write_path: expected one of {', '.join(WRITE_PATHS)}, got {_brief(write_path)}")
    if not isinstance(judge, str) or judge not in JUDGES:
        raise InputError(f"{where}: judge: expected one of {', '.join(JUDGES)}, got {_brief(judge)}")


def _check_provenance(provenance: Any, where: str, *, embedder: str | None = None) -> None:
    if not isinstance(provenance, dict):
        raise InputError(f"{where}: expected a table, got {type(provenance).__name__}")
    for name, value in provenance.items():
        kind = PROVENANCE_FIELDS.get(name)
        if kind is None:
            raise InputError(f"{where}.{_brief_key(name)}: unknown field (known: {', '.join(PROVENANCE_FIELDS)})")
        if isinstance(value, bool) or not isinstance(value, kind):
            raise InputError(f"{where}.{name}: expected {getattr(kind, '__name__', 'a number')}, got {_brief(value)}")
        if isinstance(value, str):
            _check_provenance_text(name, value, where, embedder)
        elif isinstance(value, (int, float)):
            _check_provenance_number(name, value, where)


def _check_provenance_number(name: str, value: int | float, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}.{name}: expected a finite number, got {value!r}")
    if isinstance(value, int) and abs(value) > 10**15:
        raise InputError(f"{where}.{name}: expected a count, got {_brief(value)}")
    if name in _SHARES and not 0 <= value <= 1:
        raise InputError(f"{where}.{name}: expected a share in [0, 1], got {_brief(value)}")
    if value < 0:  # counts, the mean injected, the budget
        raise InputError(f"{where}.{name}: expected 0 or more, got {_brief(value)}")


def _check_provenance_text(name: str, value: str, where: str, embedder: str | None) -> None:
    if name == "sha256" and not _SHA256.fullmatch(value):
        raise InputError(f"{where}.sha256: expected 64 lowercase hex digits (a SHA-256), got {_brief(value)}")
    if name in _CHOICES and value not in _CHOICES[name]:
        raise InputError(f"{where}.{name}: expected one of {', '.join(_CHOICES[name])}, got {_brief(value)}")
    if name == "embedder" and embedder is not None and value != embedder:
        raise InputError(f"{where}.embedder: the figures were measured with {_brief(value)}, but the point's "
                         f"threshold is on {embedder!r}'s scale")


_BRIEF = 60
"""Characters of a file's value quoted in an error message (the file is outside input: a message stays short)."""


def _brief(value: Any) -> str:
    """``value`` as an error message quotes it: its repr cut to :data:`_BRIEF` characters; an integer too long to
    print says how long it is (``repr`` itself fails past 4,300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**18:
        return f"a number of about {int(abs(value).bit_length() * 0.30103) + 1:,} digits"
    if isinstance(value, (dict, list)) and value:  # a container's repr walks all of it: say what it is instead
        return f"a {'table' if isinstance(value, dict) else 'list'} of {len(value):,} item{'s' * (len(value) > 1)}"
    text = repr(value)
    return text if len(text) <= _BRIEF else text[: _BRIEF - 3] + "..."


def _brief_key(name: Any) -> str:
    """A key of the file as a message names it: as it is when short and plain, else :func:`_brief`'s repr."""
    return name if isinstance(name, str) and name.isidentifier() and len(name) <= _BRIEF else _brief(name)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a TOML basic string
