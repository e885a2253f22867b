"""ragstrata.retrieve stage."""
