"""Every key of every judge config the original SpecEval ships is accepted, with its original meaning.

Each config is read unedited from `original_configs/` with a tree built as it expects; for every key in the
file a check below says what the key must have set. A key without a check fails the test, so a key the
original used cannot be accepted and silently ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from speceval.cli.judge import build_parser, compliance_main
from speceval.cli.judge_command import resolve_settings
from speceval.pipelines.judge_config import RankingFileConfig, load_config, yaml_api_key
from speceval.redaction import redact
from tests.pipelines.original_tree import CONFIGS, build_tree, config_paths

Resolved = tuple[Any, list[Any], Any]  # settings, candidates, file config
Check = Callable[[Resolved, Any], bool]

CHECKS: dict[str, Check] = {
    "spec_name": lambda r, v: r[0].spec_name == v,
    "spec_path": lambda r, v: r[0].spec_path == Path(v),
    # Listed as …/results, named by the path (…/<model>/<stamp>/results → <model>) or by their run.json.
    "candidate_generation_dirs": lambda r, v: (
        [(c.results_dir, c.name) for c in r[1]] == [(Path(d), Path(d).parent.parent.name) for d in v]
    ),
    "compliance_judge_model_name": lambda r, v: r[0].judge_model == v,
    "ranking_judge_model_name": lambda r, v: r[0].judge_model == v,
    # google with buckets is Vertex AI, as in the original; otherwise the org is the provider.
    "compliance_judge_org": lambda r, v: r[0].judge_org == v,
    "ranking_judge_org": lambda r, v: r[0].judge_org == ("vertex" if r[2].input_bucket else v),
    "output_dir_base": lambda r, v: r[0].output_dir_base == Path(v),
    "batch_size": lambda r, v: r[0].engine.batch_size == v,
    "temperature": lambda r, v: r[0].params.temperature == v,
    "verbose": lambda r, v: r[2].verbose is v,
    "input_bucket": lambda r, v: r[0].vertex["input_bucket"] == v,
    "output_bucket": lambda r, v: r[0].vertex["output_bucket"] == v,
    # Vertex AI authenticates with Google Cloud credentials: the placeholder key is read but sent nowhere.
    "google_api_key": lambda r, v: r[2].google_api_key == v and yaml_api_key(r[2], r[0].judge_org) == {},
}


def resolve(config: Path, kind: str, *flags: str) -> Resolved:
    args = build_parser(kind).parse_args(["--config-file", str(config), *flags])  # type: ignore[arg-type]
    return resolve_settings(args, kind)  # type: ignore[arg-type]


@pytest.mark.parametrize("config", config_paths(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_key_of_every_shipped_config_keeps_its_meaning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    data = build_tree(tmp_path, config)
    kind = "compliance" if config.parent.name.startswith("binary_configs") else "ranking"
    resolved = resolve(config, kind)
    unchecked = sorted(set(data) - set(CHECKS))
    assert not unchecked, f"keys without a check: {unchecked}"
    wrong = [key for key, value in data.items() if not CHECKS[key](resolved, value)]
    assert not wrong, f"{config.name}: {wrong} not applied as the original did"


def test_all_shipped_configs_are_covered() -> None:
    assert len(config_paths("compliance")) == 10 and len(config_paths("ranking")) == 9


GOOGLE_SAMPLE = CONFIGS / "configs" / "sample_google_ranking_config.yaml"


def test_google_sample_config_is_vertex_ai_with_project_and_location_from_flags_yaml_or_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    build_tree(tmp_path, GOOGLE_SAMPLE)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "env-location")
    settings, _, file = resolve(GOOGLE_SAMPLE, "ranking")
    assert settings.judge_org == "vertex"
    assert settings.vertex == {
        "project": "env-project",
        "location": "env-location",
        "input_bucket": "gs://levanter-data/model_spec/",
        "output_bucket": "gs://levanter-data/model_spec/ranking_outputs",
    }
    # A YAML key beats the environment, a flag beats both.
    with_keys = tmp_path / "with_keys.yaml"
    with_keys.write_text(GOOGLE_SAMPLE.read_text() + "project: yaml-project\nlocation: yaml-location\n")
    settings, _, _ = resolve(with_keys, "ranking", "--location", "flag-location")
    assert (settings.vertex["project"], settings.vertex["location"]) == ("yaml-project", "flag-location")
    # The flags alone make the Gemini judge a Vertex one, as the original's --input-bucket/--output-bucket did.
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        GOOGLE_SAMPLE.read_text().replace("input_bucket", "# input_bucket").replace("output_bucket", "# output_bucket")
    )
    assert resolve(plain, "ranking")[0].judge_org == "google"
    flags = ("--input-bucket", "in", "--output-bucket", "out")
    assert resolve(plain, "ranking", *flags)[0].vertex == {
        "project": "env-project",
        "location": "env-location",
        "input_bucket": "in",
        "output_bucket": "out",
    }
    assert isinstance(file, RankingFileConfig) and file.google_api_key == "YOUR_GOOGLE_API_KEY_HERE"


def test_vertex_settings_with_another_provider_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = CONFIGS / "binary_configs" / "openai_spec_openai_judge.yaml"
    assert compliance_main(["--config-file", str(config), "--input-bucket", "b"]) == 2
    assert "apply to Vertex AI only" in capsys.readouterr().err


def test_api_key_in_yaml_is_used_for_the_run_redacted_and_warned_about_with_its_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-test-from-yaml-0123456789abcdef"
    path = tmp_path / "keys.yaml"
    path.write_text(
        f"ranking_judge_model_name: gpt-4.1\nopenai_api_key: {key}\nanthropic_api_key: sk-ant-x-123456789\n"
    )
    file = load_config(path, RankingFileConfig)
    assert redact(f"a message quoting {key}") == "a message quoting [REDACTED]"
    with caplog.at_level("WARNING"):
        assert yaml_api_key(file, "openai") == {"api_key": key}
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"{path}, line 2 holds an API key (openai_api_key)" in m for m in messages)
    assert any(f"{path}, line 3 holds anthropic_api_key, which the openai judge does not use" in m for m in messages)
    assert not any(key in m for m in messages)


def test_api_key_flags_of_the_original_are_refused_with_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert compliance_main(["--openai-api-key", "sk-test-flag-0123456789"]) == 2
    err = capsys.readouterr().err
    assert "set OPENAI_API_KEY in the environment" in err and "sk-test-flag-0123456789" not in err


def test_every_schema_key_is_documented() -> None:
    """The schema is the reference docs/migrating.md points to: every key says what it does."""
    for name, field in RankingFileConfig.model_fields.items():
        assert field.description, name
    assert set(yaml.safe_load(GOOGLE_SAMPLE.read_text())) <= set(RankingFileConfig.model_fields)
