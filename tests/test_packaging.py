"""The built wheel ships the hand-written and the generated halves of ``aophub``.

``aophub`` is a namespace package assembled from ``src/aophub`` and the
generated ``gen/python/aophub/v1``; ``aop``, ``aiscan`` and ``cyber`` are generated. This test builds the
wheel, unpacks it into a directory, and imports from it in a fresh interpreter
that cannot see the source tree (``-S`` skips the editable install's .pth).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import aop.envelope_pb2, aop.tool.protocol_pb2, aophub.v1.session_pb2, aophub.v1.session_connect
import aiscan.command.protocol_pb2, aiscan.reload.protocol_pb2, cyber.command.protocol_pb2, cyber.reload.protocol_pb2
import aophub.hub.node_commands
import aophub.cli, aophub.version
import aophub
print(sorted(set(p.rsplit("/", 1)[0] for p in aophub.__path__)))
print(aophub.v1.session_pb2.__file__)
"""


@pytest.mark.timeout(120)
def test_wheel_imports_both_halves(tmp_path: Path) -> None:
    """From the wheel alone, `import aop` and `import aophub.v1` and `aophub.cli` all work."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", tmp_path, ROOT],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("aophub-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    dependencies = sysconfig.get_paths()["purelib"]
    probe = subprocess.run(
        [sys.executable, "-S", "-c", PROBE],
        env={"PYTHONPATH": f"{site}:{dependencies}"},
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    where, generated = probe.stdout.splitlines()
    assert where == repr([str(site)])
    assert generated.startswith(str(site / "aophub" / "v1"))
