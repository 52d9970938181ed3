"""The offline ``echo`` model: a clearly labelled stand-in for an LLM.

It needs no network and no key, so the hub works on first start. It answers
``echo: <input>`` word by word as text deltas, then the complete message and
its usage, and stops at once when the turn is canceled.
"""

from __future__ import annotations

import asyncio
import re

from aop import protocol_pb2
from aophub.node.turn import Turn

__all__ = ["ECHO_MODEL", "EchoAgent"]

ECHO_MODEL = "echo"


class EchoAgent:
    """Streams back the input as several APPEND deltas, ``delay`` seconds apart.

    The deltas keep a fixed schedule from the first one, as an LLM's tokens arriving over the
    network would: a delta that went out late (a busy event loop) does not push back the next.
    """

    def __init__(self, *, delay: float = 0.02) -> None:
        self.delay = delay

    def __repr__(self) -> str:
        return f"<EchoAgent delay={self.delay}>"

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="echo", model=ECHO_MODEL, bound=True)

    async def run_turn(self, turn: Turn) -> str:
        text = turn.input_text.strip() or "(no text in the input)"
        pieces = re.findall(r"\S+\s*", f"echo: {text}")
        loop = asyncio.get_running_loop()
        due = loop.time()
        for piece in pieces:
            if turn.canceled.is_set():
                return "canceled"
            await turn.text(piece)
            if self.delay:
                due += self.delay
                await asyncio.sleep(max(0.0, due - loop.time()))
        await turn.complete()
        await turn.usage(input_tokens=len(text.split()), output_tokens=len(pieces), model=ECHO_MODEL)
        return "completed"
