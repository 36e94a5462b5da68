"""Execution settings from ``conf/pipeline.json``: one place for the choices made by measurement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# conf/ at the top of the repo (a checkout, an editable install); inside the package when
# installed from the wheel, which ships it as pipeline/conf (pyproject.toml).
CONF_DIR = ROOT / "conf" if (ROOT / "conf" / "pipeline.json").is_file() else Path(__file__).resolve().parent / "conf"
SETTINGS_FILE = CONF_DIR / "pipeline.json"


def load_settings(overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    settings = json.loads(SETTINGS_FILE.read_text())
    for dotted, value in (overrides or {}).items():
        section, key = dotted.split(".", 1)
        settings.setdefault(section, {})[key] = value
    return settings
