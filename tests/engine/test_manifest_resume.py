"""A resumed run's `run.json`: the one way every pipeline records a resume (`RunManifest.resumed`)."""

from speceval.batch.manifest import RunManifest, current_command


def test_a_resume_records_its_command_engine_and_running_and_keeps_every_other_setting(tmp_path):
    RunManifest(
        kind="generation",
        command=["speceval", "generate", "--first-time"],
        spec_name="spec",
        spec_path="spec.md",
        spec_sha256="0",
        inputs_path="inputs",
        inputs_sha256="0",
        model_name="gpt-4.1-mini",
        provider="openai",
        parameters={"engine": {"max_attempts": 3}, "requests": 40},
        status="stopped",
    ).save(tmp_path)

    manifest = RunManifest.resumed(tmp_path, {"max_attempts": 5})

    assert manifest.command == current_command()
    assert manifest.parameters == {"engine": {"max_attempts": 5}, "requests": 40}
    assert manifest.status == "running"
    assert (manifest.kind, manifest.model_name, manifest.provider) == ("generation", "gpt-4.1-mini", "openai")
    # Nothing is written until the caller saves it: the run directory still says how the run stopped.
    assert RunManifest.load(tmp_path).status == "stopped"
