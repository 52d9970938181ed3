"""A fake OpenAI-compatible server: real HTTP on 127.0.0.1, answers scripted per request.

``async with fake_openai() as fake:`` serves ``POST /v1/chat/completions``
(streaming SSE or one JSON completion, as the request asks) and
``GET /v1/models`` until the block exits. Each chat request takes the next
:class:`Reply` from the queue filled by :meth:`FakeOpenAI.script`; an empty
queue answers HTTP 400 "no scripted reply", so a test that makes one call too
many fails with a clear message, unless :attr:`FakeOpenAI.responder` is set: it
then answers each request the queue does not (long conversations). Every request is recorded in
:attr:`FakeOpenAI.requests`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

__all__ = [
    "Chunk",
    "FakeOpenAI",
    "FinishChunk",
    "Gate",
    "RawLine",
    "Reasoning",
    "Recorded",
    "Reply",
    "Stall",
    "Text",
    "ToolCallChunk",
    "UsageChunk",
    "answer",
    "failure",
    "fake_openai",
    "fake_openai_in_thread",
    "tool_calls",
]

MODEL = "fake-model"


@dataclass(frozen=True)
class Text:
    """A chunk with ``delta.content``."""

    text: str


@dataclass(frozen=True)
class Reasoning:
    """A chunk with reasoning text, under ``field`` (``reasoning_content`` or ``reasoning``)."""

    text: str
    field: str = "reasoning_content"


@dataclass(frozen=True)
class ToolCallChunk:
    """A chunk with one ``delta.tool_calls`` entry; ``id`` and ``name`` only on a call's first chunk."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(frozen=True)
class UsageChunk:
    """The final usage chunk (``choices: []``), with optional details."""

    prompt: int
    completion: int
    cached: int = 0
    reasoning: int = 0


@dataclass(frozen=True)
class FinishChunk:
    """A chunk with an empty delta and ``finish_reason``."""

    reason: str


@dataclass(frozen=True)
class RawLine:
    """A line sent verbatim (for malformed streams)."""

    line: str


@dataclass(frozen=True)
class Stall:
    """Send nothing for ``seconds`` (ended early when the server stops)."""

    seconds: float


@dataclass(frozen=True)
class Gate:
    """Send nothing until the test sets ``opened`` (or the server stops): a model still thinking."""

    opened: asyncio.Event


Chunk = Text | Reasoning | ToolCallChunk | UsageChunk | FinishChunk | RawLine | Stall | Gate


@dataclass(frozen=True)
class Reply:
    """One scripted answer to a chat request.

    ``status`` != 200 answers an OpenAI-style error body with ``error`` as its
    message. ``delay`` stalls before the response starts. ``done`` False cuts
    the stream without ``data: [DONE]``. ``headers`` go on the response.
    """

    chunks: Sequence[Chunk] = ()
    status: int = 200
    error: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    done: bool = True
    model: str = MODEL
    # False: answer one JSON completion even when the request asks for a stream.
    stream: bool = True


def answer(text: str, *, reasoning: str = "", usage: tuple[int, int] | None = (10, 5), finish: str = "stop") -> Reply:
    """A streamed plain answer: reasoning (if any) then ``text`` word by word, usage, finish."""
    chunks: list[Chunk] = [Reasoning(piece) for piece in _pieces(reasoning)]
    chunks += [Text(piece) for piece in _pieces(text)]
    chunks.append(FinishChunk(finish))
    if usage is not None:
        chunks.append(UsageChunk(*usage))
    return Reply(chunks)


def tool_calls(*calls: tuple[str, str, str], text: str = "", usage: tuple[int, int] | None = (20, 8)) -> Reply:
    """Streamed parallel tool calls ``(id, name, arguments)``: fragments of all calls interleaved by index."""
    chunks: list[Chunk] = [Text(piece) for piece in _pieces(text)]
    chunks += [ToolCallChunk(index, id=call_id, name=name) for index, (call_id, name, _) in enumerate(calls)]
    halves = [(arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]) for _, _, arguments in calls]
    for half in (0, 1):
        chunks += [ToolCallChunk(index, arguments=parts[half]) for index, parts in enumerate(halves) if parts[half]]
    chunks.append(FinishChunk("tool_calls"))
    if usage is not None:
        chunks.append(UsageChunk(*usage))
    return Reply(chunks)


