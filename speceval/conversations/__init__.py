"""Conversations in generation (docs/generation.md#conversations): scripted inputs, sent one round per user turn
through the engine.

- `script`: what an inputs file may say (`turns`, `messages`), validated into `Conversation`s;
- `rounds`: which conversations each round holds, and the request of each (the transcript so far);
- `results`: the final record of each conversation, assembled from the rounds' results on disk;
- `runner`: drives the rounds of one generation run to the end, resumably.
"""
