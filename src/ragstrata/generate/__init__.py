"""ragstrata.generate stage."""
