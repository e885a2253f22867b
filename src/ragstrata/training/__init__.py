"""Training recipes for the models ragstrata ships (run by the CLI and bench, never at query
time): :mod:`ragstrata.training.reranker` trains and exports the cross-encoder reranker
(:mod:`~ragstrata.training.pairs` mines its training groups, :mod:`~ragstrata.training.export`
writes the int8 ONNX package; ``reranker`` uses both, neither imports it or the other).

They drive the engine (:class:`~ragstrata.pipeline.Ragstrata`) to mine training data, so they
sit above it; the runtime stages never import them.
"""
