"""The OpenAI-compatible chat completions provider (OpenAI, vLLM, Ollama, llama.cpp, ...).

:class:`OpenAIProvider` streams ``POST {base_url}/chat/completions`` as
server-sent events and turns the chunks into the neutral events of
:mod:`aophub.agent.provider`. Every failure becomes a
:class:`~aophub.agent.provider.ProviderError`; httpx exceptions are
translated in :func:`map_exceptions` and nowhere else.

Retries (429, 5xx, connection failures and timeouts) happen only before the
first event was yielded, so streamed output is never duplicated; they are
bounded by ``max_retries`` and each wait by ``max_wait`` seconds. Every read
is bounded by ``timeout``, so a silent server cannot hang a turn.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import email.utils
import functools
import json
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import httpx

from aop import content_pb2
from aophub.agent.provider import (
    ChatMessage,
    ChatRequest,
    Completion,
    Finish,
    ModelInfo,
    ProviderError,
    ProviderErrorCode,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallFragment,
    Usage,
)

__all__ = ["OpenAIProvider", "chat_body", "map_exceptions"]

Sleep = Callable[[float], Awaitable[None]]
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
_RETRIED = frozenset({ProviderErrorCode.RATE_LIMITED, ProviderErrorCode.UNAVAILABLE, ProviderErrorCode.TIMEOUT})


@contextlib.contextmanager
def map_exceptions(url: str, timeout: float) -> Iterator[None]:
    """Translate httpx's exceptions raised inside the block into :class:`ProviderError`."""
    try:
        yield
    except httpx.TimeoutException as error:
        raise ProviderError(
            ProviderErrorCode.TIMEOUT, f"no answer from {url} within {timeout:g} s", retryable=True
        ) from error
    except httpx.UnsupportedProtocol as error:
        raise ProviderError(ProviderErrorCode.BAD_REQUEST, f"the base URL is not http(s): {url}") from error
    except httpx.ConnectError as error:
        raise ProviderError(
            ProviderErrorCode.UNAVAILABLE, f"cannot connect to {url}: {_describe(error)}", retryable=True
        ) from error
    except httpx.DecodingError as error:
        raise ProviderError(
            ProviderErrorCode.BAD_RESPONSE, f"cannot decode the answer of {url}: {_describe(error)}"
        ) from error
    except httpx.TransportError as error:
        raise ProviderError(
            ProviderErrorCode.UNAVAILABLE, f"the connection to {url} failed: {_describe(error)}", retryable=True
        ) from error
    except httpx.InvalidURL as error:
        raise ProviderError(ProviderErrorCode.BAD_REQUEST, f"invalid URL {url}: {error}") from error


