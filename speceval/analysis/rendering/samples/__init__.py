"""The browsable sample view: verdicts and comparisons read back from their results files."""
