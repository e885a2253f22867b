"""PDF parsing (see :mod:`ragstrata.ingest.pdf.extract`)."""

from ragstrata.ingest.pdf.extract import parse_pdf

__all__ = ["parse_pdf"]
