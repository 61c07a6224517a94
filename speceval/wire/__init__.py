"""The wire layer: what one request and one answer look like for each provider, whatever carries them.

A request's content (`prompt.Prompt`), the run's sampling settings (`params.GenerationParams`), and one module per
API shape that builds the request body and reads the answer's text and token counts: `openai` (also every
OpenAI-compatible server), `anthropic`, `gemini` (also Vertex AI). The batch adapters, the realtime clients, the
Ray payloads and the exchange files all call these, so a field cannot be sent on one path and not on another.

This package imports only the foundation modules (errors, redaction, ...), pydantic and the standard library;
the engines (batch, realtime, Ray) import it, never the other way round.
"""
