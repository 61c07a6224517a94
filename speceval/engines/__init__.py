"""The one place a model and its engine are chosen: batch API, realtime calls or Ray Data (`factory`)."""
