"""Per-key token buckets (Turner 1986): ``rate`` tokens per second refill a bucket of ``burst``.

Each request takes one token; a request that finds the bucket empty is refused with the seconds
until the next token (the ``Retry-After`` of the 429 response). Pure bookkeeping on a monotonic
clock, thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    """Token bucket per key: ``rate`` > 0 tokens/second, ``burst`` >= 1 tokens at most.

    ``clock`` returns seconds (monotonic); tests pass a fake one.
    """

    def __init__(
        self, *, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate={rate} must be > 0 and burst={burst} >= 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill)
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: returns 0.0 when granted, else the seconds to wait
        before one is available (nothing is taken then)."""
        now = self._clock()
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate
