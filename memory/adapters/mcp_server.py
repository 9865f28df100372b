"""The MCP server: one user's governed memory as four tools, over stdio or streamable HTTP on 127.0.0.1.

``python -m memory mcp --tenant acme --user alice [--settings point.json] [--data-dir DIR] [--http [--port P]]
[--show-blind]``

* ``remember(text, role="user", timestamp=None)``: the operating point's write path; the write-time decisions
  (duplicate / update / coexist / new, each with its reason) for ``facts``, the stored record's id for ``raw``;
* ``recall(query, top_k=None)``: the governed memories, with their text; every candidate governance dropped as its
  id, stage and reason, counted by stage, never with its text (its reason states numbers and ids only). With
  ``--show-blind`` (a teaching flag: :attr:`ServerConfig.show_blind`) also the blind top-k, each item marked
  ``"admitted"``: false unless governed recall returned it too;
* ``explain(memory_id)``: the version chain of one memory, with the decisions that made each version (the owner's
  own history, retired versions' texts included: an audit asked for by id, not context for an answer);
* ``erase(confirm)``: erase the user from every path and return the verification.

The owner is the server's: the (tenant, user) is fixed when the server starts and no tool takes a tenant, user or
owner argument (an extra argument is an error, not ignored), so what a model writes cannot reach another user's
memory. An id of another owner's memory is answered exactly like an id that does not exist. Arguments are checked
strictly (no unknown names, no coercion: ``"5"`` is not a number) and then by the library's own rules
(:func:`memory.validate_text`, MemoryConfig's ranges); every error comes back as a tool error of one line.

What reaches the model is what governance admits: a stored text that the threshold (or the lifecycle, top_k or the
token budget) drops for a query never comes back in that query's answer, so a prompt injection a user once said,
stored and dropped, is not handed to the model by the memory that dropped it. ``remember`` names the stored fact a
decision was taken against by id only, for the same reason.

Built on the official ``mcp`` SDK's low-level server, which takes each tool's JSON Schema as written here. An optional
extra: ``pip install -r requirements-adapters.txt``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from memory import (
    ROLES, ErasedError, Ingestor, InputError, MemoryConfig, MemoryLabError, MemoryManager, Message, OwnerArgs, Reason,
    StoreLocation, iso, parse_time, validate_identifier, validate_text, version_chain,
)
from memory.eval import OperatingPoint

log = logging.getLogger(__name__)

SERVER_NAME = "memory-governance-lab"
WORKSPACE = "mcp"
"""The workspace the server's memories live in (in the data folder, beside the lab's)."""
SESSION = "mcp"
"""The session id of the messages the server stores."""
HOST = "127.0.0.1"
"""The only address the HTTP transport binds: whoever reaches the port acts as the configured user."""
DEFAULT_PORT = 8000
HTTP_PATH = "/mcp"
MAX_ERROR_CHARS = 500
OWNER_WORDS = ("tenant", "user", "owner", "namespace")
"""An argument whose name holds one of these is answered with where the owner comes from."""


class ToolArgumentError(InputError):
    """A tool's arguments do not match its schema (unknown name, missing, wrong type)."""


