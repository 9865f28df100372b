"""Memory Governance Lab: governed agent memory on Chroma (three tracks per tenant and user).

Typical use::

    from memory import MemoryManager, MemoryConfig, Message
    mm = MemoryManager(MemoryConfig(threshold=0.35))
    mm.add(Message(tenant_id="acme", user_id="alice", content="The budget is 300,000 yuan."))
    result = mm.retrieve("what is the budget?", tenant_id="acme", user_id="alice")
"""

from .config import MemoryConfig
from .embedders import Embedder, LexicalEmbedder, SentenceTransformerEmbedder, make_embedder
from .errors import (
    ConfigError, DataFileError, EmbedderError, ErasedError, IdentifierError, InputError, MemoryLabError, WriteError,
)
from .ingest import Ingestor
from .manager import MemoryManager
from .recall import Candidates, govern
from .scenario import Scenario, load_scenario, parse_scenario, replay
from .schema import Context, Dropped, EraseReport, Hit, MemoryRecord, Message, PathCheck, RecallResult
from .store import MemoryStore, StoreLocation

__all__ = [
    "Candidates", "ConfigError", "ErasedError", "Ingestor", "Context", "DataFileError", "Dropped", "Embedder", "EmbedderError",
    "EraseReport", "Hit", "IdentifierError", "InputError", "LexicalEmbedder", "MemoryConfig",
    "MemoryLabError", "MemoryManager", "MemoryRecord", "MemoryStore", "Message", "PathCheck",
    "RecallResult", "Scenario", "SentenceTransformerEmbedder", "StoreLocation", "WriteError", "govern",
    "load_scenario", "make_embedder", "parse_scenario", "replay",
]
