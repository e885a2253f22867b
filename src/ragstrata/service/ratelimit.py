"""Request limits built on :class:`~ragstrata.ratelimit.TokenBucket`, one bucket per key:

* :class:`KeyRateLimiter`: every request of an API key takes one token (``rate`` tokens per
  second refilling a bucket of ``burst``); a request that finds the bucket empty is refused
  with the seconds until the next token (the ``Retry-After`` of the 429 response);
* :class:`FailureBudget`: only *failures* take a token (wrong secrets, per key id and per client
  address); while a bucket is empty, further attempts are refused before any work is done.

Thread-safe.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ragstrata.ratelimit import TokenBucket


class _PerKeyBuckets:
    """A :class:`TokenBucket` of ``burst`` tokens refilled at ``rate`` per second for each key,
    made on first use under one lock; with ``max_keys``, full buckets (then the oldest half)
    are forgotten before a new one would pass it. Raises ValueError for a non-positive rate or
    a burst under 1."""

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int | None = None,
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate={rate} must be > 0 and burst={burst} >= 1")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._max_keys = max_keys
        self._buckets: dict[str, TokenBucket] = {}
        self._lock = threading.Lock()

    def _bucket(self, key: str) -> TokenBucket:
        """``key``'s bucket, made when missing; the caller holds ``_lock``."""
        bucket = self._buckets.get(key)
        if bucket is None:
            if self._max_keys is not None and len(self._buckets) >= self._max_keys:
                self._forget_full()
            bucket = self._buckets[key] = TokenBucket(self.burst, self.rate, clock=self._clock)
        return bucket

    def _forget_full(self) -> None:
        """Drop the buckets that refilled (no recent use); if none did, the oldest half."""
        full = [k for k, b in self._buckets.items() if b.wait_time(self.burst) == 0.0]
        for key in full or list(self._buckets)[: len(self._buckets) // 2]:
            del self._buckets[key]


class KeyRateLimiter(_PerKeyBuckets):
    """Token bucket per key: ``rate`` > 0 tokens/second, ``burst`` >= 1 tokens at most.

    ``clock`` returns seconds (monotonic); tests pass a fake one. Raises ValueError for a
    non-positive rate or a burst under 1.
    """

    def __init__(
        self, *, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(rate=rate, burst=burst, clock=clock)

    def acquire(self, key: str) -> float:
        """Take one token for ``key``: returns 0.0 when granted, else the seconds to wait
        before one is available (nothing is taken then)."""
        with self._lock:
            bucket = self._bucket(key)
            wait = bucket.wait_time(1.0)
            if wait <= 0.0:
                bucket.take(1.0)
            return wait


class FailureBudget(_PerKeyBuckets):
    """Failed attempts per key (a key id, a client address): each failure takes one token of a
    bucket of ``burst`` refilled at ``rate`` per second; :meth:`blocked` says how long an
    attempt must wait once the bucket is empty. Keys are independent: one key's failures never
    block another. At most ``max_keys`` buckets are kept (full ones are forgotten first), so a
    flood from many addresses cannot grow memory without bound.

    Raises ValueError for a non-positive rate or a burst under 1.
    """

    def __init__(
        self,
        *,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        max_keys: int = 100_000,
    ) -> None:
        super().__init__(rate=rate, burst=burst, clock=clock, max_keys=max_keys)

    def blocked(self, key: str) -> float:
        """Seconds before ``key`` may try again (0.0: it may now). Takes nothing."""
        with self._lock:
            bucket = self._buckets.get(key)
            return 0.0 if bucket is None else bucket.wait_time(1.0)

    def failed_recently(self, key: str) -> bool:
        """Whether ``key`` has failures its bucket has not yet refilled."""
        with self._lock:
            bucket = self._buckets.get(key)
            return bucket is not None and bucket.wait_time(float(self.burst)) > 0.0

    def fail(self, key: str) -> None:
        """Record one failure of ``key``."""
        with self._lock:
            self._bucket(key).take(1.0)
