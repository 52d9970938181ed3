"""MarkdownStream: streamed markdown split into finished blocks and the unfinished tail."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aophub.chat.markdown_stream import MarkdownStream


def test_a_paragraph_is_finished_when_text_follows_its_blank_line() -> None:
    """A blank line alone finishes nothing (the answer may end there); the next block's first character does."""
    stream = MarkdownStream()
    assert stream.append("First para") == []
    assert stream.append("graph.\n\n") == []
    assert stream.pending == "First paragraph.\n\n"
    assert stream.append("- one") == ["First paragraph."]
    assert stream.pending == "- one"
    assert stream.finish() == "- one"
    assert stream.pending == ""


def test_blank_lines_inside_a_fenced_code_block_do_not_split_it() -> None:
    """A fenced block is one block however many blank lines it holds, finished after its closing fence."""
    stream = MarkdownStream()
    assert stream.append("```python\nx = 1\n\n\ny = 2\n") == []
    assert stream.append("```\n\nAfter.") == ["```python\nx = 1\n\n\ny = 2\n```"]
    assert stream.finish() == "After."


def test_several_blocks_in_one_delta_come_out_in_order() -> None:
    """One delta may finish several blocks."""
    stream = MarkdownStream()
    assert stream.append("# Title\n\nOne.\n\n\nTwo.\n\nThree") == ["# Title", "One.", "Two."]
    assert stream.finish() == "Three"


@given(st.lists(st.sampled_from(["a", " ", "\n", "\n\n", "```", "~~~", "- ", "b c", "x\n"]), max_size=40), st.data())
def test_the_blocks_and_the_rest_hold_all_the_text_however_it_is_cut(pieces: list[str], data: st.DataObject) -> None:
    """Whatever the deltas, the blocks are the same, and with the rest hold the text (but blank lines between)."""
    text = "".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    stream = MarkdownStream()
    blocks: list[str] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        blocks += stream.append(text[start:end])
    blocks.append(stream.finish())
    assert "".join(blocks).replace("\n", "") == text.replace("\n", "")
    assert all(block == block.strip("\n") for block in blocks)
    whole = MarkdownStream()
    assert [*whole.append(text), whole.finish()] == blocks  # the same blocks as from one delta
