"""Provider adapters (one module per API shape) and the registry that picks one for a model name."""
