"""Summary.md: the methods-ready summary and its sections."""
