"""The batch engine: one mechanism for chunking, submitting, polling, collecting and retrying, for every provider."""