@dataclass(frozen=True)
class ServerConfig:
    """What a server serves: one (tenant, user), an operating point, and where the memory lives."""

    tenant_id: str
    user_id: str
    point: OperatingPoint = field(default_factory=OperatingPoint)
    """The measured setting (model, threshold on its scale, top_k, write path, judge); defaults without a file."""
    location: StoreLocation = field(default_factory=StoreLocation.from_env)
    """The data folder (or Chroma server); default MEMORY_DATA_DIR or ./.memory-data."""
    workspace: str = WORKSPACE
    show_blind: bool = False
    """A teaching flag: ``recall`` also returns the blind top-k (similarity only), each item marked ``admitted``
    (false unless governed recall returned it too). Off: the model sees the governed memories only."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tenant_id", validate_identifier(self.tenant_id, "tenant"))
        object.__setattr__(self, "user_id", validate_identifier(self.user_id, "user"))


# --- the tools, as plain Python over one owner ------------------------------------------------------------------------

@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...]
    annotations: types.ToolAnnotations

    def input_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": self.properties, "required": list(self.required),
                "additionalProperties": False}


def tool_specs(config: MemoryConfig, *, show_blind: bool = False) -> list[ToolSpec]:
    """The four tools' descriptions and input schemas (the text limit is the config's ``max_message_chars``);
    ``show_blind``: the server's teaching flag (``recall``'s description says what it adds)."""
    limit = config.max_message_chars
    low, high = MemoryConfig.range_of("top_k")
    owner = " The user is fixed by the server's configuration; no argument names one."
    return [
        ToolSpec("remember", "Remember one message of the conversation for this user. With the facts write path the "
                 "message is read into atomic facts and each is decided against what is stored: duplicate (reinforced,"
                 " not stored again), update (the old fact is retired and superseded), coexist or new, each with its "
                 "reason. With the raw write path the message is stored as it is and its record id returned." + owner,
                 {"text": {"type": "string", "minLength": 1, "maxLength": limit,
                           "description": f"The message, as it was said (at most {limit:,} characters)."},
                  "role": {"type": "string", "enum": list(ROLES), "default": "user",
                           "description": "Who said it; facts are read from the user's turns."},
                  "timestamp": {"type": ["string", "null"], "default": None,
                                "description": "When it was said, ISO 8601 (2026-05-01T10:00:00Z); default: now."}},
                 ("text",), types.ToolAnnotations(title="Remember a message", read_only_hint=False,
                                                  destructive_hint=False, idempotent_hint=False)),
        ToolSpec("recall", "Recall this user's memories for a query, governed: only memories at or above the "
                 "similarity threshold, current (not superseded, not expired), ranked and cut to top_k within the "
                 "token budget, with their text in 'governed': answer from these only. Every candidate that was "
                 "dropped comes back in 'dropped' as its memory_id, the stage that dropped it and the reason, without "
                 "its text, and counted by stage in 'dropped_by_stage'." + (BLIND_NOTE if show_blind else "") + owner,
                 {"query": {"type": "string", "minLength": 1, "maxLength": limit, "description": "What to recall."},
                  "top_k": {"type": ["integer", "null"], "minimum": low, "maximum": high, "default": None,
                            "description": "At most this many memories; default: the operating point's top_k."}},
                 ("query",), types.ToolAnnotations(title="Recall memories", read_only_hint=True)),
        ToolSpec("explain", "Explain one of this user's memories: its version chain, oldest first (which fact it "
                 "superseded and which superseded it), with the write-time decision and reason behind each version. "
                 "An audit of the memory's history: retired versions are not facts to answer with." + owner,
                 {"memory_id": {"type": "string", "minLength": 1,
                                "description": "A memory_id returned by remember or recall."}},
                 ("memory_id",), types.ToolAnnotations(title="Explain a memory", read_only_hint=True)),
        ToolSpec("erase", "Erase everything this user's memory holds (long-term records, recent window, summary, "
                 "decision log, caches and, on disk, every file's bytes) and return the verification: records left, "
                 "canary bytes found on disk, every path checked. Cannot be undone." + owner,
                 {"confirm": {"type": "boolean", "description": "Must be true: the erasure cannot be undone."}},
                 ("confirm",), types.ToolAnnotations(title="Erase this user's memory", read_only_hint=False,
                                                     destructive_hint=True, idempotent_hint=True)),
    ]


BLIND_NOTE = (" Teaching mode (this server was started with --show-blind): 'blind' holds what a plain similarity "
              "top-k would have injected, each item marked admitted: false unless governed recall returned it too; an "
              "item not admitted must not be used in an answer.")


class MemoryTools:
    """The tools over one owner's memory: :meth:`call` checks the arguments and returns a JSON-ready dict.
    ``show_blind``: the teaching flag (:attr:`ServerConfig.show_blind`)."""

    def __init__(self, manager: MemoryManager, ingestor: Ingestor | None, *, tenant_id: str, user_id: str,
                 show_blind: bool = False) -> None:
        self.manager = manager
        self.ingestor = ingestor
        self.owner: OwnerArgs = {"tenant_id": validate_identifier(tenant_id, "tenant"),
                                 "user_id": validate_identifier(user_id, "user")}
        self.show_blind = show_blind
        self.specs = {s.name: s for s in tool_specs(manager.config, show_blind=show_blind)}
        self._methods: dict[str, Callable[..., dict[str, Any]]] = {
            "remember": self.remember, "recall": self.recall, "explain": self.explain, "erase": self.erase}

    @classmethod
    def open(cls, config: ServerConfig) -> "MemoryTools":
        """Build the manager and write path of ``config`` (the model loads here)."""
        manager, ingestor = config.point.open(location=config.location, workspace=config.workspace)
        return cls(manager, ingestor, tenant_id=config.tenant_id, user_id=config.user_id,
                   show_blind=config.show_blind)

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        spec = self.specs.get(name)
        if spec is None:
            raise ToolArgumentError(f"unknown tool {name!r} (tools: {', '.join(self.specs)})")
        return self._methods[name](**check_arguments(spec, arguments))

    def remember(self, text: str, role: str = "user", timestamp: str | None = None) -> dict[str, Any]:
        validate_text(text, "text", max_chars=self.manager.config.max_message_chars)
        when = None if timestamp is None else parse_time(timestamp, "timestamp")
        message = Message(**self.owner, content=text, role=role, timestamp=when, session_id=SESSION)
        if self.ingestor is None:
            [record] = self.manager.add_many([message])
            return {"write_path": "raw", "message_id": message.id, "memory_id": record.memory_id}
        entries = self.ingestor.ingest_many([message])
        out: dict[str, Any] = {"write_path": "facts", "message_id": message.id, "decisions": [
            {"decision": e.decision.decision, "reason": e.decision.reason, "code": e.decision.why.code,
             "fact": e.decision.fact, "memory_id": e.memory_id, "superseded": e.superseded or None,
             "similarity": _round(e.decision.similarity), "plain_rule": e.decision.plain_rule,
             # the stored fact it was judged against, by id: its text is recall's to admit, not remember's to echo
             "candidate": {"memory_id": e.decision.candidate.id} if e.decision.candidate else None}
            for e in entries]}
        if not entries:
            out["note"] = (f"no fact was read from this {role} turn; it is kept in the recent window only"
                           if role != "user" else "no fact was read from this turn; it is kept in the recent window")
        return out

    def recall(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        config = self.manager.config if top_k is None else self.manager.config.replace(top_k=top_k)
        validate_text(query, "query", max_chars=config.max_message_chars)
        result = self.manager.retrieve(query, **self.owner, config=config)  # blind too: it names lifecycle drops
        by_stage: dict[str, int] = {}
        for d in result.dropped:
            by_stage[d.stage] = by_stage.get(d.stage, 0) + 1
        out: dict[str, Any] = {
            "query": query, "as_of": iso(result.as_of), "threshold": config.threshold, "top_k": config.top_k,
            "token_budget": config.token_budget,
            "governed": [{"memory_id": h.record.memory_id, "content": h.record.content,
                          "similarity": _round(h.similarity), "score": _round(h.score)} for h in result.governed],
            # what governance left out: ids, stages and reasons (numbers and ids only: recall.govern), never a text
            "dropped": [{"memory_id": d.hit.record.memory_id, "similarity": _round(d.hit.similarity),
                         "stage": d.stage, "reason": d.reason} for d in result.dropped],
            "dropped_by_stage": by_stage,
        }
        if self.show_blind:
            admitted = {h.record.memory_id for h in result.governed}
            out["blind"] = [{"memory_id": h.record.memory_id, "content": h.record.content,
                             "similarity": _round(h.similarity), "admitted": h.record.memory_id in admitted}
                            for h in result.blind]
        return out

    def explain(self, memory_id: str) -> dict[str, Any]:
        memory_id = validate_identifier(memory_id, "memory_id")
        try:
            chain = version_chain(self.manager, memory_id, **self.owner)
        except KeyError:  # the same answer for an id of nobody's and an id of another owner's
            raise InputError("no memory with this memory_id for this user (ids come from remember and recall)"
                             ) from None
        decided: dict[str, list[dict[str, Any]]] = {}
        for entry in self.manager.decisions(**self.owner):
            decided.setdefault(str(entry.get("memory_id")), []).append(
                {"decision": entry.get("decision"), "reason": Reason.from_dict(entry).text(),
                 "fact": entry.get("fact"), "at": iso(float(entry.get("at") or 0.0))})
        return {"memory_id": memory_id, "current": next((r.memory_id for r in chain if not r.is_deprecated), None),
                "versions": [
                    {"memory_id": r.memory_id, "version": r.version, "content": r.content,
                     "is_deprecated": r.is_deprecated, "supersedes": r.supersedes or None,
                     "superseded_by": r.superseded_by or None, "category": r.category,
                     "created_at": iso(r.created_at), "valid_until": iso(r.valid_until),
                     "decisions": decided.get(r.memory_id, [])} for r in chain]}

    def erase(self, confirm: bool) -> dict[str, Any]:
        if confirm is not True:
            raise InputError("erase needs confirm: true (nothing was erased)")
        import gc

        from memory import return_freed_memory

        on_disk = self.manager.data_dir is not None
        report = self.manager.erase_user(**self.owner, actor="mcp", disk_scan=on_disk)  # every registered cache too
        disk = next((p for p in report.paths if p.name == "disk"), None)
        out = {"verified": report.ok, "records_left": self.manager.count(**self.owner),
               "canary_bytes_found": None if disk is None else disk.remaining, "disk_scanned": disk is not None,
               "removed": dict(report.removed), "others_touched": report.others_touched,
               "paths_checked": [p.to_dict() for p in report.paths]}
        # The process keeps no object holding the user's texts: the erasure emptied the caches, the tools keep no
        # result, and what only a reference cycle still held (a traceback, a finished request) is collected now; the
        # heap glibc can give back is given back. Freed memory not yet reused may still hold bytes (docs/trust.md, "The MCP server's memory").
        del report
        gc.collect()
        return_freed_memory()
        return out


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """``arguments`` as keyword arguments of the tool, checked against its schema without coercion."""
    args = {} if arguments is None else arguments
    if not isinstance(args, Mapping):
        raise ToolArgumentError(f"{spec.name}: arguments must be an object, got {type(args).__name__}")
    takes = ", ".join(spec.properties)
    for name in args:
        if name not in spec.properties:
            why = (": the tenant and user come from the server's configuration, never from an argument"
                   if any(w in str(name).lower() for w in OWNER_WORDS) else "")
            raise ToolArgumentError(f"{spec.name}: unknown argument {str(name)[:60]!r}{why} ({spec.name} takes {takes})")
    for name in spec.required:
        if name not in args:
            raise ToolArgumentError(f"{spec.name}: missing argument {name!r} ({spec.name} takes {takes})")
    for name, value in args.items():
        prop = spec.properties[name]
        kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        if not any(_PYTHON_TYPES[kind](value) for kind in kinds):
            raise ToolArgumentError(f"{spec.name}: {name} must be {' or '.join(_KIND_NAMES[k] for k in kinds)}, "
                                    f"got {_json_type(value)}")
        if "enum" in prop and value not in prop["enum"]:
            raise ToolArgumentError(f"{spec.name}: {name} must be one of {', '.join(prop['enum'])}, "
                                    f"got {str(value)[:40]!r}")
    return dict(args)


_PYTHON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str, "integer": lambda v: type(v) is int,  # bool is not an integer here
    "boolean": lambda v: type(v) is bool, "null": lambda v: v is None,
}
_KIND_NAMES = {"string": "a string", "integer": "an integer", "boolean": "true or false", "null": "null"}


def _json_type(value: Any) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)


def one_line(text: str, *, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` as one printable line (line breaks and other control characters escaped), cut to ``limit``."""
    flat = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


