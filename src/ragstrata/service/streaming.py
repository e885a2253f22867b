"""A blocking event generator relayed to async code, item by item, as it produces them.

An answer stream runs the pipeline's generator (retrieval, then LLM tokens) under the
collection's read lock. :class:`ThreadedEvents` runs it in a thread of its own and hands each
event to the event loop as soon as it exists, so:

- a client sees each token when the generator writes it;
- the generator runs at its own pace, not the client's: the read lock is held for the
  generation only, and a slow reader cannot keep an ingest (and, behind the waiting writer,
  every other reader) waiting;
- :meth:`ThreadedEvents.close` (a client that went away) stops the generator at its next
  event and closes it, which releases the lock and the LLM request at once, instead of
  whenever the garbage collector finds the suspended generator.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator
from typing import Generic, Literal, TypeVar, cast

T = TypeVar("T")

_Kind = Literal["item", "end", "error"]


class StreamStopped(RuntimeError):
    """The producer thread ended without finishing its generator (never expected)."""


class ThreadedEvents(Generic[T]):
    """``async for event in ThreadedEvents(generator)``: ``generator``'s items in order, then
    the end; an exception raised by ``generator`` is raised by the iteration at that point.

    Construct it inside a running event loop; the producer thread starts at once. Call
    :meth:`close` when the consumer stops early (idempotent, never blocks).
    """

    def __init__(self, events: Generator[T, None, None], *, name: str = "ragstrata-ask") -> None:
        self._events = events
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[tuple[_Kind, T | BaseException | None]] = asyncio.Queue()
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(target=self._produce, name=name, daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        last: tuple[_Kind, T | BaseException | None] = (
            "error",
            StreamStopped("the answer stream stopped unexpectedly"),
        )
        try:
            for event in self._events:
                if self._stop.is_set():
                    return
                self._post(("item", event))
            last = ("end", None)
        except Exception as exc:  # handed to the consumer, which raises it
            last = ("error", exc)
        finally:
            self._events.close()  # a stopped generator releases its lock now
            self._post(last)

    def _post(self, message: tuple[_Kind, T | BaseException | None]) -> None:
        if self._stop.is_set():
            return
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, message)
        except RuntimeError:  # the event loop is closed: nobody listens any more
            self._stop.set()

    def __aiter__(self) -> ThreadedEvents[T]:
        return self

    async def __anext__(self) -> T:
        if self._finished:
            raise StopAsyncIteration
        kind, value = await self._queue.get()
        if kind == "item":
            return cast(T, value)
        self._finished = True
        if isinstance(value, BaseException):
            raise value
        raise StopAsyncIteration

    def close(self) -> None:
        """Stop the generator at its next event (the consumer is gone); idempotent."""
        self._finished = True
        self._stop.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the producer thread to end (tests); whether it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()
