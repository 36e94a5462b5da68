"""The error every per-graph step may raise about one graph.

A step that finds a graph it cannot compute (a contract breach, a graph Flink itself
rejects, a uid collision) raises :class:`CodedError`; the per-batch code turns it into that
graph's one ``graph_errors`` row, and the other graphs of the batch go on.
"""

from __future__ import annotations

import traceback

__all__ = ["CodedError", "internal_error_message"]


class CodedError(ValueError):
    """An error about one graph that becomes its error row: ``code`` is the row's error_code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def internal_error_message(limit: int = 4000) -> str:
    """The current exception's traceback as a graph's INTERNAL_ERROR message (its last ``limit``
    characters): an unexpected exception in one graph's code costs that graph only, and its row
    carries what a bug report needs."""
    text = "internal error, please report it with this graph: " + traceback.format_exc()
    return text if len(text) <= limit else "..." + text[-limit:]
