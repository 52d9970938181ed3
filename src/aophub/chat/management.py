"""The management RPCs the chat needs beside the application WebSocket.

Answering interactions, slash commands, the command menu, a session's details and archiving
are ``aophub.v1`` services (ConnectRPC), which :class:`aophub.client.HubClient` does not speak.
:class:`Management` calls them through the generated *sync* Connect clients, each call in a
worker thread so the event loop keeps streaming: the generated async client has been seen to
abort the interpreter at exit (issue 13), the sync one has not.

Every refusal (a ``rejected`` outcome or a Connect error) raises :class:`ManagementError` with
the hub's text. Answers carry a ``request_id`` and are retried with it while the hub is
unreachable (a restart), so an answer is given once however often it is sent.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TypeVar

from connectrpc.code import Code
from connectrpc.errors import ConnectError

from aophub.v1 import agent_pb2, interaction_connect, interaction_pb2, session_connect, session_pb2

__all__ = ["Management", "ManagementError"]

T = TypeVar("T")

TIMEOUT_MS = 30_000
# How long an answer is retried while the hub cannot be reached (a restart takes seconds).
ANSWER_RETRY_SECONDS = 60.0


class ManagementError(Exception):
    """The hub refused a management call, or could not be reached; ``str()`` says why."""


class Management:
    """``SessionService`` and ``InteractionService`` of the hub at ``server``, with ``token``."""

    def __init__(self, server: str, token: str, *, timeout_ms: int = TIMEOUT_MS) -> None:
        address = server.rstrip("/")
        self._headers = {"authorization": f"Bearer {token}"}
        self._sessions = session_connect.SessionServiceClientSync(address, timeout_ms=timeout_ms)
        self._interactions = interaction_connect.InteractionServiceClientSync(address, timeout_ms=timeout_ms)

    def __repr__(self) -> str:
        return "<Management>"

    def close(self) -> None:
        self._sessions.close()
        self._interactions.close()

    async def _call(self, call: Callable[[], T]) -> T:
        try:
            return await asyncio.to_thread(call)
        except ConnectError as error:
            raise ManagementError(f"{error.code.value}: {error.message}") from None

    async def get_session(self, session_id: str) -> session_pb2.SessionInfo:
        request = session_pb2.GetSessionRequest(session_id=session_id)
        response = await self._call(lambda: self._sessions.get_session(request, headers=self._headers))
        return response.session

    async def list_commands(self, session_id: str) -> list[agent_pb2.Command]:
        """The hub's commands, then those of the session's node."""
        request = session_pb2.ListCommandsRequest(session_id=session_id)
        response = await self._call(lambda: self._sessions.list_commands(request, headers=self._headers))
        return list(response.commands)

    async def run_command(self, session_id: str, line: str) -> None:
        """Run a slash command line; its output arrives as an event of the session."""
        request = session_pb2.RunCommandRequest(session_id=session_id, line=line)
        await self._call(lambda: self._sessions.run_command(request, headers=self._headers))

    async def archive(self, session_id: str) -> session_pb2.SessionInfo:
        request = session_pb2.UpdateSessionRequest(request_id=uuid.uuid4().hex, session_id=session_id, archived=True)
        response = await self._call(lambda: self._sessions.update_session(request, headers=self._headers))
        if response.WhichOneof("outcome") != "accepted":
            raise ManagementError(f"{response.rejected.code}: {response.rejected.message}")
        return response.accepted

    async def answer(
        self, interaction_id: str, answer: interaction_pb2.InteractionAnswer
    ) -> interaction_pb2.Interaction:
        """Answer an interaction; retried with the same request id while the hub is unreachable."""
        request = interaction_pb2.AnswerInteractionRequest(
            request_id=uuid.uuid4().hex, interaction_id=interaction_id, answer=answer
        )
        deadline = asyncio.get_running_loop().time() + ANSWER_RETRY_SECONDS
        delay = 0.5
        while True:
            try:
                response = await asyncio.to_thread(
                    lambda: self._interactions.answer_interaction(request, headers=self._headers)
                )
                break
            except ConnectError as error:
                if error.code != Code.UNAVAILABLE or asyncio.get_running_loop().time() + delay > deadline:
                    raise ManagementError(f"{error.code.value}: {error.message}") from None
            await asyncio.sleep(delay)  # the hub restarts: try again with the same request id
            delay = min(delay * 2, 5.0)
        if response.WhichOneof("outcome") != "accepted":
            raise ManagementError(f"{response.rejected.code}: {response.rejected.message}")
        return response.accepted
