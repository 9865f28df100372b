"""Outside text made literal before it reaches Markdown or plotly's HTML-like labels.

A value that comes from a link (query parameters), an upload, a message or an id is someone's words, never the lab's
markup: ``?user=[Session expired: sign in again](https://evil.example/login)`` must show those characters in the
lab's warning box, not a link to another site, and ``![x](https://evil.example/pixel.png)`` must not load an image.
Streamlit reads Markdown (GitHub-flavoured, plus its own ``:material/icon:``, ``:color[text]``, emoji codes and
``$math$``) in st.markdown, the alerts, captions, toasts, progress texts, widget labels and help, and in every cell
of st.table; plotly reads ``<a href>``, ``<b>`` and the like in its labels and hover texts.

:func:`plain` backslash-escapes what Markdown would read as markup (CommonMark renders an escaped character as
itself, so the text looks the same); lab.i18n.t applies it to every value it substitutes, so no page can forget.
Text the lab builds itself and knows to be safe (a template's own bold, a rule it validated, a list it joined of
values already escaped) is passed as :class:`Markup`. :func:`for_plotly` does the same job for a figure's data.
"""

from __future__ import annotations

import html
import re
from typing import Any, Iterable

_ALWAYS = frozenset("\\`*[]<{}~|$&@")
"""Escaped wherever they are: links and images (``[``), HTML and autolinks (``<``, ``&``), emphasis and code
(`` * ` ~ ``), directive attributes (``{``), tables (``|``), math (``$``), e-mail autolinks (``@``)."""
_START = frozenset("#>-+=")
"""Escaped at the start of the value (a heading, a quote, a list, a rule): elsewhere on a line they are text."""
_WORD_SIDE = frozenset("_+-/")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ORDERED = re.compile(r"[ \t]*\d{1,9}(?=[.)](?:[ \t]|$))")
"""An ordered list's marker at the start (``1. `` or ``2)``; ``0.45`` is a number, not a list)."""
_WWW = re.compile(r"(?i)(?<![\w.])www(?=\.)")
_ICON = ":material/"
"""Streamlit turns ``:material/`` into an icon before it parses the Markdown, escapes or not."""
JOINER = "\u2060"
"""WORD JOINER, invisible: put where a rule of Streamlit's Markdown matches the *parsed* text, after backslash escapes
are resolved (GFM's literal autolinks ``https://``, ``www.`` and ``name@host``; ``:material_x:``, ``:streamlit:``
and emoji codes), so that escaping alone cannot stop them."""


class Markup(str):
    """Text the lab built and vouches for (its own templates, or values it escaped itself): lab.i18n.t inserts it as
    it is. Never wrap outside text in it."""

    __slots__ = ()


def plain(value: object) -> str:
    """``value`` as literal text in Markdown: the characters that would start a link, an image, HTML, emphasis, code,
    a heading or list, a Streamlit directive, an icon, an emoji code or math are backslash-escaped, and line breaks
    become spaces (a value never starts a block of its own). What a reader sees is unchanged.

    Escaped: ``\\ ` * [ ] < { } ~ | $ & @`` everywhere; ``_`` unless it follows a letter or digit (``top_k``,
    ``session_<n>``: such an underscore cannot open emphasis); ``:`` next to a letter, ``_``, ``+``, ``-`` or ``/`` (a directive, an emoji code, a URL
    scheme; ``6:30`` stays); ``# > - + =`` and a number's ``.`` or ``)`` at the start (a heading, a quote, a list);
    the dot of ``www.`` (a bare-domain autolink) and the slash of ``:material/``. Streamlit finds literal autolinks
    (``https://``, ``www.``, ``name@host``), icons and emoji codes in the parsed text too, where escapes are gone: an
    invisible :data:`JOINER` goes after a colon followed by a letter or ``/``, before the dot of ``www.`` and before
    ``@``.
    """
    if isinstance(value, Markup):
        return value
    text = _LINE_BREAK.sub(" ", str(value))
    out: list[str] = []
    start = len(text) - len(text.lstrip(" \t"))
    ordered = _ORDERED.match(text)
    www = {m.end() for m in _WWW.finditer(text)}
    dots = set(www)
    if ordered:
        dots.add(ordered.end())
    for i, ch in enumerate(text):
        before = text[i - 1] if i else ""
        after = text[i + 1] if i + 1 < len(text) else ""
        if ch in _ALWAYS:
            escape = True
        elif ch == "_":  # after a letter or digit, "_" cannot open emphasis (CommonMark's flanking rules)
            escape = not before.isalnum()
        elif ch == ":":
            escape = any(c.isalpha() or c in _WORD_SIDE for c in (before, after) if c)
        elif ch in ".)":
            escape = i in dots
        elif ch == "/":
            escape = text.endswith(_ICON[:-1], 0, i)
        else:
            escape = i == start and ch in _START
        joined = (ch == ":" and (after.isalpha() or after == "/")) or ch == "@" or (ch == "." and i in www)
        if joined and ch != ":":
            out.append(JOINER)
        out.append("\\" + ch if escape else ch)
        if joined and ch == ":":
            out.append(JOINER)
    return "".join(out)


def markup_join(separator: str, values: Iterable[object]) -> Markup:
    """``separator.join`` of outside values, each made :func:`plain`: one :class:`Markup` value for lab.i18n.t."""
    return Markup(separator.join(plain(v) for v in values))


def for_plotly(frame: Any, columns: Iterable[str]) -> Any:
    """A copy of a DataFrame whose text ``columns`` plotly shows as they are: ``<`` and ``&`` written as entities,
    which plotly's labels and hover texts show as the characters (a ``<a href>`` in a message is not a link)."""
    present = [c for c in columns if c in frame.columns]
    return frame.assign(**{c: frame[c].map(_plotly_text) for c in present})


def _plotly_text(value: object) -> object:
    return html.escape(value, quote=False) if isinstance(value, str) else value


def literal_figure(fig: Any) -> Any:
    """A plotly figure whose title, trace names and text categories (data: a dataset's name, its question
    categories) are shown as they are (:func:`for_plotly`'s escaping), in place. Hover templates are left alone."""
    if fig.layout.title.text:
        fig.update_layout(title_text=html.escape(fig.layout.title.text, quote=False))
    for trace in fig.data:
        if isinstance(trace.name, str):
            trace.name = html.escape(trace.name, quote=False)
        for axis in ("x", "y"):
            values = getattr(trace, axis, None)
            if values is not None and any(isinstance(v, str) for v in values):
                setattr(trace, axis, [_plotly_text(v) for v in values])
    return fig
