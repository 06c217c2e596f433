"""The owner's protocol: the verbs a client may call (and which of them write), and the JSON
encoding of their results (pydantic models survive).

Imports neither pydantic nor our models until a model is met: the git hooks' updater uses it.
"""

from __future__ import annotations

import sys
from typing import Any

MODEL_KEY = "__model__"

READ, WRITE = False, True
# Every Memory verb a client may call on the owner, and whether it writes: a write carries a
# request id, so that the fate of one whose owner died unanswered can be asked for (never retried
# blindly); a read is simply tried again.
METHODS: dict[str, bool] = {
    "search": READ, "prompt_context": READ, "rank": READ, "get": READ, "get_item": READ,
    "evidence": READ, "brief": READ, "list": READ, "related": READ, "entities": READ,
    "stats": READ, "export_items": READ, "retrieval_log": READ, "stale_items": READ,
    "history": READ, "ping": READ, "request_status": READ, "add": WRITE, "forget": WRITE,
    "update": WRITE, "import_items": WRITE, "rebuild": WRITE, "index_code": WRITE,
    "ingest": WRITE, "feedback": WRITE, "verify": WRITE, "update_stale": WRITE,
    "import_git": WRITE, "sweep": WRITE, "to_networkx_data": READ, "restore": WRITE,
    "forget_many": WRITE,
}
REMOTE_METHODS = frozenset(METHODS)
READ_METHODS = frozenset(name for name, writes in METHODS.items() if not writes)



def encode(value: Any) -> Any:
    # pydantic is looked up, not imported: the git hooks' owner hand-off sends plain values
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return {MODEL_KEY: type(value).__name__, "data": value.model_dump(mode="json")}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [encode(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        name = value.get(MODEL_KEY)
        if name is not None:
            from graphmem import models

            if isinstance(getattr(models, name, None), type):
                return getattr(models, name).model_validate(value["data"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value
