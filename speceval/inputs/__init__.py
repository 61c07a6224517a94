"""What a run is asked: a pre-generated inputs directory (`directory`) and the conversation inputs it may hold
(`script`: scripted turns, a fixed history, and the transcript types results files keep)."""

from speceval.inputs.directory import InputSet, StatementInputs, load_inputs

__all__ = ["InputSet", "StatementInputs", "load_inputs"]
