"""Text tools every stage may use: BM25 analysis, token counting, sentence and code-fence spans,
language identification.

The floor under the stages: its modules import nothing from ragstrata but :mod:`ragstrata.errors`,
:mod:`ragstrata.types`, :mod:`ragstrata.paths` and each other.
"""
