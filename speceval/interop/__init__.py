"""speceval's verdicts in other evaluation tools' formats: `inspect_log` writes them as Inspect AI eval logs (the
other direction, Inspect logs read as a candidate's answers, is `speceval.pipelines.inspect_logs`). `inspect_ai` is
an optional extra, imported only inside the bridge's functions."""
