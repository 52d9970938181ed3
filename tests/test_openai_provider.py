"""The OpenAI-compatible provider against a real fake server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import pytest_asyncio

from aop import content_pb2, value_pb2
from aophub.agent.openai import OpenAIProvider
from aophub.agent.provider import (
    AssistantToolCall,
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
from tests.support.fake_openai import (
    FakeOpenAI,
    FinishChunk,
    RawLine,
    Reasoning,
    Reply,
    Stall,
    Text,
    ToolCallChunk,
    UsageChunk,
    answer,
    failure,
    fake_openai,
)

KEY = "sk-test"
HELLO = ChatRequest([ChatMessage("user", "hello")])


class Sleeps:
    """An injected sleep that records the waits and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# One server for the module (starting and stopping uvicorn costs 0.2 s); each test resets it.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def server() -> AsyncIterator[FakeOpenAI]:
    async with fake_openai(api_key=KEY, models=["zeta", "alpha"]) as server:
        yield server


@pytest.fixture
def fake(server: FakeOpenAI) -> FakeOpenAI:
    server.reset()
    return server


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
async def provider(fake: FakeOpenAI, sleeps: Sleeps) -> AsyncIterator[OpenAIProvider]:
    async with OpenAIProvider(fake.base_url, KEY, "fake-model", timeout=5, sleep=sleeps) as provider:
        yield provider


async def collect(provider: OpenAIProvider, request: ChatRequest = HELLO) -> list[StreamEvent]:
    return [event async for event in provider.stream(request)]


async def failing(provider: OpenAIProvider, request: ChatRequest = HELLO) -> tuple[list[StreamEvent], ProviderError]:
    events: list[StreamEvent] = []
    with pytest.raises(ProviderError) as caught:
        await drain(provider, request, events)
    return events, caught.value


async def drain(provider: OpenAIProvider, request: ChatRequest, into: list[StreamEvent]) -> None:
    async for event in provider.stream(request):
        into.append(event)  # noqa: PERF401 (the events before the failure matter)


def definition(name: str) -> content_pb2.ToolDefinition:
    schema = json.dumps({"type": "object", "properties": {"path": {"type": "string"}}}).encode()
    return content_pb2.ToolDefinition(
        type="function",
        name=name,
        description=f"The {name} tool.",
        input_schema=value_pb2.EncodedValue(data=schema, media_type="application/json"),
    )


async def test_stream_parses_text_reasoning_parallel_tool_calls_and_usage(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    """Reasoning, text, two interleaved tool calls and detailed usage become neutral events in order."""
    fake.script(
        Reply(
            [
                Reasoning("Let me "),
                Reasoning("think."),
                Text("Reading "),
                Text("both."),
                ToolCallChunk(0, id="call_a", name="read_file"),
                ToolCallChunk(1, id="call_b", name="list_dir"),
                ToolCallChunk(0, arguments='{"path": '),
                ToolCallChunk(1, arguments='{"path": "."}'),
                ToolCallChunk(0, arguments='"a.txt"}'),
                FinishChunk("tool_calls"),
                UsageChunk(100, 40, cached=64, reasoning=12),
            ]
        )
    )
    events = await collect(provider, ChatRequest([ChatMessage("user", "go")], tools=[definition("read_file")]))
    assert events == [
        ReasoningDelta("Let me "),
        ReasoningDelta("think."),
        TextDelta("Reading "),
        TextDelta("both."),
        ToolCallFragment(0, id="call_a", name="read_file"),
        ToolCallFragment(1, id="call_b", name="list_dir"),
        ToolCallFragment(0, arguments='{"path": '),
        ToolCallFragment(1, arguments='{"path": "."}'),
        ToolCallFragment(0, arguments='"a.txt"}'),
        Usage(100, 40, 140, model="fake-model", detail={"cached_tokens": 64, "reasoning_tokens": 12}),
        Finish("tool_calls"),
    ]
    (request,) = fake.chat_requests
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["stream"] is True
    assert request.body["stream_options"] == {"include_usage": True}
    assert request.body["model"] == "fake-model"
    assert "max_tokens" not in request.body
    assert request.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "The read_file tool.",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]


