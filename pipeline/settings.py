"""Execution settings from ``conf/pipeline.json``: one place for the choices made by measurement."""

from __future__ import annotations

import json
from typing import Any

from udfs.flink_profiles import CONF_DIR, ROOT

__all__ = ["CONF_DIR", "ROOT", "SETTINGS_FILE", "load_settings"]

SETTINGS_FILE = CONF_DIR / "pipeline.json"


def load_settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    settings = json.loads(SETTINGS_FILE.read_text())
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".", 1)
        settings.setdefault(section, {})[key] = value
    return settings
