"""Verdicts as flat tables and the original SpecEval's files (`speceval export`)."""
