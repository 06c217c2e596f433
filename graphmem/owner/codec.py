"""JSON encoding of verb results between the owner and its clients (pydantic models survive).

Imports neither pydantic nor our models until a model is met: the git hooks' updater uses it.
"""

from __future__ import annotations

import sys
from typing import Any

MODEL_KEY = "__model__"


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
