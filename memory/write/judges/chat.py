"""A model-backed write-path judge: an OpenAI-compatible chat-completions endpoint decides each pair.

:class:`ChatJudge` is a :class:`~memory.write.adjudicate.Judge`, so ``Ingestor(manager, judge=ChatJudge.from_env())``
asks a model, instead of the rules, whether an incoming fact duplicates, updates, coexists with or is new beside a
stored one. The learned judge stays the default: it runs offline, and the one chat model shipped whole on PyPI that was
measured here answered "duplicate" to everything (docs/write-path.md, "A chat model as the judge").

A model can answer anything, so its answer is read strictly: one JSON object holding a verdict of the four and a
reason code of :data:`REASONS` that goes with it. Anything else (prose, a fifth verdict, an unknown code, a refusal,
an HTTP error after retries, a timeout, a malformed body) is decided by the ``fallback`` judge (the rules by default)
and the decision says so: its reason is ``model.fallback``, naming the cause and carrying the fallback's own reason.
Never a crash, never a silent ``new``.

The two statements are user data: they reach the model as JSON strings in the user message, under instructions that
say so, so a statement that says "ignore previous instructions" is a statement to classify. The cosine similarity is
not sent (it is the rules' evidence); here it only marks where the plain two-band rule disagrees.

Only the standard library talks HTTP (memory/core/http.py, shared with the endpoint embedder), with the validation
rules of :mod:`memory.embed.endpoint`. The instructions are a file of their own (chat_prompt.md). The API key never
appears in ``repr`` or in a reason: a fallback names its cause in a few fixed words, never the server's text.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any, Iterable, Mapping

from memory.core.config import DEFAULT_CONFIG, MemoryConfig
from memory.core.errors import ConfigError
from memory.core.http import PostFailed, Poster
from memory.core.reasons import FALLBACK_PREFIX, Reason
from memory.core.textcaches import TextMemo
from memory.embed.endpoint import (check_api_key, check_int, check_model, check_seconds, check_url, parse_seconds,
                                   required)
from memory.write.adjudicate import VERDICTS, Judge, Verdict, judge_reason, plain_rule

URL_ENV = "MEMORY_JUDGE_URL"
MODEL_ENV = "MEMORY_JUDGE_MODEL"
KEY_ENV = "MEMORY_JUDGE_API_KEY"
FALLBACK_KEY_ENV = "OPENAI_API_KEY"
TIMEOUT_ENV = "MEMORY_JUDGE_TIMEOUT"

REASONS: dict[str, tuple[Verdict, str]] = {
    "same_fact": ("duplicate", "the same fact, said again in the same or other words"),
    "value_changed": ("update", "the same attribute of the same person or thing now has another value"),
    "state_ended": ("update", "what the stored statement describes has ended, was cancelled or no longer holds"),
    "different_condition": ("coexist", "the same topic under different conditions or contexts, both true"),
    "added_value": ("new", "a further value beside the stored one (also, another, as well)"),
    "different_subject": ("new", "about a different person or thing"),
    "unrelated": ("new", "a different topic"),
}
"""The reason codes a model may answer, each with the one verdict it goes with and what it means (the prompt shows
both). A decision carries ``model.<code>`` (memory/core/reasons.py)."""

PROMPT_FILE = Path(__file__).with_name("chat_prompt.md")
"""The instructions, a file of their own (package data): the four verdicts in plain words, the reason codes (the
line ``{reason_codes}``, filled from :data:`REASONS`) and that the statements are data."""
REASON_CODES_LINE = "{reason_codes}"


def load_prompt(path: Path = PROMPT_FILE) -> str:
    """The system prompt: the file's text with its ``{reason_codes}`` line replaced by one line per code of
    :data:`REASONS`; ConfigError naming the file when it cannot be read or lacks that line."""
    try:
        text = path.read_text(encoding="utf-8").rstrip("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: the chat judge's prompt cannot be read ({type(exc).__name__})") from None
    if text.split("\n").count(REASON_CODES_LINE) != 1:
        raise ConfigError(f"{path}: the chat judge's prompt must hold the line {REASON_CODES_LINE} once")
    codes = "\n".join(f"- {code} ({verdict}): {meaning}" for code, (verdict, meaning) in REASONS.items())
    return text.replace(REASON_CODES_LINE, codes)


SYSTEM_PROMPT = load_prompt()
"""The instructions (:data:`PROMPT_FILE`), read when this module is imported."""

MAX_BODY_BYTES = 1_000_000
"""A response body longer than this is not a verdict: it is read no further and the fallback decides."""
DEFAULT_CACHE_SIZE = 1024
DEFAULT_MAX_TOKENS = 256
"""The most tokens a model may answer with. The answer is one small JSON object (about 20 tokens); without a bound, a
small model that rambles generated 1,622 tokens for one pair here (40 s on 2 cores: gemma3-270m on llama.cpp's
server), and a cut-off answer is a malformed one, so the fallback decides."""

_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL | re.IGNORECASE)


class _NoVerdict(Exception):
    """The endpoint gave no usable verdict; the message is the cause in a few key-free words."""


class ChatJudge:
    """A :class:`~memory.write.adjudicate.Judge` that asks ``POST {base_url}/chat/completions`` for the verdict.

    ``fallback`` decides whenever the model gives no usable answer (default: the rules). Answers are cached per
    instance, at most ``cache_size`` pairs (least recently used out first; 0: no cache), so a pair asked twice costs
    one request; fallback decisions are not cached, so a passing failure is asked again. The cache holds statements,
    so it is in the registry of caches that hold user text (memory/core/textcaches.py): erasing a user drops every
    cached pair holding one of the user's texts, in every judge of the process (:meth:`forget` does the same for
    given texts, :meth:`clear` empties it).
    """

    def __init__(
        self, *, base_url: str, model: str, api_key: str | None = None, timeout: float = 30.0, retries: int = 2,
        backoff: float = 0.5, fallback: Judge | None = None, cache_size: int = DEFAULT_CACHE_SIZE,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.base_url = check_url(base_url, "base_url", error=ConfigError, path="/chat/completions", key_env=KEY_ENV)
        self.model = check_model(model, "model", error=ConfigError)
        self._api_key = check_api_key(api_key, error=ConfigError)
        self.timeout = check_seconds(timeout, "timeout", positive=True, error=ConfigError)
        self.retries = check_int(retries, "retries", minimum=0, error=ConfigError)
        self.backoff = check_seconds(backoff, "backoff", positive=False, error=ConfigError)
        self.cache_size = check_int(cache_size, "cache_size", minimum=0, error=ConfigError)
        self.max_tokens = check_int(max_tokens, "max_tokens", minimum=1, error=ConfigError)
        if fallback is not None and not callable(fallback):
            raise ConfigError(f"fallback must be a Judge (a callable), got {type(fallback).__name__}")
        self.fallback: Judge = fallback or judge_reason
        self.url = self.base_url + "/chat/completions"
        self.name = f"chat:{self.model}@{urllib.parse.urlsplit(self.base_url).netloc}"
        """Which judge decided, for reports: ``chat:<model>@<host[:port]>``."""
        self._cache: TextMemo[tuple[Verdict, str]] = TextMemo(  # thread-safe: a worker and a caller may judge at once
            self.cache_size, name=f"chat judge answers ({self.name})", lru=True, texts_of=lambda key: key[1:])
        """(model, stored statement, incoming statement) -> (verdict, reason code); the statements are what it
        holds of a user."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, *, fallback: Judge | None = None) -> ChatJudge:
        """Configure from ``MEMORY_JUDGE_*`` variables, as :meth:`memory.embed.endpoint.EndpointEmbedder.from_env`.

        The API key falls back to ``OPENAI_API_KEY`` because that is where most setups already keep it.
        """
        url = check_url(required(environ, URL_ENV, what="the chat judge", error=ConfigError), URL_ENV,
                        error=ConfigError, path="/chat/completions", key_env=KEY_ENV)
        model = check_model(required(environ, MODEL_ENV, what="the chat judge", error=ConfigError), MODEL_ENV,
                            error=ConfigError)
        options: dict[str, Any] = {}
        if timeout := environ.get(TIMEOUT_ENV, "").strip():
            options["timeout"] = parse_seconds(timeout, TIMEOUT_ENV, error=ConfigError)
        key_variable = KEY_ENV if environ.get(KEY_ENV, "").strip() else FALLBACK_KEY_ENV
        api_key = check_api_key(environ.get(key_variable, "").strip() or None, key_variable, error=ConfigError)
        return cls(base_url=url, model=model, api_key=api_key, fallback=fallback, **options)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"ChatJudge(url={self.url!r}, model={self.model!r}, api_key={key}, cache_size={self.cache_size})"

    # No __len__: an empty cache would make the judge falsy, and ``judge or judge_reason`` would drop it.

    def __call__(self, existing: str, incoming: str, similarity: float, *,
                 config: MemoryConfig | None = None) -> tuple[Verdict, Reason]:
        """The model's verdict on one (stored, incoming) pair, or the fallback's with the cause."""
        cfg = config or DEFAULT_CONFIG
        key = (self.model, existing, incoming)
        answer = self._cached(key)
        if answer is None:
            try:
                answer = _verdict(_content(self._post_with_retries(self._payload(existing, incoming))))
            except _NoVerdict as exc:
                return self._fall_back(str(exc), existing, incoming, similarity, cfg)
            self._remember(key, answer)
        verdict, code = answer
        band = plain_rule(similarity, cfg)
        return verdict, Reason(f"model.{code}", {"model": self.model}, (similarity, band) if band != verdict else None)

    # --- the cache ------------------------------------------------------------------------

    @property
    def cached_pairs(self) -> int:
        """How many (stored, incoming) pairs the cache holds."""
        return len(self._cache)

    def forget(self, texts: Iterable[str]) -> int:
        """Drop every cached pair holding one of ``texts`` (an erased user's facts: a statement that is one of them
        or contains one); how many were dropped."""
        return self._cache.forget(texts)

    def clear(self) -> None:
        """Empty the cache."""
        self._cache.clear()

    def _cached(self, key: tuple[str, str, str]) -> tuple[Verdict, str] | None:
        return self._cache.get(key)

    def _remember(self, key: tuple[str, str, str], answer: tuple[Verdict, str]) -> None:
        self._cache.put(key, answer)

    # --- one request ---------------------------------------------------------------------

    def _payload(self, existing: str, incoming: str) -> bytes:
        """The chat request: instructions, then the two statements as JSON strings (data, not instructions)."""
        statements = (f"Stored statement: {json.dumps(existing, ensure_ascii=False)}\n"
                      f"Incoming statement: {json.dumps(incoming, ensure_ascii=False)}\n"
                      "Answer with the JSON object only.")
        return json.dumps({
            "model": self.model, "temperature": 0, "max_tokens": self.max_tokens,
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": statements}],
        }, ensure_ascii=False).encode("utf-8")

    def _post_with_retries(self, payload: bytes) -> bytes:
        """POST through the shared client (memory/core/http.py): what may pass on its own (connection, timeout, 429,
        5xx) is retried with exponential backoff; any other failure is final. No server text is kept: it may echo
        the key or the statements. The cause of a failure is a few fixed words (:class:`_NoVerdict`)."""
        poster = Poster(self.url, self._headers(), timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                        max_bytes=MAX_BODY_BYTES)
        try:
            answer = poster.post(payload)
        except PostFailed as failed:
            if failed.kind == "status":
                cause = f"HTTP {failed.status}"
            elif failed.kind == "timeout" or failed.connect_timed_out:
                cause = f"timeout after {self.timeout:g} s"
            else:
                cause = f"connection failed: {type(failed.reason).__name__}"
            if not failed.transient:
                raise _NoVerdict(cause) from None
            raise _NoVerdict(f"{cause} ({failed.attempts} attempt{'s' if failed.attempts > 1 else ''})") from None
        if answer.status != 200:
            raise _NoVerdict(f"HTTP {answer.status}")
        return answer.body

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _fall_back(self, cause: str, existing: str, incoming: str, similarity: float,
                   config: MemoryConfig) -> tuple[Verdict, Reason]:
        """The fallback's verdict, its reason kept whole inside ``model.fallback`` (rendered in any language)."""
        verdict, why = self.fallback(existing, incoming, similarity, config=config)
        params = {"model": self.model, "cause": cause, "fallback_code": why.code, "fallback_text": why.text(),
                  **{FALLBACK_PREFIX + k: v for k, v in why.params.items()}}
        return verdict, Reason("model.fallback", params, why.plain)