# --- the MCP server -----------------------------------------------------------------------------------------------------

def build_server(tools: MemoryTools, *, describe: str = "") -> Server[Any]:
    """The low-level MCP server over ``tools``: tools/list and tools/call, each call run on a worker thread."""
    listed = [types.Tool(name=s.name, description=s.description, input_schema=s.input_schema(),
                         annotations=s.annotations) for s in tools.specs.values()]

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
                        ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            out = await anyio.to_thread.run_sync(functools.partial(tools.call, params.name, params.arguments))
        except (MemoryLabError, ValueError, KeyError) as exc:  # the caller's input: say what was wrong
            text = ("the user was erased while this message was written; it was not stored"
                    if isinstance(exc, ErasedError) else str(exc.args[0] if isinstance(exc, KeyError) and exc.args
                                                             else exc))
            return _error(text if text.startswith(f"{params.name}:") else f"{params.name}: {text}")
        except Exception as exc:  # a fault of the server: its log has the traceback, the client one line
            log.exception("tool %r failed", params.name)
            return _error(f"{params.name}: internal error ({type(exc).__name__}); see the server's log")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(out, ensure_ascii=False))],
                                    structured_content=out)

    return Server(SERVER_NAME, version="1", on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="Governed long-term memory of one user" + (f" ({describe})" if describe else "")
                  + ": remember what the user says, recall before answering and answer from the governed memories "
                  "only (recall names what it dropped and why, without its text), explain a memory's versions, erase "
                  "on the user's request. The user is fixed by this server's configuration."
                  + (" Teaching mode: recall also shows the blind top-k; an item marked admitted: false is what plain "
                     "top-k would have injected, not a memory to use." if tools.show_blind else ""))


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=one_line(text))], is_error=True)


