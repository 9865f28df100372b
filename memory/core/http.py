"""One JSON POST with retries, for the library's OpenAI-compatible clients: the endpoint embedder
(memory/embed/endpoint.py) and the chat judge (memory/write/judges/chat.py).

Only the standard library talks HTTP: nothing to install. :meth:`Poster.post` retries what may pass on its own (a
connection that failed, no answer within the timeout, HTTP 429 or 5xx), backing off exponentially, and raises
:class:`PostFailed` with what failed last, in fields (never a message): each client words its own error from them, so
one keeps the server's error text and the other keeps none. The headers (the API key) are never in a
:class:`PostFailed` nor in its cause.
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Literal, Mapping

ERROR_TEXT_BYTES = 4096
"""How much of an HTTP error's body is read when the client keeps the server's error text."""


class PostFailed(Exception):
    """A POST that gave no answer: the last failure, after ``attempts`` attempts.

    ``kind``: ``status`` (the server answered an error status, ``status``), ``timeout`` (no answer within the
    timeout) or ``connection`` (the connection failed; ``reason`` is why, e.g. a refused connection or a connect that
    timed out)."""

    def __init__(self, kind: Literal["status", "timeout", "connection"], *, status: int = 0, error_text: str = "",
                 phrase: str = "", reason: BaseException | None = None, attempts: int = 1) -> None:
        super().__init__(kind if kind != "status" else f"HTTP {status}")
        self.kind = kind
        self.status = status
        self.error_text = error_text
        """The error body's first :data:`ERROR_TEXT_BYTES` bytes, decoded ("" unless the client keeps it)."""
        self.phrase = phrase
        """The status line's reason phrase ("Not Found")."""
        self.reason = reason
        self.attempts = attempts

    @property
    def transient(self) -> bool:
        """Worth another attempt: a connection failure, a timeout, HTTP 429 or 5xx."""
        return self.kind != "status" or self.status == 429 or self.status >= 500

    @property
    def connect_timed_out(self) -> bool:
        """A connection failure whose reason is a timeout (the connect, rather than the answer, timed out)."""
        return self.kind == "connection" and isinstance(self.reason, TimeoutError)


@dataclass(frozen=True)
class Answer:
    """What the server answered: its status and body (at most ``max_bytes`` + 1 bytes of it, when bounded)."""

    status: int
    body: bytes


@dataclass(frozen=True)
class Poster:
    """POST JSON bodies to one URL, ``retries`` times more on a transient failure, sleeping ``backoff * 2**n``
    seconds before the n-th retry. ``keep_error_text``: read the error body of a failed status (to show the server's
    message); ``max_bytes``: read at most this many bytes of an answer, and one more (so a caller tells one too long)."""

    url: str
    headers: Mapping[str, str] = field(repr=False)
    timeout: float
    retries: int = 0
    backoff: float = 0.5
    keep_error_text: bool = False
    max_bytes: int | None = None

    def post(self, payload: bytes) -> Answer:
        """The answer to one POST, after the retries a transient failure earns; :class:`PostFailed` otherwise (a
        failure that is not transient is raised at once)."""
        attempts = self.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                return self._once(payload)
            except PostFailed as failed:
                failed.attempts = attempt
                if not failed.transient or attempt == attempts:
                    raise
            time.sleep(self.backoff * 2 ** (attempt - 1))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _once(self, payload: bytes) -> Answer:
        request = urllib.request.Request(self.url, data=payload, method="POST", headers=dict(self.headers))
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read() if self.max_bytes is None else response.read(self.max_bytes + 1)
                return Answer(int(response.status), body)
        except urllib.error.HTTPError as exc:
            text = _error_text(exc) if self.keep_error_text else ""
            exc.close()
            raise PostFailed("status", status=exc.code, error_text=text, phrase=str(exc.reason or "")) from None
        except TimeoutError:  # socket.timeout is TimeoutError since Python 3.10
            raise PostFailed("timeout") from None
        except (OSError, http.client.HTTPException) as exc:
            raise PostFailed("connection", reason=getattr(exc, "reason", exc)) from None


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read(ERROR_TEXT_BYTES).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""
