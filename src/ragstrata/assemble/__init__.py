"""ragstrata.assemble stage."""
