"""The shared parts issue 52 made of copies: one HTTP-with-retries client (memory/core/http.py) under the endpoint
embedder and the chat judge, and the chat judge's prompt in a file of its own. A real HTTP server on loopback."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory import ConfigError
from memory.core.http import PostFailed, Poster
from memory.write.judges.chat import PROMPT_FILE, REASONS, SYSTEM_PROMPT, load_prompt


@pytest.fixture
def server():
    """A loopback server answering each POST with the next (status, body) of ``replies`` (the last one repeats);
    ``seen`` counts the POSTs and keeps their headers."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state["seen"].append(dict(self.headers))
            status, body = state["replies"][min(len(state["seen"]) - 1, len(state["replies"]) - 1)]
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    state: dict = {"replies": [(200, b"{}")], "seen": []}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1/x"
    yield state
    httpd.shutdown()
    httpd.server_close()


def test_a_transient_failure_is_retried_and_a_final_one_is_not(server):
    poster = Poster(server["url"], {"Authorization": "Bearer sk-secret"}, timeout=5, retries=2, backoff=0.0)
    server["replies"] = [(503, b"busy"), (429, b"slow down"), (200, b'{"ok": 1}')]
    answer = poster.post(b"{}")
    assert (answer.status, json.loads(answer.body)) == (200, {"ok": 1}) and len(server["seen"]) == 3
    assert server["seen"][0]["Authorization"] == "Bearer sk-secret"

    server["replies"], server["seen"] = [(400, b'{"error": {"message": "bad model"}}')], []
    with pytest.raises(PostFailed) as final:
        Poster(server["url"], {}, timeout=5, retries=2, backoff=0.0, keep_error_text=True).post(b"{}")
    assert (final.value.status, final.value.attempts, final.value.transient) == (400, 1, False)
    assert "bad model" in final.value.error_text and len(server["seen"]) == 1  # not retried

    server["replies"], server["seen"] = [(500, b"down")], []
    with pytest.raises(PostFailed) as exhausted:
        poster.post(b"{}")
    assert (exhausted.value.attempts, exhausted.value.error_text, len(server["seen"])) == (3, "", 3)
    assert "sk-secret" not in repr(poster) and exhausted.value.__cause__ is None  # the key is in no failure


def test_a_refused_connection_is_a_transient_connection_failure():
    with pytest.raises(PostFailed) as failed:
        Poster("http://127.0.0.1:9/none", {}, timeout=2, retries=1, backoff=0.0).post(b"{}")
    assert (failed.value.kind, failed.value.attempts, failed.value.transient) == ("connection", 2, True)


def test_a_bounded_answer_is_read_one_byte_past_its_bound(server):
    server["replies"] = [(200, b"x" * 100)]
    assert len(Poster(server["url"], {}, timeout=5, max_bytes=10).post(b"{}").body) == 11


def test_the_chat_prompt_is_a_file_of_its_own_with_every_reason_code():
    text = PROMPT_FILE.read_text(encoding="utf-8")
    assert "{reason_codes}" in text and "{reason_codes}" not in SYSTEM_PROMPT
    assert SYSTEM_PROMPT.startswith(text.splitlines()[0])
    for code, (verdict, meaning) in REASONS.items():
        assert f"- {code} ({verdict}): {meaning}" in SYSTEM_PROMPT.splitlines()


def test_a_prompt_file_without_its_codes_line_is_one_line_naming_it(tmp_path):
    broken = tmp_path / "prompt.md"
    broken.write_text("Classify the statements.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"prompt\.md: the chat judge's prompt must hold the line \{reason_codes\} once"):
        load_prompt(broken)
    with pytest.raises(ConfigError, match=r"missing\.md: the chat judge's prompt cannot be read \(FileNotFoundError\)"):
        load_prompt(tmp_path / "missing.md")
