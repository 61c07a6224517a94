"""What stage of a study a run is, by name: the report's setup and `speceval cost` say the same.

A conversation's own run folder holds its answers assembled from its rounds, and costs nothing itself: each round is
a run of its own (`kind: generation_round`), sent and paid there. Read as "generation" and "generation_round", the
assembled run sat at $0.0000 beside its rounds' cost (in the report's setup and in `speceval cost`'s totals), and
its answers were counted again in the rounds'. Files only: no provider is imported.
"""

from __future__ import annotations

from speceval.batch.manifest import RunManifest

ROUND_KIND = "generation_round"
"""The `kind` of a conversation round's run.json (each half of each round is a run of its own), as
`speceval.conversations.rounds` writes it (not imported from there: reading a run loads no engine)."""

ASSEMBLED = "generation (conversations, assembled from their rounds: sent and paid in the rounds)"
ROUNDS = "generation rounds (as sent, the simulated user's turns included)"
INPUTS_ROUNDS = "inputs (the generator's and the rater's rounds, as sent)"

KIND_STAGES = {ROUND_KIND: ROUNDS, "inputs": INPUTS_ROUNDS}
"""A run kind named otherwise, for its runs and its cost rows alike."""


def stage_of(manifest: RunManifest) -> str:
    """The stage of a run (a conversation's own folder, and its rounds, named for what they are)."""
    if manifest.kind in KIND_STAGES:
        return KIND_STAGES[manifest.kind]
    conversations = manifest.parameters.get("conversations")
    if manifest.kind == "generation" and isinstance(conversations, dict) and conversations.get("max_rounds", 1) > 1:
        return ASSEMBLED
    return manifest.kind
