"""JSON encoding of verb results between the owner and its clients (pydantic models survive)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from graphmem import models

MODEL_KEY = "__model__"


def encode(value: Any) -> Any:
    if isinstance(value, BaseModel):
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
        if name is not None and isinstance(getattr(models, name, None), type):
            return getattr(models, name).model_validate(value["data"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value
