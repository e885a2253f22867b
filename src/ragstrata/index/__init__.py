"""ragstrata.index stage."""
