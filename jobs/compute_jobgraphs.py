"""spark-submit entry point: the same job as ``flink-jobgraph compute``, for clusters.

    spark-submit --jars .cache/jars/delta-spark_2.12-3.3.2.jar,.cache/jars/delta-storage-3.3.2.jar \
        jobs/compute_jobgraphs.py --input PATH --output DIR

On a cluster that already has Delta (Databricks), the active session is reused as is.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["compute", *sys.argv[1:]]))
