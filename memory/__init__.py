"""Memory Governance Lab: governed agent memory on Chroma (three tracks per tenant and user).

Typical use::

    from memory import MemoryManager, MemoryConfig, Message
    mm = MemoryManager(MemoryConfig(threshold=0.35))
    mm.add(Message(tenant_id="acme", user_id="alice", content="The budget is 300,000 yuan."))
    result = mm.retrieve("what is the budget?", tenant_id="acme", user_id="alice")

This module is the runtime's public API; :mod:`memory.eval` is the evaluation tools'. The layers below
(``memory.core < memory.embed < memory.store < memory.runtime < memory.write < memory.eval < memory.adapters <
memory.reliability < memory.tools``)
import only downward, which ``tests/test_architecture.py`` checks.
"""

from memory.core.config import MemoryConfig
from memory.core.errors import (
    BusyError, ConfigError, DataFileError, DiskFullError, EmbedderError, ErasedError, ErasurePendingError,
    IdentifierError, InputError,
    MemoryLabError, TooManyMessagesError, WriteError,
)
from memory.core.exports import csv_bytes, formula_safe, write_csv
from memory.core.reasons import ENGLISH, FALLBACK_PREFIX, Language, Reason, render_reason
from memory.core.owner import Owner
from memory.core.safefile import MAX_FILE_MB_ENV, check_folder, max_file_bytes, read_regular_file
from memory.core.scenario import (
    Scenario, ScenarioQuery, load_scenario, parse_scenario, replay, shipped_scenarios,
)
from memory.core.schema import (
    ROLES, Context, Dropped, EraseReport, Hit, MemoryRecord, Message, OwnerArgs, PathCheck, RecallResult, iso, parse_time,
    validate_identifier, validate_text,
)
from memory.core.textcaches import TextMemo, registered_caches
from memory.core.tokens import count_tokens
from memory.embed.embedders import (
    EMBEDDER_NAMES, ENDPOINT, LOCAL_PREFIX, Embedder, LexicalEmbedder, SentenceTransformerEmbedder, dedupe,
    length_batches, lexical_tokens, make_embedder,
)
from memory.embed.endpoint import URL_ENV
from memory.runtime.erase import scan_for_bytes
from memory.runtime.lifecycle import DEFAULT_DAYS, DEFAULT_FLOOR, ForgetReport, forget, version_chain
from memory.runtime.manager import MemoryManager, format_context, memory_id_for
from memory.runtime.recall import Candidates, govern
from memory.runtime.snapshot import Snapshot, restore, snapshot
from memory.runtime.versions import Change, Retire, Supersede
from memory.store.chroma import MemoryStore, StoreLocation, release_client
from memory.store.heap import return_freed_memory
from memory.write.adjudicate import Judge, judge_reason
from memory.write.judges.chat import ChatJudge
from memory.write.extract import extract
from memory.write.ingest import IngestFailed, Ingestor, LogEntry
from memory.write.judges import DEFAULT_JUDGE, JUDGE_NAMES, make_judge
from memory.write.judges.learned import LearnedJudge

__all__ = [
    "BusyError", "Candidates", "ChatJudge", "ConfigError", "DEFAULT_DAYS", "DEFAULT_FLOOR", "ForgetReport", "Context", "DataFileError", "DiskFullError", "Dropped", "EMBEDDER_NAMES", "ENDPOINT", "ENGLISH", "FALLBACK_PREFIX",
    "Embedder", "EmbedderError", "EraseReport", "ErasedError", "ErasurePendingError", "Hit", "IdentifierError", "Ingestor", "InputError",
    "Judge", "LOCAL_PREFIX", "Language", "LexicalEmbedder", "LogEntry", "MAX_FILE_MB_ENV", "MemoryConfig",
    "MemoryLabError", "MemoryManager", "MemoryRecord", "MemoryStore", "Message", "PathCheck", "Reason",
    "RecallResult", "Scenario", "ScenarioQuery", "SentenceTransformerEmbedder", "StoreLocation",
    "TooManyMessagesError", "URL_ENV", "WriteError", "count_tokens", "dedupe", "extract", "forget", "format_context", "govern", "iso", "Snapshot", "restore", "snapshot",
    "DEFAULT_JUDGE", "JUDGE_NAMES", "LearnedJudge", "judge_reason", "make_judge", "length_batches", "lexical_tokens", "load_scenario", "make_embedder", "max_file_bytes", "parse_scenario",
    "parse_time", "read_regular_file", "release_client", "render_reason", "replay", "return_freed_memory",
    "scan_for_bytes", "shipped_scenarios", "validate_text", "version_chain",
    "csv_bytes", "formula_safe", "write_csv", "TextMemo", "registered_caches",
    "Change", "IngestFailed", "Owner", "OwnerArgs", "ROLES", "Retire", "Supersede", "check_folder", "memory_id_for",
    "validate_identifier",
]
