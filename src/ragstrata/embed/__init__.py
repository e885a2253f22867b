"""ragstrata.embed stage."""
