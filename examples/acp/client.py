"""Run one turn on a hub and stream the answer as it arrives.

    python examples/acp/client.py --server http://127.0.0.1:8080 --token KEY --node local -p "hello"

Opens a session on the node, watches it, runs a turn with the prompt, prints
text deltas as they arrive and exits 0 when the turn ends completed; on a
refusal, a turn error or a lost connection it prints the error and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from aophub.client import HubClient, HubClientError


async def run(server: str, token: str, node: str, prompt: str, session_id: str) -> int:
    async with await HubClient.connect(server, token, reconnect=True) as hub:
        session = await hub.open_session(node, session_id=session_id) if not session_id else None
        target = session.id if session else session_id
        # Watch from the current end of the log, so only this turn's events show.
        history = await hub.list_events(target, limit=10_000)
        async with await hub.watch(target, after_cursor=history.next_cursor) as watcher:
            receipt = await hub.run_turn(target, prompt)
            print(f"[session {target}, turn {receipt.turn_id}]", file=sys.stderr)
            async for item in watcher:
                event = item.event
                if event.turn_id != receipt.turn_id:
                    continue
                kind = event.WhichOneof("payload")
                if kind == "message_delta" and event.message_delta.WhichOneof("value") == "text":
                    print(event.message_delta.text, end="", flush=True)
                elif kind == "turn_ended":
                    print()
                    ended = event.turn_ended
                    if ended.stop_reason == "completed":
                        return 0
                    detail = f" ({ended.error.code}: {ended.error.message})" if ended.HasField("error") else ""
                    print(f"turn ended: {ended.stop_reason}{detail}", file=sys.stderr)
                    return 1
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", default="http://127.0.0.1:8080", help="hub base URL")
    parser.add_argument("--token", default=os.environ.get("AOPHUB_TOKEN"), help="access key (default $AOPHUB_TOKEN)")
    parser.add_argument("--node", default="local", help="node to open the session on")
    parser.add_argument("--session", default="", help="continue this existing session instead of opening one")
    parser.add_argument("-p", "--prompt", required=True, help="what to ask")
    args = parser.parse_args()
    if not args.token:
        parser.error("--token (or $AOPHUB_TOKEN) is required")
    try:
        return asyncio.run(run(args.server, args.token, args.node, args.prompt, args.session))
    except HubClientError as error:
        print(f"refused: {error}", file=sys.stderr)
    except (OSError, ConnectionError) as error:
        print(f"connection failed: {error}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
