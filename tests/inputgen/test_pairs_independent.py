"""`speceval inputs --pair A B` and `--pairs FILE` (issue 38, statements in tension) against the independent batch
servers: every generator and rater request of a pair quotes both statements; every kept input was rated at or above
the threshold in such a request and is written into both statements' files, the pair recorded in each file's
metadata; a malformed pairs file or an unknown statement is refused before anything is sent."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.inputgen.test_inputs_independent import (
    STATEMENTS,
    THRESHOLD,
    N,
    _args,
    _inputs,
    _rating_of,
    _run_dir,
    servers,  # noqa: F401  (the fixture)
    write_spec,
)

PROPOSED = re.compile(r"<<<BEGIN proposed_input (\w+)>>>\n(.*?)\n<<<END", re.S)


def _text(prompt: object) -> str:
    return prompt if isinstance(prompt, str) else "".join(block["text"] for block in prompt)  # type: ignore[union-attr]


def _quotes_both(prompt: str) -> frozenset[str]:
    """The statement ids a prompt names, each with its statement's text quoted (asserted)."""
    ids = re.findall(r"^Statement id: (\S+)$", prompt, re.M)
    for statement in ids:
        assert f"topic {STATEMENTS.index(statement)} with care" in prompt, statement
    return frozenset(ids)


def test_pair_requests_quote_both_statements_and_kept_inputs_name_both(tmp_path: Path, servers) -> None:  # noqa: F811
    env, openai_server, anthropic_server, generator, rater = servers
    spec = write_spec(tmp_path / "spec.jsonl")
    pairs_file = tmp_path / "pairs.txt"
    pairs_file.write_text("# statements in tension\n\nrule_2, rule_3\n", encoding="utf-8")
    done = _inputs([*_args(spec, tmp_path / "out"), "--pair", "rule_1", "rule_0", "--pairs", str(pairs_file)], env)
    assert done.returncode == 0, done.stderr
    run_dir = _run_dir(tmp_path / "out")
    pairs = {frozenset(("rule_1", "rule_0")), frozenset(("rule_2", "rule_3"))}

    # Every generator request is a pair's, and quotes both of its statements (no statement asked alone).
    assert generator.bodies
    asked = [_quotes_both(body["messages"][-1]["content"]) for body in generator.bodies]
    assert set(asked) == pairs and all(
        body["messages"][-1]["content"].startswith("speceval prompt: input_generator_pair_v1")
        for body in generator.bodies
    )
    # Every rating request quotes both statements of its pair; what each pair's proposals were rated.
    rated: dict[frozenset[str], dict[str, int]] = {}
    for params in rater.params:
        prompt = _text(params["messages"][-1]["content"])
        assert prompt.startswith("speceval prompt: input_rater_pair_v1")
        text = PROPOSED.search(prompt).group(2)  # type: ignore[union-attr]
        rated.setdefault(_quotes_both(prompt), {})[text] = _rating_of(text)

    # Each pair's kept inputs: in both statements' files, at the positions the metadata records, each rated at or
    # above the threshold in a request quoting both statements.
    files = {
        s: json.loads((run_dir / "inputs" / f"{s}.json").read_text(encoding="utf-8"))
        for s in ("rule_0", "rule_1", "rule_2", "rule_3")
    }
    assert not (run_dir / "inputs" / "rule_4.json").exists()  # not in any pair, not asked for alone
    for pair in pairs:
        kept = []
        for statement in sorted(pair):
            [record] = files[statement]["metadata"]["pairs"]
            assert set(record["pair"]) == pair and record["other"] == next(iter(pair - {statement}))
            kept.append([files[statement]["inputs"][i] for i in record["indices"]])
        assert kept[0] == kept[1] and 0 < len(kept[0]) <= N
        assert all(text in rated[pair] and rated[pair][text] >= THRESHOLD for text in kept[0])
        assert len(set(kept[0])) == len(kept[0])
    assert files["rule_1"]["metadata"]["pairs"][0]["pair"] == ["rule_1", "rule_0"]  # the order asked
    candidates = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
    assert {c["statement_id"] for c in candidates} == {"rule_1+rule_0", "rule_2+rule_3"}


def test_bad_pairs_are_refused_before_anything_is_sent(tmp_path: Path, servers) -> None:  # noqa: F811
    env, openai_server, anthropic_server, generator, rater = servers
    spec = write_spec(tmp_path / "spec.jsonl")
    pairs_file = tmp_path / "pairs.txt"
    pairs_file.write_text("rule_0 rule_1\nrule_2 rule_3 rule_4\n", encoding="utf-8")
    done = _inputs([*_args(spec, tmp_path / "out"), "--pairs", str(pairs_file)], env)
    assert done.returncode == 2 and "line 2" in done.stderr and "two statement ids" in done.stderr, done.stderr
    done = _inputs([*_args(spec, tmp_path / "out"), "--pair", "rule_0", "no_such_rule"], env)
    assert done.returncode == 2 and "'no_such_rule' not in the spec" in done.stderr, done.stderr
    done = _inputs([*_args(spec, tmp_path / "out"), "--pair", "rule_0", "rule_0"], env)
    assert done.returncode == 2 and "paired with itself" in done.stderr, done.stderr
    assert not generator.bodies and not rater.params and not openai_server.batches
    assert not (tmp_path / "out").exists()
