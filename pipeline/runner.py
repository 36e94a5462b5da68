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
from pipeline.session import SetupError, get_spark
from pipeline.settings import Settings, load_settings
from pipeline.tables import catalog

R = TypeVar("R")

__all__ = ["run_command"]


def run_command(
    args: argparse.Namespace,
    command: str,
    body: Callable[[Any, Settings, Progress], R],
    errors: tuple[type[Exception], ...] = (),
    java_options: Callable[[Settings], str] | None = None,
) -> tuple[R | None, int]:
    """(``body(spark, settings, progress)``'s result, 0), or (None, 2) after one line on stderr
    when the run cannot start or ``body`` raises one of ``errors`` (a user's mistake, not a bug).
    ``java_options``: JVM options the command adds to ``spark.driver_java_options`` for this
    run, given its settings (a session the pipeline starts itself; spark-submit's keeps its own)."""
    try:
        settings = load_settings(overrides(args.set))
        extra = java_options(settings).strip() if java_options else ""
        if extra:
            both = f"{settings.spark.driver_java_options} {extra}".strip()
            spark = get_spark(settings.with_overrides({"spark.driver_java_options": both}))
        else:
            spark = get_spark(settings)
        progress = Progress(not args.quiet)
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


def night_java_options(output: str, full: bool, rules: Callable[[Settings], str]) -> Callable[[Settings], str]:
    """The JVM options a run adds for a night (``spark.night_java_options``): when its output's
    newest publish recorded the rules this run has (``rules(settings)``: compute's rules
    version, or check-restore's), so that it keeps most of the output's rows and ends in
    seconds on a cold JVM, where C2's compile time is not won back. A run whose rules changed
    (a new release) computes everything again, as a first run does, and keeps the JVM of one.
    Asked before the JVM starts (:func:`pipeline.tables.published.published_rules_version`):
    a local output only; a wrong guess costs time, never a row."""

    def options(settings: Settings) -> str:
        from pipeline.tables.published import published_rules_version

        if full or published_rules_version(output) != rules(settings):
            return ""
        return settings.spark.night_java_options

    return options
