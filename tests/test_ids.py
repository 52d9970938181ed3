"""Hub ids: format, uniqueness, time order, and no shared sequence across a fork."""

from __future__ import annotations

import os
import re
import time

from aophub.ids import new_id

_ID = re.compile(r"^(?P<prefix>[a-z]+)_(?P<millis>[0-9a-f]+)(?P<random>[0-9a-f]{16})$")


def test_format_is_prefix_milliseconds_and_64_random_bits() -> None:
    """An id is the prefix, the creation time in hex milliseconds and 16 hex digits."""
    before = time.time_ns() // 1_000_000
    match = _ID.match(new_id("ses"))
    after = time.time_ns() // 1_000_000
    assert match is not None
    assert match["prefix"] == "ses"
    assert before <= int(match["millis"], 16) <= after


def test_ids_are_unique() -> None:
    """A hundred thousand ids made in a burst (many in the same millisecond) never repeat."""
    ids = [new_id("evt") for _ in range(100_000)]
    assert len(set(ids)) == len(ids)


def test_ids_are_roughly_time_ordered() -> None:
    """An id made a millisecond later sorts after an earlier one."""
    first = new_id("trn")
    time.sleep(0.002)
    assert new_id("trn") > first


def test_forked_child_does_not_repeat_the_parents_sequence() -> None:
    """Parent and child draw different random parts after a fork."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read)
        os.write(write, "".join(new_id("x")[-16:] for _ in range(8)).encode())
        os._exit(0)
    os.close(write)
    parent = "".join(new_id("x")[-16:] for _ in range(8))
    with os.fdopen(read, "rb") as pipe:
        child = pipe.read().decode()
    os.waitpid(pid, 0)
    assert len(child) == len(parent) == 128
    assert child != parent
