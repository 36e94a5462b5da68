"""The error every per-graph step may raise about one graph.

A step that finds a graph it cannot compute (a contract breach, a graph Flink itself
rejects, a uid collision) raises :class:`CodedError`; the per-batch code turns it into that
graph's one ``graph_errors`` row, and the other graphs of the batch go on.
"""

from __future__ import annotations

__all__ = ["CodedError"]


class CodedError(ValueError):
    """An error about one graph that becomes its error row: ``code`` is the row's error_code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
