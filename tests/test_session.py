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
