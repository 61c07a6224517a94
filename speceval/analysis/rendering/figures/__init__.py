"""The report's figures as PNG bytes."""
