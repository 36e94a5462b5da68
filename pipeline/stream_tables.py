"""Step 2: the vertex and edge tables of all stream graphs, keyed by graph_id.

``stream_graphs``, ``stream_nodes`` and ``stream_edges`` are what ``flink-jobgraph
ingest`` writes, and what ``compute`` reads back from an ingested folder. ``edge_idx`` is
the edge's position in the spec: Flink's out-edge and in-edge lists are both that order.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

GRAPH_COLUMNS = [
    "graph_id",
    "job_name",
    "flink_version",
    "chaining_enabled",
    "chain_operators_with_different_max_parallelism",
    "job_type",
    "dynamic",
    "auto_parallelism_enabled",
    "source_id_order",
    "source_file",
]
NODE_COLUMNS = [
    "graph_id",
    "node_id",
    "name",
    "uid",
    "uid_hash",
    "parallelism",
    "max_parallelism",
    "chaining_strategy",
    "slot_sharing_group",
    "is_source",
    "source_kind",
    "yielding",
    "has_operator",
    "parallelism_configured",
]
EDGE_COLUMNS = ["graph_id", "edge_idx", "source", "target", "partitioner", "exchange_mode", "type_number", "output_tag"]
ERROR_COLUMNS = ["graph_id", "error_code", "message", "source_file"]


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
