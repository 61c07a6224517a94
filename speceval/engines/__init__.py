"""The one room where models are built and their engine chosen: batch API, realtime calls or Ray Data (`factory`);
a given model checked against a pipeline's config, and the judge's and simulated user's models (`models`); the
endpoint keys of a model without a batch API (`endpoints`)."""
