"""Use cases: one function per use case, one transaction each."""
