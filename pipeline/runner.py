"""How a table-writing command runs: its settings (``--set``), the session, its progress lines
(``--quiet``), the catalog registration around it (``--database``), and one line on stderr with
exit code 2 when it cannot run. Every such command (compute, ingest, check-restore, inventory)
runs through :func:`run_command`, so they all behave alike."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

from pipeline.options import fail, overrides
from pipeline.progress import Progress
from pipeline.session import SetupError, get_spark, get_spark_adding, set_session_confs
from pipeline.settings import Settings, load_settings
from pipeline.tables import catalog

R = TypeVar("R")

__all__ = ["run_command"]


def run_command(
    args: argparse.Namespace,
    command: str,
    body: Callable[[Any, Settings, Progress], R],
    errors: tuple[type[Exception], ...] = (),
    night: Callable[[Settings], bool] | None = None,
) -> tuple[R | None, int]:
    """(``body(spark, settings, progress)``'s result, 0), or (None, 2) after one line on stderr
    when the run cannot start or ``body`` raises one of ``errors`` (a user's mistake, not a bug).
    ``night``: whether this run is a night (:func:`is_night`), given its settings; one runs on
    ``spark.night_java_options`` (a session the pipeline starts itself; spark-submit's keeps its
    JVM) and, on a local master, ``spark.night_spark_conf``."""
    try:
        settings = load_settings(overrides(args.set))
        night_run = night is not None and night(settings)
        spark = _session(settings, night_run)
        progress = Progress(not args.quiet)
        if night_run:
            progress.say(_night_line(spark, settings))
        result = catalog.with_registration(
            spark,
            command,
            args.output,
            getattr(args, "database", None),
            getattr(args, "catalog", None),
            lambda: body(spark, settings, progress),
            progress.say,
        )
    except (SetupError, ValueError, *errors) as e:
        return None, fail(e)
    return result, 0


def is_night(output: str, full: bool, rules: Callable[[Settings], str]) -> Callable[[Settings], bool]:
    """Whether a run is a night: its output's newest publish recorded the rules this run has
    (``rules(settings)``: compute's rules version, or check-restore's), so that it keeps most of
    the output's rows and ends in seconds on a cold JVM, where C2's compile time is not won back
    and a fleet's shuffle partitions are mostly empty tasks. A run whose rules changed (a new
    release) computes everything again, as a first run does, and runs as one. Asked before the
    JVM starts (:func:`pipeline.tables.published.published_rules_version`): a local output
    only; a wrong guess costs time, never a row."""

    def night(settings: Settings) -> bool:
        from pipeline.tables.published import published_rules_version

        return not full and published_rules_version(output) == rules(settings)

    return night


def _session(settings: Settings, night: bool) -> Any:
    """The run's session; a night's with ``spark.night_java_options`` added to the driver's (a
    JVM the pipeline starts) and ``spark.night_spark_conf`` set, on a local master, in a session
    this run starts (a notebook's or a test run's own session keeps its confs)."""
    if not night:
        return get_spark(settings)
    from pyspark.sql import SparkSession

    started_here = SparkSession.getActiveSession() is None
    spark = get_spark_adding(settings, settings.spark.night_java_options)
    if started_here and spark.sparkContext.master.startswith("local"):
        set_session_confs(spark, "spark.night_spark_conf", settings.spark.night_spark_conf)
    return spark


def _night_line(spark: Any, settings: Settings) -> str:
    """The progress line of a night: the night's JVM options as the running JVM reports them
    (a spark-submit JVM has those it was given), and the Spark confs it set."""
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    flags = set(runtime.getInputArguments())
    jvm = [o for o in settings.spark.night_java_options.split() if o in flags]
    confs = [f"{k}={spark.conf.get(k)}" for k, v in settings.spark.night_spark_conf if spark.conf.get(k) == str(v)]
    return (
        "night: the output's last run computed under these rules; JVM "
        + (" ".join(jvm) if jvm else "as started (without spark.night_java_options)")
        + (f"; {', '.join(confs)}" if confs else "")
    )
