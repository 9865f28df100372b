"""The seed article's demo, reproduced on the real engine (Chroma + the lexical embedder).

Same scenario (memory/scenarios/seed_demo_zh.json), lexical embedder, window 4,
threshold 0.22, top_k 8, query ``记忆污染 阈值 Agent``. The composite score is
switched to pure similarity (alpha=1, beta=gamma=0) so scores are the seed's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory.core.config import MemoryConfig
from memory.embed.embedders import LexicalEmbedder
from memory.runtime.manager import MemoryManager
from memory.core.scenario import SCENARIOS_DIR, load_scenario, replay
from memory.core.schema import OwnerArgs

SEED_SCENARIO = SCENARIOS_DIR / "seed_demo_zh.json"
SEED_QUERY = "记忆污染 阈值 Agent"
SEED_CONFIG = MemoryConfig(
    threshold=0.22, top_k=8, window_size=4, alpha=1.0, beta=0.0, gamma=0.0, token_budget=100_000,
)


def run_seed_demo(*, trace_path: str | Path | None = None) -> dict[str, Any]:
    """Run the demo and return the trace (written as JSON to ``trace_path`` when given)."""
    scenario = load_scenario(SEED_SCENARIO)
    query = next(q for q in scenario.queries if q.query == SEED_QUERY)
    manager = MemoryManager(SEED_CONFIG, embedder=LexicalEmbedder(), workspace=None)
    replay(manager, scenario)
    owner: OwnerArgs = {"tenant_id": query.tenant_id, "user_id": query.user_id}
    result = manager.retrieve(SEED_QUERY, **owner, as_of=query.as_of, reinforce=False)
    context = manager.build_context(SEED_QUERY, **owner, as_of=query.as_of, reinforce=False)
    guest: OwnerArgs = {"tenant_id": query.tenant_id, "user_id": "guest"}
    guest_before = len(manager.records(**guest))
    report = manager.erase_user(**guest, actor="demo")
    trace = {
        "query": SEED_QUERY,
        "summary_memory": manager.summary(**owner),
        "recent_messages": [
            {"id": m.id, "role": m.role, "content": m.content, "user_id": m.user_id} for m in manager.recent(**owner)
        ],
        "blind_top_k": [_item(h) for h in result.blind],
        "thresholded": [_item(h) for h in result.governed],
        "dropped": [{"id": d.hit.record.message_id, "stage": d.stage, "reason": d.reason} for d in result.dropped],
        "context": context.text,
        "guest_records_before_erase": guest_before,
        "guest_records_after_erase": [r.to_dict() for r in manager.records(**guest)],
        "erase_report": report.to_dict(),
        "config": SEED_CONFIG.to_dict(),
    }
    if trace_path is not None:
        Path(trace_path).write_text(json.dumps(trace, ensure_ascii=False, indent=2), encoding="utf-8")
    return trace


def _item(hit) -> dict[str, Any]:
    rec = hit.record
    return {
        "score": round(hit.score, 3),
        "record": {"id": rec.message_id, "user_id": rec.user_id, "role": rec.role, "content": rec.content,
                   "memory_id": rec.memory_id},
    }
