"""The garbage collector's settings in a serving hub (:mod:`aophub.transport.collector`)."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aophub.transport.collector import FULL_COLLECTION_AFTER, settle_after_startup

from .support.server import HubProcess


@pytest.fixture
def restored_collector() -> Iterator[None]:
    """This test process's collector as it was, afterwards."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_collector")
def test_startup_objects_are_set_aside_and_full_collections_are_rarer() -> None:
    """Everything alive is frozen; generations 0 and 1 keep their thresholds, generation 2 waits longer."""
    young, middle, _ = gc.get_threshold()
    made_at_startup = {"config": [1, 2]}
    assert any(tracked is made_at_startup for tracked in gc.get_objects())
    settle_after_startup()
    assert gc.get_freeze_count() > 0
    assert not any(tracked is made_at_startup for tracked in gc.get_objects())  # no collection walks it
    assert gc.get_threshold() == (young, middle, FULL_COLLECTION_AFTER)
    made_later = {"session": [3]}
    assert any(tracked is made_later for tracked in gc.get_objects())


# Loaded by the hub process through PYTHONPATH: writes the collector's state as the hub exits.
REPORTER = """
import atexit, gc, json, os

def _report():
    with open(os.environ["COLLECTOR_REPORT"], "w") as out:
        json.dump({"threshold": gc.get_threshold(), "frozen": gc.get_freeze_count()}, out)

atexit.register(_report)
"""


def test_a_serving_hub_freezes_what_it_made_at_startup(tmp_path: Path) -> None:
    """``aophub serve``, once listening, has frozen its startup objects and made full collections rarer."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(REPORTER)
    report = tmp_path / "collector.json"
    env = dict(os.environ, COLLECTOR_REPORT=str(report))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "site"), env.get("PYTHONPATH", "")]))
    hub = HubProcess(tmp_path / "data", env=env).start()
    assert hub.terminate() == 0
    state = json.loads(report.read_text())
    assert state["threshold"][2] == FULL_COLLECTION_AFTER
    assert state["threshold"][:2] == list(gc.get_threshold()[:2])
    assert state["frozen"] > 10_000  # modules, classes, functions: the whole hub as it started