def failure(status: int, message: str, **headers: str) -> Reply:
    """An HTTP error with an OpenAI-style body; ``retry_after="2"`` becomes the ``retry-after`` header."""
    return Reply(status=status, error=message, headers={name.replace("_", "-"): v for name, v in headers.items()})


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word + " " for word in words[:-1]] + [words[-1]] if text else []


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    # The JSON body ({} when there was none).
    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = self.body["messages"]
        return messages


class FakeOpenAI:
    """The server's state: scripted replies, recorded requests, the accepted key and models."""

    def __init__(self, *, api_key: str | None = None, models: Sequence[str] = (MODEL,)) -> None:
        self.api_key = api_key
        self.models = list(models)
        self.requests: list[Recorded] = []
        self.port = 0
        self._replies: deque[Reply] = deque()
        # Answers a request when no scripted reply is queued (None: HTTP 400).
        self.responder: Callable[[Recorded], Reply] | None = None
        self._stopping = asyncio.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    def __repr__(self) -> str:
        return f"<FakeOpenAI port={self.port} scripted={len(self._replies)} received={len(self.requests)}>"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        """Forget the recorded requests and any replies still queued (to share one server between tests)."""
        self.requests.clear()
        self._replies.clear()
        self.responder = None

    def script(self, *replies: Reply) -> None:
        """Queue the answers of the next chat requests, in order."""
        self._replies.extend(replies)

    @property
    def chat_requests(self) -> list[Recorded]:
        return [request for request in self.requests if request.path.endswith("/chat/completions")]

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _refused(self, request: Request) -> Response | None:
        if self.api_key is None or request.headers.get("authorization") == f"Bearer {self.api_key}":
            return None
        return _error(401, "Incorrect API key provided.", {})

    async def _record(self, request: Request) -> None:
        raw = await request.body()
        body = json.loads(raw) if raw else {}
        self.requests.append(Recorded(request.method, request.url.path, dict(request.headers), body))

    async def _models(self, request: Request) -> Response:
        await self._record(request)
        refused = self._refused(request)
        if refused is not None:
            return refused
        data = [{"id": model, "object": "model", "created": 0, "owned_by": "fake"} for model in self.models]
        return JSONResponse({"object": "list", "data": data})

    async def _chat(self, request: Request) -> Response:
        await self._record(request)
        refused = self._refused(request)
        if refused is not None:
            return refused
        if self._replies:
            reply = self._replies.popleft()
        elif self.responder is not None:
            reply = self.responder(self.requests[-1])
        else:
            return _error(400, "fake server: no scripted reply left", {})
        if reply.delay:
            await self._pause(reply.delay)
        if reply.status != 200:
            return _error(reply.status, reply.error, reply.headers)
        if self.requests[-1].body.get("stream") and reply.stream:
            return StreamingResponse(self._events(reply), media_type="text/event-stream", headers=dict(reply.headers))
        return JSONResponse(_completion(reply), headers=dict(reply.headers))

    async def _events(self, reply: Reply) -> AsyncIterator[str]:
        yield _sse(_chunk(reply.model, {"role": "assistant", "content": ""}))
        for chunk in reply.chunks:
            if isinstance(chunk, Stall):
                await self._pause(chunk.seconds)
            elif isinstance(chunk, Gate):
                stopping = asyncio.ensure_future(self._stopping.wait())
                opened = asyncio.ensure_future(chunk.opened.wait())
                await asyncio.wait([stopping, opened], return_when=asyncio.FIRST_COMPLETED)
                stopping.cancel()
                opened.cancel()
            elif isinstance(chunk, RawLine):
                yield chunk.line + "\n\n"
            elif isinstance(chunk, UsageChunk):
                yield _sse({"id": "chatcmpl-fake", "model": reply.model, "choices": [], "usage": _usage(chunk)})
            elif isinstance(chunk, FinishChunk):
                yield _sse(_chunk(reply.model, {}, chunk.reason))
            else:
                yield _sse(_chunk(reply.model, _delta(chunk)))
        if reply.done:
            yield "data: [DONE]\n\n"


