"""A real hub for the client conformance scenario (clients/conformance/README.md).

    .venv/bin/python -m tests.support.conformance_hub     # from the repository root

starts ``aophub serve`` on an ephemeral port of 127.0.0.1 with a fresh temporary data directory
and a fresh access key, connects the scripted node ``conformance`` (:class:`ConformanceAgent`)
to it, and then prints one JSON line on stdout::

    {"url": "http://127.0.0.1:PORT", "token": "...", "node": "conformance", "max_watches": 8,
     "max_frame_bytes": 16777216, "data_dir": "/tmp/aophub-conformance-..."}

It runs until its standard input ends (the test runner closes the pipe, or dies) or it gets
SIGTERM/SIGINT; then it stops the node and the hub and removes the data directory. Everything
else it or the hub prints goes to stderr. Any client's test runner can start it the same way.

With ``--database postgresql://... --replicas N`` it starts N replicas (``r0``...) on that (migrated)
database instead, each with a data directory of its own, connects the node to ``r0``, and adds
``"urls"``, every replica's address, to the ready line (``"url"`` is r0's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from aop import content_pb2, protocol_pb2, value_pb2
from aophub.node import Turn, serve_agent
from aophub.node.runtime import NodeRuntime
from aophub.settings import DEFAULT_MAX_FRAME_BYTES
from aophub.v1 import interaction_pb2

from .server import HubProcess

__all__ = ["NODE_ID", "ConformanceAgent", "main"]

NODE_ID = "conformance"
LONG_TURN_EVENTS = 1000  # a "long" turn's persisted messages unless canceled first
LONG_TURN_PACE = 0.02  # seconds between them: a long turn lasts 20 s unless canceled
BIG_DEFAULT = 2_000_000


class ConformanceAgent:
    """The scripted agent of node ``conformance``; the input's first word picks the script.

    - ``long [N]``: N (default 1000) complete assistant messages ``part i``, each after one text
      delta, 20 ms apart, until the turn is canceled.
    - ``approve``: a tool call ``conformance_action`` that waits for an approval; its
      ``tool_result`` and the answer say ``approved`` or ``denied``.
    - ``big [N]``: one complete assistant message of N (default 2,000,000) bytes of text.
    - anything else: ``echo: <input>`` streamed word by word, then the complete message.
    """

    def status(self) -> protocol_pb2.AgentStatus:
        return protocol_pb2.AgentStatus(provider="conformance", model="scripted", bound=True)

    async def run_turn(self, turn: Turn) -> str:
        words = turn.input_text.split()
        script = words[0] if words else ""
        count = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
        if script == "long":
            return await self._long(turn, count or LONG_TURN_EVENTS)
        if script == "approve":
            return await self._approve(turn)
        if script == "big":
            return await self._big(turn, count or BIG_DEFAULT)
        for word in f"echo: {turn.input_text.strip()}".split(" "):
            await turn.text(word + " ")
        await turn.complete()
        return "completed"

    async def _long(self, turn: Turn, count: int) -> str:
        for index in range(1, count + 1):
            if turn.canceled.is_set():
                return "canceled"
            await turn.text(f"part {index}")
            await turn.complete()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(turn.canceled.wait(), LONG_TURN_PACE)
        return "completed"

    async def _approve(self, turn: Turn) -> str:
        call = content_pb2.ToolCall(
            id=f"call_{turn.turn_id}",
            name="conformance_action",
            kind="function",
            arguments=value_pb2.EncodedValue(data=b'{"action": "proceed"}', media_type="application/json"),
        )
        await turn.tool_call(call)
        interaction = await turn.ask(interaction_pb2.INTERACTION_KIND_APPROVAL, call)
        approved = (
            interaction.state == interaction_pb2.INTERACTION_STATE_ANSWERED and interaction.answer.approval.approved
        )
        verdict = "approved" if approved else "denied"
        await turn.tool_result(call, verdict, is_error=not approved)
        await turn.text(verdict)
        await turn.complete()
        return "completed"

    async def _big(self, turn: Turn, size: int) -> str:
        event = turn.event()
        event.message.CopyFrom(
            content_pb2.Message(
                id=f"big_{turn.turn_id}",
                role="assistant",
                content=[content_pb2.Content(text=content_pb2.TextContent(text="x" * size))],
            )
        )
        await turn.emit(event)
        return "completed"


async def _until_stopped() -> None:
    """Return when stdin ends or SIGTERM/SIGINT arrives."""
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopped.set)

    def read_stdin() -> None:
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(stopped.set)

    # A daemon thread, not the loop's executor: a blocked read must not hold up the exit.
    threading.Thread(target=read_stdin, daemon=True).start()
    await stopped.wait()


async def _serve(hub: HubProcess, token: str, max_watches: int, others: Sequence[HubProcess] = ()) -> None:
    """Connect the node to ``hub``, print the ready line, and run until stopped."""
    connected = asyncio.Event()

    def on_connected(_runtime: NodeRuntime) -> None:
        connected.set()

    node = asyncio.create_task(
        serve_agent(hub.http, token, NODE_ID, ConformanceAgent(), name="Conformance", on_connected=on_connected)
    )
    waiting = asyncio.ensure_future(connected.wait())
    try:
        await asyncio.wait([node, waiting], return_when=asyncio.FIRST_COMPLETED, timeout=30)
        if not connected.is_set():
            raise RuntimeError("the conformance node did not connect to the hub")
        ready = {
            "url": hub.http,
            "token": token,
            "node": NODE_ID,
            "max_watches": max_watches,
            "max_frame_bytes": DEFAULT_MAX_FRAME_BYTES,
            "data_dir": str(hub.data_dir),
        }
        if others:
            ready["urls"] = [replica.http for replica in (hub, *others)]
        print(json.dumps(ready), flush=True)
        await _until_stopped()
    finally:
        waiting.cancel()
        node.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await node


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-watches", type=int, default=8, help="the hub's --max-watches (default 8)")
    parser.add_argument(
        "--http2", action="store_true", help="start the hub with --http2 (gRPC for the management services)"
    )
    parser.add_argument("--database", default="", help="a migrated PostgreSQL database for --replicas")
    parser.add_argument("--replicas", type=int, default=0, help="start this many replicas on --database")
    args = parser.parse_args(argv)
    if bool(args.database) != bool(args.replicas):
        parser.error("--database and --replicas go together")
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="aophub-conformance-") as data_dir:
        extra = ["--max-watches", str(args.max_watches)] + (["--http2"] if args.http2 else [])
        hubs: list[HubProcess] = []
        if args.replicas:
            for index in range(args.replicas):
                where = ["--database", args.database, "--replica-id", f"r{index}"]
                hubs.append(HubProcess(Path(data_dir) / f"r{index}", *extra, *where, token=None))
        else:
            hubs.append(HubProcess(Path(data_dir), *extra, token=None))
        try:
            for hub in hubs:
                hub.env["AOPHUB_TOKEN"] = token
                hub.start()
            asyncio.run(_serve(hubs[0], token, args.max_watches, hubs[1:]))
        finally:
            for hub in hubs:
                if hub.process is not None:
                    hub.terminate()
                    sys.stderr.writelines(hub.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
