"""Results as pandas data frames, for notebooks and research scripts: `speceval.read_verdicts`, `read_answers`,
`read_rankings` and `report_tables`. Files are read a chunk of records at a time into typed columns, so a
million verdicts take the frame's own memory, not a Python object per verdict besides. pandas is the optional
extra `frames` (`pip install 'speceval[frames]'`)."""
