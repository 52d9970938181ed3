"""The Agent CLI Remote conformance scenarios of bridges.md 2.3, replayed against a running hub.

The scenarios are data files (``tests/scenarios/bridges/acli-*.json``) read by one harness
(:mod:`tests.support.bridge_replay`); the built-in agent answers from the scripted fake provider.
Each runs twice: over real WebSockets, and without a socket (frames handed to the bridge's
connection object in process).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from .support.bridge_replay import Scenario, load_scenarios, replay, scenario_hub
from .support.server import TOKEN

SCENARIOS = load_scenarios("acli-")


def test_every_scenario_of_the_spec_is_a_data_file() -> None:
    """The nine scenarios of bridges.md 2.3 are there (the other files are aophub's own)."""
    assert {scenario.id for scenario in SCENARIOS} >= {
        "acli-1-connect-auth",
        "acli-2-streamed-text",
        "acli-3-tool-approval",
        "acli-3b-tool-denied",
        "acli-4-interrupt",
        "acli-5-reconnect-retry",
        "acli-6-invalid",
        "acli-7-turn-confirmation",
        "acli-8-clear-context",
    }


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", ["websocket", "direct"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.id)
async def test_scenario(tmp_path: Path, scenario: Scenario, transport: str) -> None:
    await replay(tmp_path, scenario, transport)


async def _answer(socket: ClientConnection) -> tuple[str, dict[str, Any]]:
    """The streamed text of one request and its ``Complete`` frame."""
    text = ""
    while True:
        async with asyncio.timeout(15):
            frame = json.loads(await socket.recv())
        if "Stream" in frame["response"]:
            text += frame["response"]["Stream"]
        else:
            return text, frame


@pytest.mark.timeout(60)
async def test_the_same_request_id_on_two_connections_at_once_runs_one_turn(tmp_path: Path) -> None:
    """2.2.3: both connections are followed and get the whole answer; the model is called once."""
    given = {"model": [{"answer": "alpha beta gamma", "stall_after_words": 1, "stall_s": 0.5, "usage": [4, 3]}]}
    async with scenario_hub(tmp_path, Scenario("concurrent", given, [])) as (hub, fake):
        url = f"ws://127.0.0.1:{hub.port}/bridge/agent-cli/ws?session=same&token={TOKEN}"
        request = json.dumps({"request_id": "r-1", "input": {"Text": "tell me"}, "stream": True})
        async with connect(url) as first, connect(url) as second:
            await asyncio.gather(first.send(request), second.send(request))
            answers = await asyncio.gather(_answer(first), _answer(second))
        assert [text for text, _ in answers] == ["alpha beta gamma", "alpha beta gamma"]
        assert all(done["response"]["Complete"]["interrupted"] is False for _, done in answers)
        assert len(fake.chat_requests) == 1


@pytest.mark.timeout(60)
async def test_two_tokens_with_the_same_session_name_and_request_id_share_nothing(tmp_path: Path) -> None:
    """1.2, 1.5: bindings and derived ids are per principal, so each token gets its own session and turn."""
    given = {"model": [{"answer": "for alice", "usage": [1, 1]}, {"answer": "for bob", "usage": [1, 1]}]}
    async with scenario_hub(tmp_path, Scenario("principals", given, [])) as (hub, fake):
        texts = []
        for name in ("alice", "bob"):
            _record, secret = await hub.runtime.tokens.create(name, ["app"])
            url = f"ws://127.0.0.1:{hub.port}/bridge/agent-cli/ws?session=shared&token={secret}"
            async with connect(url) as socket:
                await socket.send(json.dumps({"request_id": "test_001", "input": {"Text": "hi"}}))
                async with asyncio.timeout(15):
                    texts.append(json.loads(await socket.recv())["response"]["Text"])
        assert texts == ["for alice", "for bob"]
        assert len(fake.chat_requests) == 2
        owners = {record.owner for record in await hub.runtime.store.list_sessions(limit=10, include_closed=True)}
        assert len(owners) == 2
