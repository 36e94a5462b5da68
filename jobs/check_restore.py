"""spark-submit entry point: the same job as ``flink-jobgraph check-restore``, for clusters.

    J=.cache/jars
    spark-submit \
        --jars $J/delta-spark_2.12-3.3.2.jar,$J/delta-storage-3.3.2.jar,$J/graphframes-0.8.2-spark3.1-s_2.12.jar \
        jobs/check_restore.py --graphs SPECS --checks MANIFEST.jsonl --output DIR

The graphs are computed as ``compute`` does, every savepoint's ``_metadata`` is read in
parallel, and all checks are decided in one grouped pandas UDF (docs/restore-checks.md).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["check-restore", *sys.argv[1:]]))
