"""The driver JVM the pipeline starts runs with ``spark.driver_java_options`` (docs/settings.md):
asked of the running JVM itself, not of the conf string."""

from __future__ import annotations


def _jvm_flags(spark) -> list[str]:
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    return list(runtime.getInputArguments())


def _collectors(spark) -> set[str]:
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return {bean.getName() for bean in beans}


def test_the_driver_jvm_runs_with_the_configured_options(spark, settings):
    options = settings.spark.driver_java_options.split()
    assert options, "conf/pipeline.json sets driver_java_options"
    flags = _jvm_flags(spark)
    for option in options:
        assert option in flags
    # the default's collector is what the JVM reports, not G1 (Java 17's own default)
    if "-XX:+UseParallelGC" in options:
        assert _collectors(spark) == {"PS Scavenge", "PS MarkSweep"}
    # the log4j configuration still reaches the JVM beside them
    assert any(f.startswith("-Dlog4j.configurationFile=") for f in flags)


def test_the_driver_jvm_maps_the_class_data_sharing_archive(spark, settings):
    """`make install` dumps the archive (scripts/spark_cds.py); the JVM then maps it on top of
    the JDK's own, which VM.info shows as a third address in its mapping (base and top). An
    archive the JVM refused (another JDK, another class path) would leave only the base: the
    install step must be fixed, not the start silently slower."""
    import re
    import shutil
    import subprocess

    from pipeline.session import cds_archive

    archive = cds_archive(settings)
    assert archive.is_file(), f"no class-data-sharing archive {archive}: run `make install`"
    assert f"-XX:SharedArchiveFile={archive}" in _jvm_flags(spark)
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    jcmd = shutil.which("jcmd") or "jcmd"
    info = subprocess.run([jcmd, str(pid), "VM.info"], capture_output=True, text=True, timeout=60).stdout
    mapped = re.search(r"CDS archive\(s\) mapped at: \[(0x[0-9a-f]+)-(0x[0-9a-f]+)-(0x[0-9a-f]+)\)", info)
    assert mapped, "the JVM did not map the archive on top of the JDK's: " + (
        re.search(r"CDS archive\(s\) mapped at: .*", info) or [info[:200]]
    )[0]


def test_the_python_workers_started_with_the_session_are_those_sql_stages_use(spark):
    """get_spark starts Spark's Python worker daemon in the background with an RDD task
    (pipeline.session.start_python_workers), so that the first SQL stage finds it started. It
    only helps if Spark hands that task to the daemon the SQL stages fork their workers from:
    the parent of the task's worker and of a mapInPandas task's worker is the same process,
    and a plain RDD task's (no SQL environment) is another one, so the test tells them apart."""
    import os

    import pandas as pd

    from pipeline.session import in_sql_worker_environment

    sc = spark.sparkContext
    warmed = in_sql_worker_environment(sc, lambda _: os.getppid()).collect()[0]
    one = spark.range(1, numPartitions=1)
    sql = one.mapInPandas(lambda it: (pd.DataFrame({"id": [os.getppid()]}) for _ in it), "id long").collect()[0][0]
    plain = sc.parallelize([0], 1).map(lambda _: os.getppid()).collect()[0]
    assert warmed == sql
    assert plain != sql
    assert "SPARK_SIMPLIFIED_TRACEBACK" not in sc.environment  # added for the warm-up's function only


def test_a_jar_rebuilt_with_the_same_size_names_another_archive(settings):
    """The JVM maps an archive only over jars of the size and time it was dumped with, and
    starts without it, silently, otherwise. The project's own jar, rebuilt by `make install`
    after a change under jvm/, keeps its size: its new time must name a new archive (which
    `make install` then dumps), not leave the old one unmapped under the same name."""
    import os
    from pathlib import Path

    from pipeline.session import cds_archive, jar_paths

    jar = Path(jar_paths(settings)[0])
    st = jar.stat()
    before = cds_archive(settings)
    os.utime(jar, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    try:
        rebuilt = cds_archive(settings)
    finally:
        os.utime(jar, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert jar.stat().st_size == st.st_size
    assert rebuilt != before
    assert cds_archive(settings) == before  # the time restored: the archive dumped for it
