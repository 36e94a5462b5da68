"""Execution settings from ``conf/pipeline.json``: one place for the choices made by measurement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTINGS_FILE = ROOT / "conf" / "pipeline.json"


def load_settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    settings = json.loads(SETTINGS_FILE.read_text())
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".", 1)
        settings.setdefault(section, {})[key] = value
    return settings
