"""Pipelines that compose batched models against spec files: generation, compliance judging, ranking."""
