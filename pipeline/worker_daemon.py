"""Spark's Python worker daemon (``pyspark.daemon``), with the workers' imports made before it
forks them.

Spark forks every Python worker from one daemon process; each worker then imports pandas,
pyarrow, Arrow's serializers and the modules of the UDF it runs at its first task, about
0.5 s of CPU apiece, and a one-job check starts four of them. Imported here once, in the
daemon, the forked workers share them. Set as ``spark.python.daemon.module`` for local masters
only (pipeline.session): on a cluster the executors' Python may not have this package on its
path before a task adds it, and a daemon that cannot start fails every task.
"""

from __future__ import annotations

import importlib
import os

# The modules whose functions run on the workers (UDFs, mapInPandas bodies) and what they
# import at a task's start; a missing one only costs its import later, in the worker.
PRELOAD = (
    "pandas",
    "pyarrow",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "pipeline.compute.stage",
    "pipeline.compute.read",
    "pipeline.restore.check",
    "pipeline.restore.savepoints",
    "pipeline.restore.inventory",
)


def preload() -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def serves_sql_workers() -> bool:
    """Whether this daemon forks the workers of SQL's Python execs (UDFs, mapInPandas,
    applyInPandas), which Spark starts with ``SPARK_SIMPLIFIED_TRACEBACK`` set. RDD-API tasks
    (``createDataFrame`` of a Python list pickles its rows through one) get a daemon of their
    own, keyed by their other environment, whose workers import none of the above: preloading
    there cost a one-job check a second."""
    return "SPARK_SIMPLIFIED_TRACEBACK" in os.environ


if __name__ == "__main__":
    if serves_sql_workers():
        preload()
    from pyspark import daemon

    daemon.manager()
