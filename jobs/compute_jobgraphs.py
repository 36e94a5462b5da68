"""spark-submit entry point: the same job as ``flink-jobgraph compute``, for clusters.

    J=.cache/jars
    spark-submit \
        --jars $J/delta-spark_2.12-3.3.2.jar,$J/delta-storage-3.3.2.jar,$J/graphframes-0.8.2-spark3.1-s_2.12.jar \
        jobs/compute_jobgraphs.py --input PATH --output DIR

On a cluster that already has Delta and GraphFrames (Databricks ML), the active session is
reused as is; elsewhere GraphFrames' Python API is imported from the jar in .cache/jars.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["compute", *sys.argv[1:]]))
