"""Conformance vectors: the per-rule catalogue, the exported corpus, and replaying it against an
adapter (specs/vectors.md)."""