def _describe(error: Exception) -> str:
    return str(error) or type(error).__name__


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once: loading the trust roots costs ~0.1 s of CPU, and the
    agent makes a provider (and a client) per turn."""
    return httpx.create_ssl_context()


class OpenAIProvider:
    """One OpenAI-compatible endpoint and model.

    ``timeout`` bounds every connect and read (seconds). ``max_tokens`` caps
    output tokens unless a request sets its own (0: the endpoint's default).
    ``client`` and ``sleep`` are injectable for tests; a client passed in is
    not closed by :meth:`aclose`.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        timeout: float,
        max_tokens: int = 0,
        max_retries: int = 3,
        client: httpx.AsyncClient | None = None,
        sleep: Sleep = asyncio.sleep,
        backoff: float = 1.0,
        max_wait: float = 30.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._model = model
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self._timeouts = httpx.Timeout(timeout)
        self._client = (
            client if client is not None else httpx.AsyncClient(timeout=self._timeouts, verify=_tls_context())
        )
        self._owns_client = client is None
        self._sleep = sleep

    def __repr__(self) -> str:
        return f"<OpenAIProvider {self.base_url} model={self._model!r}>"

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> OpenAIProvider:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream one chat completion; see :meth:`aophub.agent.provider.Provider.stream`."""
        url = self._url("chat/completions")
        body = chat_body(self._model, request, max_tokens=self.max_tokens)
        headers = {**self._headers(), "Accept": "text/event-stream"}
        attempt = 0
        while True:
            yielded = False
            try:
                with map_exceptions(url, self.timeout):
                    async with self._client.stream(
                        "POST", url, json=body, headers=headers, timeout=self._timeouts
                    ) as response:
                        await self._raise_for_status(response, url)
                        parser = _ChunkParser(ProviderErrorCode.BAD_STREAM)
                        if response.headers.get("content-type", "").startswith("application/json"):
                            # The server ignored "stream": it answered with one completion.
                            parser.feed_object(_json_object(await response.aread(), url))
                            parser.done = True
                        else:
                            async for line in response.aiter_lines():
                                for event in parser.feed_line(line):
                                    yielded = True
                                    yield event
                                if parser.done:
                                    break
                        for event in [*parser.drain(), *parser.end()]:
                            yielded = True
                            yield event
                return
            except ProviderError as error:
                if yielded:
                    raise
                attempt += 1
                await self._before_retry(error, attempt)

    async def complete(self, prompt: str) -> Completion:
        """One non-streaming call with ``prompt`` as the user message; for testing a profile."""
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [{"role": "user", "content": prompt}],
            "stream": False,
        }
        if self.max_tokens:
            body["max_tokens"] = self.max_tokens
        data = await self._request_json("POST", "chat/completions", body)
        parser = _ChunkParser(ProviderErrorCode.BAD_RESPONSE)
        parser.feed_object(data)
        parser.done = True
        events = [*parser.drain(), *parser.end()]
        text = "".join(event.text for event in events if isinstance(event, TextDelta))
        return Completion(text=text, model=parser.model or self._model)

    async def list_models(self) -> list[ModelInfo]:
        """The endpoint's models (``GET /models``), sorted by id."""
        data = await self._request_json("GET", "models", None)
        items = data.get("data")
        if not isinstance(items, list):
            raise ProviderError(ProviderErrorCode.BAD_RESPONSE, f"{self._url('models')} returned no model list")
        models = [
            ModelInfo(id=item["id"], owned_by=_string(item.get("owned_by")))
            for item in items
            if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]
        return sorted(models, key=lambda model: model.id)

    async def _request_json(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        url = self._url(path)
        attempt = 0
        while True:
            try:
                with map_exceptions(url, self.timeout):
                    response = await self._client.request(
                        method, url, json=body, headers=self._headers(), timeout=self._timeouts
                    )
                    await self._raise_for_status(response, url)
                return _json_object(response.content, url)
            except ProviderError as error:
                attempt += 1
                await self._before_retry(error, attempt)

    async def _before_retry(self, error: ProviderError, attempt: int) -> None:
        """Wait before attempt ``attempt + 1``, or raise when ``error`` (of attempt ``attempt``) is final.

        Only transient transport failures are retried here; a malformed or
        empty answer is retryable for the turn's caller, not worth a silent
        second model call.
        """
        if not (error.retryable and error.code in _RETRIED):
            raise error
        if attempt > self.max_retries:
            if attempt == 1:
                raise error
            raise ProviderError(
                error.code, f"{error.message} (gave up after {attempt} attempts)", error.retryable
            ) from error
        wait = error.retry_after if error.retry_after is not None else self.backoff * 2 ** (attempt - 1)
        await self._sleep(min(wait, self.max_wait))

    async def _raise_for_status(self, response: httpx.Response, url: str) -> None:
        if response.is_success:
            return
        status = response.status_code
        detail = _error_detail(await response.aread())
        if status in (401, 403):
            if self._api_key:
                message = f"the API key was refused (HTTP {status}): {detail}"
            else:
                message = f"the endpoint wants an API key and none is configured (HTTP {status}): {detail}"
            raise ProviderError(ProviderErrorCode.AUTH, message)
        retry_after = _retry_after(response.headers)
        if status == 429:
            raise ProviderError(
                ProviderErrorCode.RATE_LIMITED,
                f"the provider is rate limiting requests (HTTP 429): {detail}",
                retryable=True,
                retry_after=retry_after,
            )
        if status == 408:
            raise ProviderError(ProviderErrorCode.TIMEOUT, f"the provider timed out (HTTP 408): {detail}", True)
        if status >= 500:
            raise ProviderError(
                ProviderErrorCode.UNAVAILABLE,
                f"the provider failed (HTTP {status}): {detail}",
                retryable=True,
                retry_after=retry_after,
            )
        if status == 404:
            raise ProviderError(
                ProviderErrorCode.NOT_FOUND,
                f"{url} or model {self._model!r} was not found (HTTP 404): {detail}; check the base URL and model",
            )
        raise ProviderError(
            ProviderErrorCode.BAD_REQUEST, f"the provider refused the request (HTTP {status}): {detail}"
        )


def chat_body(model: str, request: ChatRequest, *, max_tokens: int = 0, stream: bool = True) -> dict[str, Any]:
    """The JSON body of a chat completions call for ``request``."""
    body: dict[str, Any] = {"model": model, "messages": [_message(message) for message in request.messages]}
    if request.tools:
        body["tools"] = [_tool(definition) for definition in request.tools]
    if request.max_tokens or max_tokens:
        body["max_tokens"] = request.max_tokens or max_tokens
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


def _message(message: ChatMessage) -> dict[str, Any]:
    if message.role == "user" and message.images:
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
        parts += [{"type": "image_url", "image_url": {"url": image_url(image)}} for image in message.images]
        return {"role": "user", "content": parts}
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text or (None if message.tool_calls else "")}
        if message.tool_calls:
            out["tool_calls"] = [
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                for call in message.tool_calls
            ]
        return out
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
    return {"role": message.role, "content": message.text}


def image_url(image: content_pb2.MediaContent) -> str:
    """The ``image_url.url`` of an image: its URI, or a ``data:`` URL of its inline bytes."""
    resource = image.resource
    if resource.WhichOneof("source") == "uri":
        return resource.uri
    encoded = base64.b64encode(resource.data).decode("ascii")
    return f"data:{resource.media_type or 'image/png'};base64,{encoded}"


def _tool(definition: content_pb2.ToolDefinition) -> dict[str, Any]:
    schema: Any = _EMPTY_SCHEMA
    if definition.input_schema.data:
        try:
            schema = json.loads(definition.input_schema.data)
        except ValueError as error:
            raise ProviderError(
                ProviderErrorCode.BAD_REQUEST, f"the input schema of tool {definition.name!r} is not JSON: {error}"
            ) from error
    function: dict[str, Any] = {"name": definition.name, "parameters": schema}
    if definition.description:
        function["description"] = definition.description
    return {"type": "function", "function": function}


def _json_object(content: bytes, url: str) -> dict[str, Any]:
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise ProviderError(
            ProviderErrorCode.BAD_RESPONSE, f"{url} did not answer with a JSON object: {content[:200]!r}"
        )
    return data


def _error_detail(content: bytes) -> str:
    """The provider's own explanation from an error body (OpenAI's ``{"error": {"message": ...}}`` and variants)."""
    try:
        data = json.loads(content)
    except ValueError:
        data = None
    return _error_text(data) or content.decode("utf-8", "replace").strip()[:300] or "(no details)"


def _error_text(data: object) -> str:
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return ""


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, ``retry-after`` in seconds or as an HTTP date)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        with contextlib.suppress(ValueError):
            return max(0.0, float(milliseconds) / 1000)
    value = headers.get("retry-after")
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class _ChunkParser:
    """Turns chat completion chunks (or one whole completion) into neutral events.

    Only choice 0 is read. Usage is kept until :meth:`end`, because some
    servers repeat a cumulative usage in every chunk.
    """

    def __init__(self, malformed: ProviderErrorCode) -> None:
        self.malformed = malformed
        self.done = False
        self.model = ""
        self.finish_reason = ""
        self.answered = False
        self._usage: dict[str, Any] | None = None
        self._pending: list[StreamEvent] = []
        self._ids: dict[str, int] = {}
        self._last_index = -1

    def __repr__(self) -> str:
        return f"<_ChunkParser done={self.done} finish={self.finish_reason!r} answered={self.answered}>"

    def feed_line(self, line: str) -> list[StreamEvent]:
        """Events of one SSE line (each ``data:`` line is one JSON chunk; other fields are ignored)."""
        name, _, value = line.rstrip("\r").partition(":")
        if name != "data":
            return []
        value = value.removeprefix(" ")
        if value.strip() == "[DONE]":
            self.done = True
            return []
        try:
            chunk = json.loads(value)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            raise ProviderError(
                self.malformed, f"the provider sent a stream line that is not a JSON object: {value[:200]!r}"
            )
        self.feed_object(chunk)
        return self.drain()

    def drain(self) -> list[StreamEvent]:
        events, self._pending = self._pending, []
        return events

    def feed_object(self, chunk: dict[str, Any]) -> None:
        """Parse one chunk, or one whole non-streaming completion."""
        error = chunk.get("error")
        if error:
            raise ProviderError(
                ProviderErrorCode.UNAVAILABLE,
                f"the provider reported an error: {_error_text({'error': error})}",
                retryable=True,
            )
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta", choice.get("message"))
            if isinstance(delta, dict):
                self._delta(delta)
            if isinstance(choice.get("finish_reason"), str) and choice["finish_reason"]:
                self.finish_reason = choice["finish_reason"]

    def _delta(self, delta: dict[str, Any]) -> None:
        reasoning = delta.get("reasoning_content")
        if not (isinstance(reasoning, str) and reasoning):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._pending.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self.answered = True
            self._pending.append(TextDelta(content))
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            arguments = function.get("arguments", "")
            if not isinstance(arguments, str):  # some servers send an object
                arguments = json.dumps(arguments)
            self.answered = True
            self._pending.append(
                ToolCallFragment(
                    index=self._index(call),
                    id=_string(call.get("id")),
                    name=_string(function.get("name")),
                    arguments=arguments,
                )
            )

    def _index(self, call: dict[str, Any]) -> int:
        """The call's index; servers that omit it are followed by call id, else by the previous call."""
        index = call.get("index")
        call_id = _string(call.get("id"))
        if not isinstance(index, int) or isinstance(index, bool):
            if call_id in self._ids:
                index = self._ids[call_id]
            elif call_id or self._last_index < 0:
                index = self._last_index + 1
            else:
                index = self._last_index
        if call_id:
            self._ids.setdefault(call_id, index)
        self._last_index = index
        return index

    def end(self) -> list[StreamEvent]:
        """The closing events (usage, finish); raises when the answer is incomplete or empty."""
        if not self.done and not self.finish_reason:
            raise ProviderError(
                self.malformed,
                "the stream ended before the answer was complete (no finish_reason and no [DONE])",
                retryable=True,
            )
        if not self.answered:
            if self.finish_reason == "length":
                message = "the model reached its output token limit before answering"
            elif self.finish_reason == "content_filter":
                message = "the provider's content filter withheld the answer"
            else:
                message = "the model returned an empty answer (no text and no tool calls)"
            raise ProviderError(self.malformed, message, retryable=self.finish_reason != "content_filter")
        events: list[StreamEvent] = []
        if self._usage is not None:
            events.append(_usage(self._usage, self.model))
        events.append(Finish(self.finish_reason or "stop"))
        return events


def _usage(usage: dict[str, Any], model: str) -> Usage:
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    detail: dict[str, int] = {}
    for group, key in (("prompt_tokens_details", "cached_tokens"), ("completion_tokens_details", "reasoning_tokens")):
        details = usage.get(group)
        if isinstance(details, dict) and _count(details.get(key)):
            detail[key] = _count(details[key])
    total = _count(usage.get("total_tokens")) or prompt + completion
    return Usage(input_tokens=prompt, output_tokens=completion, total_tokens=total, model=model, detail=detail)
