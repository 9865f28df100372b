"""Errors raised by the memory library.

Every error message names what was wrong (the field, the file, the item) so a
person can fix the input without reading a traceback.
"""

from __future__ import annotations


class MemoryLabError(Exception):
    """Base class of every error the library raises on purpose."""


class ConfigError(MemoryLabError, ValueError):
    """A MemoryConfig field, or another component's setting (a judge's URL, model or timeout), is out of range or of
    the wrong type."""


class IdentifierError(MemoryLabError, ValueError):
    """A tenant, user, session or message identifier is not a plain non-empty string."""


class InputError(MemoryLabError, ValueError):
    """A message, query or other caller input is unusable (empty, not text, too long)."""


class DataFileError(MemoryLabError, ValueError):
    """A scenario, pair or dataset file is malformed; the message names file, item and field."""


class TooManyMessagesError(DataFileError):
    """A scenario holds more messages than the caller accepts (``count`` of them, ``limit`` allowed)."""

    def __init__(self, message: str, *, count: int, limit: int) -> None:
        super().__init__(message)
        self.count = count
        self.limit = limit


class EmbedderError(MemoryLabError, RuntimeError):
    """The embedding model is missing, corrupted or cannot be loaded offline."""


class ErasedError(MemoryLabError):
    """The message's user was erased after the message was accepted and before it was stored; it was dropped."""


class ErasurePendingError(MemoryLabError):
    """The user's erasure was asked for and has not finished (interrupted by a full disk, a kill or a crash, or still
    running in another process): nothing of the user is served, and nothing new of the user is written, until it
    completes (:meth:`memory.MemoryManager.recover`, run when the store is opened, finishes it)."""


class WriteError(MemoryLabError, RuntimeError):
    """A write failed after retries and was rolled back: nothing of it is stored, nothing of it is pending."""


class DiskFullError(WriteError):
    """The disk holding the data folder is full, or too full to take a write and keep the reserve that erasures need
    (:mod:`memory.store.space`). Nothing of the refused write is stored; the store stays readable and erasable."""

    def __init__(self, message: str, *, folder: str | None = None, free_bytes: int | None = None,
                 needed_bytes: int | None = None) -> None:
        super().__init__(message)
        self.folder = folder
        self.free_bytes = free_bytes
        self.needed_bytes = needed_bytes


class BusyError(WriteError):
    """A write or erasure waited longer than its bounded wait for the manager's write lock (another write held it);
    nothing of it was done, and it can be tried again."""
