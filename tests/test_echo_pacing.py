"""The echo model keeps a fixed schedule: a delta that went out late does not push back the ones after it."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import pytest

from aophub.agent import echo
from aophub.agent.echo import EchoAgent
from aophub.node.turn import Turn

DELAY = 0.05


class FakeClock:
    """The loop's time, moved only by the echo model's sleeps and by the turn's slow first delta."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


class SlowFirstDelta:
    """A turn whose first delta takes 0.12 s to hand over (a busy hub), the others none."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.input_text = "a b c d"  # "echo: a b c d": five deltas
        self.canceled = asyncio.Event()
        self.deltas: list[tuple[float, str]] = []

    async def text(self, piece: str) -> None:
        if not self.deltas:
            self.clock.now += 0.12
        self.deltas.append((round(self.clock.now, 6), piece))

    async def complete(self) -> None:
        return None

    async def usage(self, **_counts: Any) -> None:
        return None


@pytest.mark.timeout(10)
async def test_deltas_keep_their_schedule_after_a_late_one(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    fake = SimpleNamespace(get_running_loop=lambda: clock, sleep=clock.sleep)
    monkeypatch.setattr(echo, "asyncio", fake)
    turn = SlowFirstDelta(clock)
    assert await EchoAgent(delay=DELAY).run_turn(cast(Turn, turn)) == "completed"
    # Due at 0, 0.05, 0.10, 0.15, 0.20: the first went out at 0.12, the next two at once, then on time.
    assert [when for when, _ in turn.deltas] == [0.12, 0.12, 0.12, 0.15, 0.2]
    assert clock.sleeps == [0.0, 0.0, 0.03, 0.05, 0.05]