def _error(status: int, message: str, headers: Mapping[str, str]) -> Response:
    body = {"error": {"message": message, "type": "fake_error", "code": status}}
    return JSONResponse(body, status_code=status, headers=dict(headers))


def _sse(data: dict[str, Any]) -> str:
    return f"data: {json.dumps(data)}\n\n"


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": [choice]}


def _delta(chunk: Text | Reasoning | ToolCallChunk) -> dict[str, Any]:
    if isinstance(chunk, Text):
        return {"content": chunk.text}
    if isinstance(chunk, Reasoning):
        return {chunk.field: chunk.text}
    call: dict[str, Any] = {"index": chunk.index, "function": {"arguments": chunk.arguments}}
    if chunk.id is not None:
        call["id"] = chunk.id
        call["type"] = "function"
    if chunk.name is not None:
        call["function"]["name"] = chunk.name
    return {"tool_calls": [call]}


def _usage(chunk: UsageChunk) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": chunk.prompt,
        "completion_tokens": chunk.completion,
        "total_tokens": chunk.prompt + chunk.completion,
    }
    if chunk.cached:
        usage["prompt_tokens_details"] = {"cached_tokens": chunk.cached}
    if chunk.reasoning:
        usage["completion_tokens_details"] = {"reasoning_tokens": chunk.reasoning}
    return usage


def _completion(reply: Reply) -> dict[str, Any]:
    """The same reply as one non-streaming completion."""
    text = "".join(chunk.text for chunk in reply.chunks if isinstance(chunk, Text))
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls: dict[int, dict[str, Any]] = {}
    finish, usage = "stop", None
    for chunk in reply.chunks:
        if isinstance(chunk, ToolCallChunk):
            call = calls.setdefault(
                chunk.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            call["id"] = chunk.id or call["id"]
            call["function"]["name"] = chunk.name or call["function"]["name"]
            call["function"]["arguments"] += chunk.arguments
        elif isinstance(chunk, FinishChunk):
            finish = chunk.reason
        elif isinstance(chunk, UsageChunk):
            usage = _usage(chunk)
    if calls:
        message["tool_calls"] = [calls[index] for index in sorted(calls)]
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": reply.model,
        "choices": [choice],
        "usage": usage,
    }


class _Server(uvicorn.Server):
    """uvicorn that tells when it is listening (no polling, no sleeps)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = asyncio.Event()

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        await super().startup(sockets)  # type: ignore[arg-type]
        self.ready.set()


@contextlib.asynccontextmanager
async def fake_openai(*, api_key: str | None = None, models: Sequence[str] = (MODEL,)) -> AsyncIterator[FakeOpenAI]:
    """Serve a :class:`FakeOpenAI` on 127.0.0.1 with an ephemeral port until the block exits."""
    fake = FakeOpenAI(api_key=api_key, models=models)
    config = uvicorn.Config(
        fake.app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",
        timeout_graceful_shutdown=5,
    )
    server = _Server(config)
    task = asyncio.create_task(server.serve())
    ready = asyncio.create_task(server.ready.wait())
    await asyncio.wait([task, ready], return_when=asyncio.FIRST_COMPLETED)
    if not server.ready.is_set():
        ready.cancel()
        await task
        raise RuntimeError("the fake OpenAI server did not start")
    fake.port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield fake
    finally:
        fake._stopping.set()
        server.should_exit = True
        await task


@contextlib.contextmanager
def fake_openai_in_thread(*, api_key: str | None = None, models: Sequence[str] = (MODEL,)) -> Iterator[FakeOpenAI]:
    """:func:`fake_openai` served from a thread with an event loop of its own, until the block exits: one
    server for the tests of a module, whichever event loops they run in (share it with :meth:`FakeOpenAI.reset`)."""
    started: queue.Queue[FakeOpenAI | BaseException] = queue.Queue()
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def serve() -> None:
        try:
            async with fake_openai(api_key=api_key, models=models) as fake:
                started.put(fake)
                await stop.wait()
        except BaseException as error:
            started.put(error)
            raise

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), name="fake openai", daemon=True)
    thread.start()
    try:
        item = started.get(timeout=20)
        if isinstance(item, BaseException):
            raise RuntimeError("the fake OpenAI server did not start") from item
        yield item
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(20)
        loop.close()
