"""Put the generated messages the client needs into its sdist and wheel.

The generated code has one home, the repository's ``gen/python`` (``make gen``
writes it). Built from the repository, both targets take it from there; built
from an unpacked sdist, the wheel takes the copy the sdist stored under
``gen/python``. An editable install copies nothing: it puts ``gen/python`` on
the path, so ``make gen`` takes effect at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# Generated packages of the client, relative to gen/python: the AOP messages and
# aophub's product API (messages and Connect stubs of the management services).
GENERATED = ("aop", "aophub/v1")


class GeneratedCode(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return  # an editable install puts gen/python itself on the path (dev-mode-dirs)
        root = Path(self.root)
        candidates = [root.parent.parent / "gen" / "python", root / "gen" / "python"]
        generated = next((path for path in candidates if (path / "aop").is_dir()), None)
        if generated is None:
            raise RuntimeError(f"generated code not found in {' or '.join(map(str, candidates))}: run `make gen`")
        for package in GENERATED:
            target = f"gen/python/{package}" if self.target_name == "sdist" else package
            build_data["force_include"][str(generated / package)] = target
