"""UI text in English and Chinese. ``t(key, **values)`` in the language of the sidebar switch (default English).

The catalogue is one file per language, ``lab/locales/en.json`` and ``lab/locales/zh.json`` (key -> text, the same keys in
each: :func:`load_catalogue` refuses a file that lacks one). Translators edit those files; the code asks by key.

Every key exists in both languages (tests check it); a missing key shows as the key itself and is recorded in
:data:`MISSING`, so a test that walks the pages fails on any key the catalogue lacks. The texts are Markdown
(Streamlit renders them so): :func:`t` makes every value it substitutes literal text (lab.safe.plain), so a link's
value, an upload's name, a message or an id never becomes a link, an image or markup in any page or language. A
value the lab built itself as markup is passed as :class:`lab.safe.Markup`; numbers are inserted as they are (their
format specs apply). :func:`t_raw` is for the few places that render no Markdown (a selectbox's options, a
dataframe cell, a message's content).
"""

from __future__ import annotations

import json
import numbers
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import streamlit as st

from .safe import Markup, plain

LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT_LANGUAGE = "en"

MISSING: set[str] = set()
"""Keys asked for that the catalogue does not have (shown as the key itself): empty while every page's text resolves."""

LOCALES = Path(__file__).resolve().parent / "locales"
"""The catalogue, one file per language (``locales/<lang>.json``: key -> text), as translators keep it: a new language is
one more file with the same keys."""


def load_catalogue(folder: Path = LOCALES) -> dict[str, dict[str, str]]:
    """key -> {language -> text} from the language files of ``folder``; ValueError naming the file and the keys when a
    file lacks a key another has, or a text is not a string (a catalogue a page could not fully show)."""
    files = {lang: json.loads((folder / f"{lang}.json").read_text(encoding="utf-8")) for lang in LANGUAGES}
    keys = set().union(*files.values())
    for lang, texts in files.items():
        missing = sorted(keys - set(texts))
        if missing:
            raise ValueError(f"locales/{lang}.json lacks {len(missing)} key(s): {', '.join(missing[:5])}")
        wrong = sorted(k for k, v in texts.items() if not isinstance(v, str))
        if wrong:
            raise ValueError(f"locales/{lang}.json: these keys are not text: {', '.join(wrong[:5])}")
    order = list(files[DEFAULT_LANGUAGE])
    return {key: {lang: files[lang][key] for lang in LANGUAGES} for key in order}


TEXT: dict[str, dict[str, str]] = load_catalogue()


def language() -> str:
    """The UI language chosen in the sidebar (``en`` until the switch is drawn)."""
    lang = st.session_state.get("lang", DEFAULT_LANGUAGE)
    return lang if lang in LANGUAGES else DEFAULT_LANGUAGE


def t(key: str, /, **values: object) -> Markup:
    """The text of ``key`` in the current language (Markdown), formatted with ``values``, each made literal text
    (:func:`lab.safe.plain`) unless it is a number or :class:`lab.safe.Markup` (such as another ``t`` text)."""
    return Markup(t_raw(key, **{name: _literal(value) for name, value in values.items()}))


def t_raw(key: str, /, **values: object) -> str:
    """The text of ``key`` with ``values`` inserted as they are: only for what renders no Markdown (a selectbox's
    option, an st.dataframe cell, a message's content, a CSV)."""
    entry = TEXT.get(key)
    if entry is None:
        MISSING.add(key)
        return key
    text = entry.get(language()) or entry[DEFAULT_LANGUAGE]
    return text.format(**values) if values else text


def _literal(value: object) -> object:
    """A value as :func:`t` inserts it: numbers (format specs apply) and Markup as they are, anything else escaped."""
    if isinstance(value, (numbers.Number, Markup)):
        return value
    return plain(value)


def labels(prefix: str, codes) -> Callable[[str], str]:
    """A widget's ``format_func`` for option codes: ``code -> t(f"{prefix}.{code}")``, translated now.

    The texts are looked up while the page runs and kept in a dict: a ``format_func`` that called
    :func:`t` itself would read the language whenever it is called, also outside the page's run
    (Streamlit's test harness formats values that way), where it falls back to English.
    """
    return {code: t(f"{prefix}.{code}") for code in codes}.__getitem__


def explain_leaks(leaked: list[str], write_path: str) -> list[str]:
    """One sentence per pollution kind governed recall still holds (lab.views.leaked_kinds), in the UI's language."""
    lines = []
    for kind in leaked:
        key = f"why.{kind}.{write_path}" if kind == "stale" else f"why.{kind}"
        lines.append(f"{t(f'kind.{kind}')}: {t(key if key in TEXT else 'why.other')}")
    return lines


def explain_drop(stage: str, reason: str, params: dict) -> str:
    """A dropped candidate's reason in the page's language, from its stage and values (the library's English
    sentence when the stage has no entry or a value is missing, e.g. a deprecated record with no successor)."""
    key = f"reason.{stage}"
    if stage == "deprecated" and not params.get("superseded_by"):
        return t_raw("stage.deprecated")
    if key not in TEXT:
        return reason
    try:
        return t_raw(key, **params)  # a table cell and a hover text (lab.views.candidate_frame), not Markdown
    except (KeyError, ValueError):
        return reason


def kinds_label(codes: str) -> str:
    """``"stale, noise"`` (pollution kinds as the views join them) in the page's language."""
    return ", ".join(t(f"kind.{c}") if f"kind.{c}" in TEXT else c for c in codes.split(", ") if c)


_AT_K = re.compile(r"(recall|precision)@(\w+)")


def header(name: str) -> str:
    """A table column's header in the page's language: ``col.<name>``; ``recall@5`` and ``pollution_<kind>`` are
    worded from their parts; any other name is shown as it is."""
    if f"col.{name}" in TEXT:
        return t(f"col.{name}")
    if language() == DEFAULT_LANGUAGE:
        return name
    if match := _AT_K.fullmatch(name):
        return f"{t('col.' + match[1])}@{match[2]}"
    if name.startswith("pollution_"):
        kind = name[len("pollution_"):]
        return f"{t('col.pollution')}：{t('kind.' + kind) if f'kind.{kind}' in TEXT else kind}"
    return name


def headers(columns: Iterable[Any], config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``st.dataframe``'s ``column_config`` with every column headed in the page's language (:func:`header`).

    Only the header changes: the frame keeps its field names (what tests, the CSV downloads and trace.json use) and
    the header's tooltip gives the field name. ``config`` holds the page's own column options (a format, a width,
    None to hide a column), which are kept. In English the headers stay the field names."""
    out = dict(config or {})
    if language() == DEFAULT_LANGUAGE:
        return out
    for name in map(str, columns):
        label = header(name)
        if label == name or (name in out and out[name] is None):
            continue
        options = out.get(name)
        options = {} if options is None else {"label": options} if isinstance(options, str) else dict(options)
        out[name] = {"help": plain(name), **options, "label": label}  # a tooltip is Markdown; a name may be data
    return out


def phrases(prefix: str) -> dict[str, str]:
    """English phrase -> the page's wording, for every ``<prefix>.*`` key (lab.figures.localize takes these)."""
    return {entry[DEFAULT_LANGUAGE]: t(key) for key, entry in TEXT.items() if key.startswith(prefix + ".")}
