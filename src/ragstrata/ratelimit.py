"""Token buckets (Turner 1986): the one rate-limiting primitive, shared by the service's per-key
request limits (:mod:`ragstrata.service.ratelimit`) and the OpenAI-compatible client's
requests/tokens per minute (:mod:`ragstrata.embed.openai_compat`). Pure bookkeeping on a
monotonic clock."""

from __future__ import annotations

from collections.abc import Callable

from ragstrata.errors import ConfigError


class TokenBucket:
    """Token bucket: holds at most ``capacity`` units, refilled at ``per_second``; starts full.

    :meth:`take` may drive the level below zero (an amount larger than the capacity is allowed
    once the bucket is full), so the long-run rate never exceeds ``per_second``. ``clock`` is a
    monotonic clock in seconds. Not thread-safe by itself: callers hold a lock.
    """

    def __init__(self, capacity: float, per_second: float, *, clock: Callable[[], float]) -> None:
        if capacity <= 0 or per_second <= 0:
            raise ConfigError(
                f"token bucket capacity={capacity} and rate={per_second}/s must be > 0"
            )
        self.capacity = float(capacity)
        self.per_second = float(per_second)
        self._clock = clock
        self._level = self.capacity
        self._stamp = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.capacity, self._level + (now - self._stamp) * self.per_second)
        self._stamp = now

    def wait_time(self, amount: float) -> float:
        """Seconds until ``min(amount, capacity)`` units are available (0 if they are now)."""
        self._refill()
        missing = min(amount, self.capacity) - self._level
        return max(0.0, missing / self.per_second)

    def take(self, amount: float) -> None:
        """Remove ``amount`` units now (the level may go negative)."""
        self._refill()
        self._level -= amount
