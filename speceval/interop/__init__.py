"""Bridges to other evaluation tools' formats: Inspect AI's eval logs, both ways (`inspect_log` writes speceval's
verdicts as logs, `inspect_answers` reads a log's samples as a candidate's answers). `inspect_ai` is an optional
extra, imported only here (`inspect_dependency`)."""