def describe(config: ServerConfig) -> str:
    point, cfg = config.point, config.point.config
    teaching = "; teaching: blind results shown, marked not admitted" if config.show_blind else ""
    return (f"tenant {config.tenant_id!r}, user {config.user_id!r}; {point.embedder} at threshold {cfg.threshold:g}, "
            f"top_k {cfg.top_k}, {point.write_path} write path{teaching}")


def serve(config: ServerConfig, *, http: bool = False, port: int = DEFAULT_PORT, host: str = HOST) -> None:
    """Open the memory (the model loads first), then serve until the client closes stdin (stdio) or the process
    is stopped (HTTP on ``host``:``port``, which must be 127.0.0.1)."""
    if http and host != HOST:
        raise InputError(f"the MCP server's HTTP transport binds {HOST} only, got {host!r}: whoever reaches the port "
                         "acts as the configured user")
    if http and not 1 <= port <= 65535:
        raise InputError(f"port must be in [1, 65535], got {port}")
    sock = _bound_socket(host, port) if http else None  # a port in use fails here, before the model loads
    with _stdout_to_stderr():  # nothing the model's loading prints may reach the stdio wire
        tools = MemoryTools.open(config)
    server = build_server(tools, describe=describe(config))
    where = f"http://{host}:{port}{HTTP_PATH}" if http else "stdio"
    print(f"memory mcp: serving {describe(config)} on {where}", file=sys.stderr, flush=True)
    try:
        if sock is None:
            anyio.run(_serve_stdio, server)
        else:
            _serve_http(server, sock, port)
    finally:
        tools.manager.close()


