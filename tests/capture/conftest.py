"""A capture rule that raises loses its drafts without a word to the user (compress._safe logs it and
goes on); in these tests it is a failure, so a bug in a rule cannot pass for a rule that found nothing."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


class _RuleFailures(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.failed: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("compress rule"):
            self.failed.append(record.getMessage())


@pytest.fixture(autouse=True)
def no_rule_fails() -> Iterator[None]:
    handler = _RuleFailures()
    logger = logging.getLogger("graphmem.capture.compress")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    assert not handler.failed, handler.failed
