"""Training recipes for the models ragstrata ships (run by the CLI and bench, never at query
time): :mod:`ragstrata.training.reranker` trains and exports the cross-encoder reranker.

They drive the engine (:class:`~ragstrata.pipeline.Ragstrata`) to mine training data, so they
sit above it; the runtime stages never import them.
"""