async def test_reasoning_field_variant_and_max_tokens(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """``delta.reasoning`` is reasoning too; the request's max_tokens overrides the provider's."""
    fake.script(Reply([Reasoning("hmm", field="reasoning"), Text("ok"), FinishChunk("stop")]), answer("again"))
    async with OpenAIProvider(fake.base_url, KEY, "m", timeout=5, max_tokens=99, sleep=sleeps) as provider:
        assert await collect(provider, ChatRequest([ChatMessage("user", "x")], max_tokens=7)) == [
            ReasoningDelta("hmm"),
            TextDelta("ok"),
            Finish("stop"),
        ]
        await collect(provider)
    first, second = fake.chat_requests
    assert first.body["max_tokens"] == 7
    assert second.body["max_tokens"] == 99


async def test_messages_are_converted_with_images_as_data_urls(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    """System, user with images (inline -> data URL, URI as is), assistant tool calls and tool results convert."""
    png = b"\x89PNG\r\n\x1a\nfake"
    inline = content_pb2.MediaContent(kind="image", resource=content_pb2.Resource(data=png, media_type="image/png"))
    linked = content_pb2.MediaContent(kind="image", resource=content_pb2.Resource(uri="https://example.com/cat.jpg"))
    fake.script(answer("seen"))
    await collect(
        provider,
        ChatRequest(
            [
                ChatMessage("system", "be brief"),
                ChatMessage("user", "what is this?", images=(inline, linked)),
                ChatMessage("assistant", "", tool_calls=(AssistantToolCall("call_1", "read_file", '{"path":"a"}'),)),
                ChatMessage("tool", "file text", tool_call_id="call_1"),
                ChatMessage("assistant", "done"),
            ]
        ),
    )
    (request,) = fake.chat_requests
    assert request.messages == [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "file text"},
        {"role": "assistant", "content": "done"},
    ]


async def test_refused_key_is_a_clear_auth_error_without_retry(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """HTTP 401 becomes code "auth" with the provider's message, after exactly one request."""
    async with OpenAIProvider(fake.base_url, "sk-wrong", "m", timeout=5, sleep=sleeps) as provider:
        events, error = await failing(provider)
    assert events == []
    assert error.code == ProviderErrorCode.AUTH
    assert error.message == "the API key was refused (HTTP 401): Incorrect API key provided."
    assert not error.retryable
    assert len(fake.chat_requests) == 1
    assert sleeps.waits == []


async def test_missing_key_says_none_is_configured(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """Without a key, a 401 says that the endpoint wants one."""
    async with OpenAIProvider(fake.base_url, "", "m", timeout=5, sleep=sleeps) as provider:
        _, error = await failing(provider)
    assert error.code == ProviderErrorCode.AUTH
    assert error.message.startswith("the endpoint wants an API key and none is configured (HTTP 401)")
    assert "authorization" not in fake.chat_requests[0].headers


async def test_rate_limit_is_retried_after_the_servers_wait(
    fake: FakeOpenAI, provider: OpenAIProvider, sleeps: Sleeps
) -> None:
    """429 is retried after retry-after (seconds, or an HTTP date capped at 30 s), then the answer streams."""
    later = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    fake.script(
        failure(429, "slow down", retry_after="2"),
        failure(429, "slow down", retry_after=later),
        failure(429, "slow down", retry_after_ms="250"),
        answer("finally"),
    )
    events = await collect(provider)
    assert sleeps.waits == [2.0, 30.0, 0.25]
    assert events[0] == TextDelta("finally")
    assert len(fake.chat_requests) == 4


async def test_rate_limit_gives_up_after_the_bound(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """After max_retries retries a 429 becomes code "rate_limited", retryable, naming the attempts."""
    fake.script(*[failure(429, "quota exceeded", retry_after="1")] * 3)
    async with OpenAIProvider(fake.base_url, KEY, "m", timeout=5, max_retries=2, sleep=sleeps) as provider:
        _, error = await failing(provider)
    assert error.code == ProviderErrorCode.RATE_LIMITED
    assert error.retryable
    assert (
        error.message == "the provider is rate limiting requests (HTTP 429): quota exceeded (gave up after 3 attempts)"
    )
    assert sleeps.waits == [1.0, 1.0]


async def test_server_errors_back_off_then_unavailable(
    fake: FakeOpenAI, provider: OpenAIProvider, sleeps: Sleeps
) -> None:
    """HTTP 500 is retried with doubling waits, then becomes code "unavailable"."""
    fake.script(*[failure(500, "boom")] * 4)
    _, error = await failing(provider)
    assert error.code == ProviderErrorCode.UNAVAILABLE
    assert error.message == "the provider failed (HTTP 500): boom (gave up after 4 attempts)"
    assert sleeps.waits == [1.0, 2.0, 4.0]


async def test_server_error_then_success(fake: FakeOpenAI, provider: OpenAIProvider, sleeps: Sleeps) -> None:
    """One 503 is retried and the second attempt streams normally."""
    fake.script(failure(503, "warming up"), answer("up"))
    assert await collect(provider) == [TextDelta("up"), Usage(10, 5, 15, model="fake-model"), Finish("stop")]
    assert sleeps.waits == [1.0]


async def test_bad_request_carries_the_providers_message(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    """HTTP 400 becomes code "bad_request" with the provider's explanation, not retried."""
    fake.script(failure(400, "max_tokens is too large"))
    _, error = await failing(provider)
    assert error.code == ProviderErrorCode.BAD_REQUEST
    assert error.message == "the provider refused the request (HTTP 400): max_tokens is too large"
    assert len(fake.chat_requests) == 1


async def test_silent_server_times_out(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """A server that does not answer within the timeout gives code "timeout" after the bounded retries."""
    fake.script(Reply(delay=30), Reply(delay=30))
    async with OpenAIProvider(fake.base_url, KEY, "m", timeout=0.2, max_retries=1, sleep=sleeps) as provider:
        _, error = await failing(provider)
    assert error.code == ProviderErrorCode.TIMEOUT
    assert error.message.startswith("no answer from http://127.0.0.1:")
    assert error.message.endswith("within 0.2 s (gave up after 2 attempts)")
    assert sleeps.waits == [1.0]


async def test_stall_after_output_is_not_retried(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """A stream that stalls after some text fails with "timeout" at once: output is never duplicated."""
    fake.script(Reply([Text("partial"), Stall(30)]))
    async with OpenAIProvider(fake.base_url, KEY, "m", timeout=0.2, sleep=sleeps) as provider:
        events, error = await failing(provider)
    assert events == [TextDelta("partial")]
    assert error.code == ProviderErrorCode.TIMEOUT
    assert len(fake.chat_requests) == 1
    assert sleeps.waits == []


async def test_unreachable_endpoint_is_unavailable(sleeps: Sleeps) -> None:
    """A refused connection is retried, then becomes code "unavailable" naming the URL."""
    async with OpenAIProvider("http://127.0.0.1:1/v1", KEY, "m", timeout=2, max_retries=1, sleep=sleeps) as provider:
        _, error = await failing(provider)
    assert error.code == ProviderErrorCode.UNAVAILABLE
    assert error.message.startswith("cannot connect to http://127.0.0.1:1/v1/chat/completions")
    assert sleeps.waits == [1.0]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            Reply([Text("a"), RawLine("data: {not json")]),
            "the provider sent a stream line that is not a JSON object: '{not json'",
        ),
        (
            Reply([Text("cut")], done=False),
            "the stream ended before the answer was complete (no finish_reason and no [DONE])",
        ),
        (Reply([FinishChunk("stop")]), "the model returned an empty answer (no text and no tool calls)"),
        (Reply([FinishChunk("length")]), "the model reached its output token limit before answering"),
    ],
    ids=["non-json", "truncated", "empty", "length"],
)
async def test_malformed_streams_are_bad_stream(
    fake: FakeOpenAI, provider: OpenAIProvider, reply: Reply, message: str
) -> None:
    """Non-JSON lines, a stream cut without [DONE] or finish_reason, and empty answers give "bad_stream"."""
    fake.script(reply)
    _, error = await failing(provider)
    assert error.code == ProviderErrorCode.BAD_STREAM
    assert error.message == message
    assert len(fake.chat_requests) == 1


async def test_stream_ending_after_finish_reason_without_done_is_complete(
    fake: FakeOpenAI, provider: OpenAIProvider
) -> None:
    """A finish_reason without the closing [DONE] is a complete answer."""
    fake.script(Reply([Text("ok"), FinishChunk("stop")], done=False))
    assert await collect(provider) == [TextDelta("ok"), Finish("stop")]


async def test_error_chunk_before_output_is_retried(fake: FakeOpenAI, provider: OpenAIProvider, sleeps: Sleeps) -> None:
    """An error object in the stream before any output is retried like a server error."""
    fake.script(Reply([RawLine('data: {"error": {"message": "overloaded"}}')]), answer("fine"))
    events = await collect(provider)
    assert events[0] == TextDelta("fine")
    assert sleeps.waits == [1.0]


async def test_list_models_sorted(provider: OpenAIProvider) -> None:
    """GET /models lists the endpoint's models sorted by id."""
    assert await provider.list_models() == [ModelInfo("alpha", "fake"), ModelInfo("zeta", "fake")]


async def test_list_models_with_refused_key(fake: FakeOpenAI, sleeps: Sleeps) -> None:
    """Listing models with a refused key is a clear auth error."""
    async with OpenAIProvider(fake.base_url, "sk-wrong", "m", timeout=5, sleep=sleeps) as provider:
        with pytest.raises(ProviderError, match=r"the API key was refused \(HTTP 401\)") as caught:
            await provider.list_models()
    assert caught.value.code == ProviderErrorCode.AUTH


async def test_complete_is_one_non_streaming_call(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    """complete() sends stream=false with the prompt and returns the text and the answering model."""
    fake.script(Reply([Text("pong")], model="fake-model-2024"))
    assert await provider.complete("ping") == Completion("pong", "fake-model-2024")
    (request,) = fake.chat_requests
    assert request.body == {"model": "fake-model", "messages": [{"role": "user", "content": "ping"}], "stream": False}


async def test_server_ignoring_stream_still_gives_events(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    """A server that answers one JSON completion to a streaming request still yields the neutral events."""
    fake.script(
        Reply(
            [Text("whole"), ToolCallChunk(0, id="c1", name="f", arguments="{}"), FinishChunk("tool_calls")],
            stream=False,
        )
    )
    assert await collect(provider) == [
        TextDelta("whole"),
        ToolCallFragment(0, id="c1", name="f", arguments="{}"),
        Finish("tool_calls"),
    ]


async def test_tool_calls_without_index_are_told_apart_by_id(fake: FakeOpenAI, provider: OpenAIProvider) -> None:
    """Servers that omit the tool call index (whole calls per chunk) get indices by call id."""
    lines = [
        {"id": "c1", "function": {"name": "a", "arguments": {"x": 1}}},
        {"id": "c2", "function": {"name": "b", "arguments": "{}"}},
    ]
    fake.script(
        Reply(
            [
                *[
                    RawLine("data: " + json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
                    for call in lines
                ],
                FinishChunk("tool_calls"),
            ]
        )
    )
    assert await collect(provider) == [
        ToolCallFragment(0, id="c1", name="a", arguments='{"x": 1}'),
        ToolCallFragment(1, id="c2", name="b", arguments="{}"),
        Finish("tool_calls"),
    ]
