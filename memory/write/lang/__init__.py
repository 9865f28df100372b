"""The write path's languages: one reader per language behind one interface (:class:`Language`), and
:func:`language_of`, which decides a statement's language once.

- ``en.py``: the English reader (reading, standing alone, its patterns and word tables);
- ``zh.py``: the Chinese reader;
- ``base.py``: what both share (:class:`Reading`, :class:`Language`);
- ``script.py``: the one test for Chinese characters (a text with any Chinese character is Chinese, as before).

The shared code (extraction, the rules, the learned judge's features) asks the reader of a statement rather than
testing for Chinese characters itself (tests/test_architecture.py checks it).
"""

from __future__ import annotations

from memory.write.lang.base import Language, Reading
from memory.write.lang.script import is_chinese

__all__ = ["Language", "Reading", "is_chinese", "language_of", "languages"]

_READERS: tuple[Language, Language] | None = None
"""(English, Chinese), loaded on the first statement: the readers import the word lists (memory.write.lexicon), which
test scripts with :func:`is_chinese` from this package, so the package itself imports no reader up front."""


def languages() -> tuple[Language, Language]:
    """The readers: English, Chinese."""
    global _READERS
    if _READERS is None:
        from memory.write.lang import en, zh

        _READERS = (en.LANGUAGE, zh.LANGUAGE)
    return _READERS


def language_of(text: str) -> Language:
    """The reader of a statement: Chinese when it holds any Chinese character (a Chinese sentence with an English
    brand name is Chinese), else English."""
    readers = _READERS or languages()
    return readers[1] if is_chinese(text) else readers[0]
