"""A conversation's verdict in the sample view (issue #35): the transcript its judge saw, bounded in the page: every
message cut at TEXT_LIMIT, the earliest after the first left out past TRANSCRIPT_LIMIT with a note, the judged answer
always shown and marked, simulated-user turns marked."""

from __future__ import annotations

from speceval.analysis.rendering.samples.sample_record import TEXT_LIMIT, TRANSCRIPT_LIMIT, shown_transcript
from speceval.inputs.script import ChatMessage


def _conversation(turns: int, length: int) -> list[ChatMessage]:
    messages = []
    for turn in range(1, turns + 1):
        author = "simulated_user" if turn > 1 else None
        messages.append(ChatMessage(role="user", content=f"u{turn} " + "x" * length, author=author))
        messages.append(ChatMessage(role="assistant", content=f"a{turn} " + "y" * length))
    return messages


def test_a_short_transcript_is_shown_whole_with_its_roles_and_the_judged_turn() -> None:
    shown = shown_transcript(_conversation(3, 10), turn=3)
    assert [m["content"] for m in shown] == [m.content for m in _conversation(3, 10)]
    assert [m["role"] for m in shown] == [
        "user",
        "assistant",
        "simulated user",
        "assistant",
        "simulated user",
        "assistant",
    ]
    assert shown[-1]["judged"] == "turn 3" and all("judged" not in m for m in shown[:-1])
    assert all("judged" not in m for m in shown_transcript(_conversation(2, 10), turn=None))


def test_a_long_transcript_keeps_the_first_and_the_latest_messages_within_its_bound() -> None:
    messages = _conversation(20, 5_000)
    shown = shown_transcript(messages, turn=20)
    assert shown[0]["content"].startswith("u1 ") and shown[-1]["content"].startswith("a20 ")
    assert shown[-1]["judged"] == "turn 20"
    assert shown[1]["role"] == "note" and "earlier message(s) not shown" in shown[1]["content"]
    left_out = int(shown[1]["content"].split()[1])
    assert left_out + len(shown) - 1 == len(messages)  # every message is shown or counted in the note
    texts = [m["content"] for m in shown if m["role"] != "note"]
    assert all(len(text) <= TEXT_LIMIT + 80 for text in texts)  # (the cut's note is under 80 characters)
    assert sum(len(text) for text in texts[1:]) <= TRANSCRIPT_LIMIT + 2 * 80


def test_a_later_turn_read_back_alone_is_not_taken_for_a_conversation_without_its_first_turns(tmp_path) -> None:
    # The sample view reads back the few verdicts it shows, at their offsets: a third turn without turns 1 and 2 is
    # a part of a checked file, not a conversation that skipped turns (the whole file was checked when folded).
    import json

    from speceval.analysis.reading.load import walk
    from speceval.analysis.reading.rows import Found
    from speceval.analysis.reading.verdict_reader import VerdictReader

    results = tmp_path / "judge_j" / "m" / "results"
    results.mkdir(parents=True)
    entries = []
    for index in range(3):
        messages = []
        for turn in (1, 2, 3):
            messages += [{"role": "user", "content": f"q{index}.{turn}"}, {"role": "assistant", "content": f"a{turn}"}]
            entries.append(
                {
                    "input": f"q{index}.1",
                    "output": f"a{turn}",
                    "compliant": turn != 3,
                    "outcome": "judged",
                    "original_index": index,
                    "turn": turn,
                    "conversation": list(messages),
                }
            )
    metadata = {
        "model": "m",
        "judge": "j",
        "spec": "s",
        "statement_id": "st0",
        "prompt_version": "p",
        "mode": "binary",
        "batch_ids": ["b"],
        "candidate_dir": str(tmp_path / "none"),
        "scope": "turn",
    }
    file = results / "st0.json"
    file.write_text(json.dumps({"schema_version": 1, "metadata": metadata, "results": entries}))
    [(_, rows, offsets)] = [(f, list(r), o) for f, r, o in walk([tmp_path], Found(), keep=False)]
    assert len(rows) == 9 and offsets is not None
    [row] = VerdictReader().at_offsets(file, [offsets[8]])  # the third turn of the last conversation, alone
    assert (row.turn, row.compliant, row.output) == (3, False, "a3")
    assert VerdictReader().at_positions(file, [5])[5].turn == 3
