"""The stream tables (graphs, nodes, edges, errors) of all stream graphs, keyed by graph_id.

``stream_graphs``, ``stream_nodes`` and ``stream_edges`` are what ``flink-jobgraph
ingest`` writes, and what ``compute`` reads back from an ingested folder; their columns are
the rows of :mod:`udfs.spec.contract`. ``edge_idx`` is
the edge's position in the spec: Flink's out-edge and in-edge lists are both that order.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from udfs.spec.contract import EDGE_COLUMNS, ERROR_COLUMNS, GRAPH_COLUMNS, NODE_COLUMNS


@dataclass
class StreamTables:
    graphs: DataFrame
    nodes: DataFrame
    edges: DataFrame
    errors: DataFrame

    def persist(self) -> StreamTables:
        return StreamTables(
            *(df.localCheckpoint(eager=True) for df in (self.graphs, self.nodes, self.edges, self.errors))
        )


def split_records(records: DataFrame) -> StreamTables:
    return StreamTables(
        graphs=records.where(F.col("kind") == "graph").select(*GRAPH_COLUMNS),
        nodes=records.where(F.col("kind") == "node").select(*NODE_COLUMNS),
        edges=records.where(F.col("kind") == "edge").select(*EDGE_COLUMNS),
        errors=records.where(F.col("kind") == "error").select(*ERROR_COLUMNS),
    )