async def _serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _serve_http(server: Server[Any], sock: socket.socket, port: int) -> None:
    import uvicorn

    names = [f"{HOST}:{port}", f"localhost:{port}"]
    security = TransportSecuritySettings(  # a page in a browser on this machine must not reach the port either
        enable_dns_rebinding_protection=True, allowed_hosts=names, allowed_origins=[f"http://{n}" for n in names])
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, transport_security=security, host=HOST)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def _bound_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.listen(128)
    return sock


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 (and sys.stdout) at stderr for the block."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def server_config(*, tenant: str, user: str, settings: str | Path | OperatingPoint | None = None,
                  data_dir: str | Path | None = None) -> ServerConfig:
    """The configuration of ``python -m memory mcp``: the operating point of ``settings`` (a settings file's path,
    read by load_operating_point's limits: a one-line DataFileError when refused; or a point already loaded; defaults
    without one), the data folder ``data_dir`` (default MEMORY_DATA_DIR or ./.memory-data)."""
    from memory import check_folder
    from memory.eval import load_operating_point

    if isinstance(settings, OperatingPoint):
        point = settings
    else:
        point = load_operating_point(settings) if settings is not None else OperatingPoint()
    folder = check_folder(data_dir, what="--data-dir") if data_dir is not None else None
    return ServerConfig(tenant, user, point, StoreLocation.from_env(folder))
