"""A readers-writer lock with writer preference and timeouts (threads).

Many searches may read a collection at once; an ingest or delete writes alone. A waiting writer
blocks new readers, so a steady stream of searches cannot starve an ingest.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator


class LockTimeout(TimeoutError):
    """The lock was not obtained in time."""


class RWLock:
    """``read(timeout)`` / ``write(timeout)`` context managers; :class:`LockTimeout` when the
    lock is not obtained within ``timeout`` seconds (``None`` waits forever). Not reentrant."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextlib.contextmanager
    def read(self, timeout: float | None = None) -> Iterator[None]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._writer or self._waiting_writers:
                if not self._cond.wait(_left(deadline)):
                    raise LockTimeout("timed out waiting for a read lock")
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def write(self, timeout: float | None = None) -> Iterator[None]:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._waiting_writers += 1
            try:
                while self._writer or self._readers:
                    if not self._cond.wait(_left(deadline)):
                        raise LockTimeout("timed out waiting for the write lock")
            finally:
                self._waiting_writers -= 1
                if not self._waiting_writers:
                    self._cond.notify_all()  # readers held back by this writer may go on
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


def _left(deadline: float | None) -> float | None:
    if deadline is None:
        return None
    return max(0.0, deadline - time.monotonic())
