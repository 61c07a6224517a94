"""Test inputs generated from a spec: a generator proposes inputs per statement, duplicates are dropped, a rater
scores each remaining one, the best are kept; rounds repeat for statements still short (see `pipeline`)."""
