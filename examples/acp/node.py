"""A complete agent node: connect your own agent to a hub in a few lines.

    python examples/acp/node.py --server http://127.0.0.1:8080 --token KEY --node-id dice

Then open a session on node "dice" (e.g. examples/python/client.py --node dice -p "roll 3 dice").
The agent streams its thinking and answer as deltas, calls a tool (announced as
a tool_call, answered by a tool_result), reports usage, and ends the turn: the
SDK sends turn_started/turn_ended and keeps the message ids of the deltas and
the final message in step, so the protocol cannot be got wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time

from aop import content_pb2, protocol_pb2, value_pb2
from aophub.node import NodeRefused, Turn, serve_agent


class DiceAgent:
    """Rolls the number of dice the user asks for, with a visible tool call."""

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="example", model="dice-roller", bound=True)

    async def run_turn(self, turn: Turn) -> str:
        match = re.search(r"\d+", turn.input_text)
        count = max(1, min(int(match.group()) if match else 1, 20))
        await turn.reasoning(f"The user wants {count} dice. ")
        call = content_pb2.ToolCall(
            id=f"call_{turn.turn_id}",
            name="roll_dice",
            kind="function",
            arguments=value_pb2.EncodedValue(data=json.dumps({"count": count}).encode(), media_type="application/json"),
        )
        await turn.tool_call(call)
        started = time.monotonic()
        rolls = [random.randint(1, 6) for _ in range(count)]
        await turn.tool_result(call, json.dumps(rolls), duration_ms=int((time.monotonic() - started) * 1000))
        for word in f"You rolled {', '.join(map(str, rolls))}: {sum(rolls)} in total.".split(" "):
            if turn.canceled.is_set():
                return "canceled"
            await turn.text(word + " ")
            await asyncio.sleep(0.05)
        await turn.complete()
        await turn.usage(input_tokens=len(turn.input_text.split()), output_tokens=count + 6, model="dice-roller")
        return "completed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default="http://127.0.0.1:8080")
    parser.add_argument("--token", default=os.environ.get("AOPHUB_TOKEN"))
    parser.add_argument("--node-id", default="dice")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or $AOPHUB_TOKEN) is required")
    print(f"node {args.node_id} serving {args.server} (Ctrl-C to stop)", file=sys.stderr)
    try:
        asyncio.run(serve_agent(args.server, args.token, args.node_id, DiceAgent(), name="Dice roller"))
    except NodeRefused as error:
        print(error, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
