"""Runnable examples: thin scripts over the speceval library (`python -m batched_examples.<script>`)."""
