"""Per-key request limits: one :class:`~ragstrata.ratelimit.TokenBucket` per key, ``rate``
tokens per second refilling a bucket of ``burst``.

Each request takes one token; a request that finds the bucket empty is refused with the seconds
until the next token (the ``Retry-After`` of the 429 response). Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ragstrata.ratelimit import TokenBucket


class KeyRateLimiter:
    """Token bucket per key: ``rate`` > 0 tokens/second, ``burst`` >= 1 tokens at most.

    ``clock`` returns seconds (monotonic); tests pass a fake one. Raises ValueError for a
    non-positive rate or a burst under 1.
    """

    def __init__(
        self, *, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate={rate} must be > 0 and burst={burst} >= 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: returns 0.0 when granted, else the seconds to wait
        before one is available (nothing is taken then)."""
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = TokenBucket(self.burst, self.rate, clock=self._clock)
            wait = bucket.wait_time(1.0)
            if wait <= 0.0:
                bucket.take(1.0)
            return wait
