"""The summary calls: messages too many for one call fold in chunks, each call under the budget."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from aop import event_pb2
from aophub.agent.context import summary_tokens
from aophub.agent.provider import ChatMessage, ChatRequest, Finish, StreamEvent, TextDelta, Usage
from aophub.agent.summaries import SUMMARY_INSTRUCTIONS, summary_event_parts, summary_of, write_summary
from aophub.agent.tokens import EstimatedTokens, request_tokens


class ScriptedModel:
    """Answers each summary call with "S<n>" and records the requests."""

    model = "fake"

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        self.requests.append(request)
        yield TextDelta(f"S{len(self.requests)}")
        yield Usage(1, 1, 2)
        yield Finish("stop")

    async def aclose(self) -> None:
        return None


async def test_messages_over_the_budget_fold_in_chunks_each_under_it() -> None:
    """40 messages of ~100 tokens under a 1000-token budget: several calls, each within budget, chained."""
    counter = EstimatedTokens()
    model = ScriptedModel()
    messages = [ChatMessage("user" if n % 2 == 0 else "assistant", f"m{n} " + "x" * 300) for n in range(40)]
    summary, usages = await write_summary(model, "earlier", messages, budget=1000, counter=counter)
    assert len(model.requests) > 3
    assert summary == f"S{len(model.requests)}"
    assert len(usages) == len(model.requests)
    for request in model.requests:
        assert request.messages[0].text == SUMMARY_INSTRUCTIONS
        assert request_tokens(request.messages, (), counter) + request.max_tokens <= 1000
        assert request.max_tokens == summary_tokens(1000)
    assert "Summary so far:\nearlier" in model.requests[0].messages[1].text
    assert "Summary so far:\nS1" in model.requests[1].messages[1].text
    everything = "".join(request.messages[1].text for request in model.requests)
    assert all(f"m{n} " in everything for n in range(40))


async def test_a_message_bigger_than_a_call_is_clipped() -> None:
    """One message over the budget is clipped, so the call still fits."""
    counter = EstimatedTokens()
    model = ScriptedModel()
    await write_summary(model, "", [ChatMessage("user", "y" * 10_000)], budget=1000, counter=counter)
    [request] = model.requests
    assert request_tokens(request.messages, (), counter) + request.max_tokens <= 1000
    assert "[...clipped]" in request.messages[1].text


def test_the_summary_event_reads_back() -> None:
    """summary_event_parts and summary_of agree; other events are not summaries."""
    message, extension = summary_event_parts("the gist", 7, "budget")
    event = event_pb2.Event(message=message)
    event.extensions.append(extension)
    assert message.role == "system"
    assert summary_of(event) == ("the gist", 7)
    assert summary_of(event_pb2.Event(message=message)) is None
