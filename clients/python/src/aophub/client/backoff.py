"""Waits between retries: doubling from a minimum to a maximum, each wait jittered."""

from __future__ import annotations

import random

__all__ = ["Backoff", "jitter"]


def jitter(delay: float) -> float:
    """A wait between half and all of ``delay``, so that clients cut off together do not return together."""
    return delay / 2 + random.random() * delay / 2


class Backoff:
    """The next wait of a retry loop: none for the first try, then ``minimum`` doubling up to ``maximum``.

    :meth:`reset` after a success starts over with an immediate try.
    """

    def __init__(self, minimum: float, maximum: float) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self._delay = 0.0

    def next(self) -> float:
        """The jittered wait before the next try (0 for the first one after a reset)."""
        delay = self._delay
        self._delay = min(max(delay * 2, self.minimum), self.maximum)
        return jitter(delay) if delay else 0.0

    def reset(self) -> None:
        self._delay = 0.0
