"""Run one turn on an aophub hub, stream the answer, and resume where it left off.

    AOPHUB_TOKEN=KEY python examples/python/client.py --server http://127.0.0.1:8080 -p "hello"

Opens a session on the node (the built-in ``local`` by default), runs the prompt as a turn,
prints the answer as it streams, and ends with the session id and the cursor of the last event
it read::

    [turn completed]
    session 5f0c... cursor 7

Pass both back (``--session ID --cursor CURSOR``) to run the next turn in the same session,
picking up exactly after that event: anything stored after it (say, the end of a turn this
program did not see because it was stopped) is printed first. With ``--session`` alone it starts
from the session's newest event. Connection drops while it runs are handled by the client: it
reconnects, and the watch resumes by itself without repeating or losing a stored event.

An approval the agent asks for is answered with ``--approve yes`` or ``--approve no`` (default:
no). Exits 0 when the turn completed, 1 on a refusal, a turn that failed, or a lost connection.
Needs only ``pip install aophub-client`` (or ``./clients/python`` from a checkout).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This directory holds connectrpc.py, which would shadow the connectrpc package that the client
# imports: take the directory off the import path before importing it.
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]

import argparse
import asyncio
import os

from aop import event_pb2
from aophub.client import HubClient, HubClientError, WatchItem, approve, interaction_of, text_of
from aophub.v1 import interaction_pb2


class Printer:
    """Prints a turn's text as it streams; the complete message fills in what deltas a reconnect lost."""

    def __init__(self) -> None:
        self.shown: dict[str, str] = {}  # message id -> the text printed from its deltas

    def delta(self, event: event_pb2.Event) -> None:
        delta = event.message_delta
        if delta.WhichOneof("value") == "text":
            self.shown[delta.message_id] = self.shown.get(delta.message_id, "") + delta.text
            print(delta.text, end="", flush=True)

    def message(self, event: event_pb2.Event) -> None:
        full, seen = text_of(event.message), self.shown.get(event.message.id, "")
        print(full.removeprefix(seen) if full.startswith(seen) else "\n" + full, end="", flush=True)


async def run(args: argparse.Namespace) -> int:
    async with await HubClient.connect(args.server, args.token) as hub:
        session_id, cursor = args.session, args.cursor
        if not session_id:
            session_id = (await hub.open_session(args.node)).id
        elif not cursor:
            cursor = await hub.last_cursor(session_id)  # only what happens from now on
        printer = Printer()
        # Watch first, then run: the turn's first deltas may come before run_turn returns.
        async with hub.watch(session_id, cursor) as watch:
            turn = await hub.run_turn(session_id, args.prompt)
            async for item in watch:
                cursor = item.cursor or cursor
                ended = await show(hub, item, turn.turn_id, printer, args.approve)
                if ended is not None:
                    print(f"\n[turn {ended}]\nsession {session_id} cursor {cursor}")
                    return 0 if ended == "completed" else 1
    return 1


async def show(hub: HubClient, item: WatchItem, turn_id: str, printer: Printer, answer: str) -> str | None:
    """Print one event of the watch; the stop reason when it ends ``turn_id``."""
    event = item.event
    kind = event.WhichOneof("payload")
    if event.turn_id != turn_id:
        if kind == "message" and event.message.role == "assistant":  # stored after --cursor: shown once
            print(f"[earlier] {text_of(event.message)}")
        return None
    interaction = interaction_of(event)
    if kind == "message_delta":
        printer.delta(event)
    elif kind == "message" and event.message.role == "assistant":
        printer.message(event)
    elif kind == "tool_call":
        print(f"\n[tool {event.tool_call.name}]", file=sys.stderr)
    elif interaction is not None and interaction.state == interaction_pb2.INTERACTION_STATE_PENDING:
        approved = answer == "yes"
        if interaction.kind == interaction_pb2.INTERACTION_KIND_APPROVAL:
            await hub.answer_interaction(approve(interaction.id, approved, "answered by examples/python/client.py"))
            print(f"\n[{'approved' if approved else 'refused'} {interaction.call.name}]", file=sys.stderr)
    elif kind == "turn_ended":
        if event.turn_ended.HasField("error"):
            print(f"\n{event.turn_ended.error.code}: {event.turn_ended.error.message}", file=sys.stderr)
        return event.turn_ended.stop_reason
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default=os.environ.get("AOPHUB_URL", "http://127.0.0.1:8080"), help="hub URL")
    parser.add_argument("--token", default=os.environ.get("AOPHUB_TOKEN"), help="access key (default $AOPHUB_TOKEN)")
    parser.add_argument("--node", default="local", help="node to open the session on (default local)")
    parser.add_argument("--session", default="", help="continue this session instead of opening one")
    parser.add_argument("--cursor", default="", help="with --session: the cursor printed by the previous run")
    parser.add_argument("--approve", choices=["yes", "no"], default="no", help="answer to approvals (default no)")
    parser.add_argument("-p", "--prompt", required=True, help="what to ask")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or $AOPHUB_TOKEN) is required")
    try:
        return asyncio.run(run(args))
    except HubClientError as error:
        print(f"refused: {error}", file=sys.stderr)
    except (OSError, TimeoutError) as error:
        print(f"connection failed: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
