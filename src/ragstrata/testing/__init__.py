"""Contract suites and fakes for ragstrata's stage Protocols."""