# --- reading the answer -----------------------------------------------------------------------


def _content(body: bytes) -> str:
    """The assistant's text of a chat-completions response (``choices[0].message.content``)."""
    if len(body) > MAX_BODY_BYTES:
        raise _NoVerdict("response body too long")
    try:
        message = json.loads(body.decode("utf-8"))["choices"][0]["message"]
    except (UnicodeDecodeError, ValueError, RecursionError, LookupError, TypeError):
        raise _NoVerdict("malformed response body") from None
    if not isinstance(message, dict):
        raise _NoVerdict("malformed response body")
    if message.get("refusal"):
        raise _NoVerdict("refused")
    content = message.get("content")
    if content is None or (isinstance(content, str) and not content.strip()):
        raise _NoVerdict("empty answer")
    if not isinstance(content, str):
        raise _NoVerdict("malformed response body")
    return content


def _verdict(content: str) -> tuple[Verdict, str]:
    """(verdict, reason code) of an answer that is exactly ``{"verdict": ..., "reason": ...}``, bare or in a
    ```json fence; the code must be one of :data:`REASONS` and go with the verdict."""
    text = content.strip()
    if fenced := _FENCE.match(text):
        text = fenced.group(1).strip()
    try:
        answer = json.loads(text, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError):
        raise _NoVerdict("malformed answer") from None
    if not isinstance(answer, dict) or set(answer) != {"verdict", "reason"}:
        raise _NoVerdict("malformed answer")
    verdict, code = answer["verdict"], answer["reason"]
    if not isinstance(verdict, str) or verdict not in VERDICTS:
        raise _NoVerdict("unknown verdict")
    if not isinstance(code, str) or code not in REASONS:
        raise _NoVerdict("unknown reason code")
    if REASONS[code][0] != verdict:
        raise _NoVerdict(f"reason {code} does not go with verdict {verdict}")
    return REASONS[code][0], code


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object with a key given twice ({"verdict": "update", "verdict": "new"}) has no one answer."""
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("a key is given twice")
    return dict(pairs)
