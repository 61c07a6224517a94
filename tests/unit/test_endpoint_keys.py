"""The YAML endpoint keys are the flags' settings: the same names and the same ranges, with no copy to drift."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from speceval.endpoint_keys import EndpointKeys
from speceval.raydata.settings import FLAG_FIELDS as RAY_KEYS
from speceval.raydata.settings import RaySettings
from speceval.realtime.settings import FLAG_FIELDS as REALTIME_FIELDS
from speceval.realtime.settings import RealtimeSettings


def test_every_flag_setting_is_a_key_and_every_key_a_flag_setting() -> None:
    # `tier` is `--tier`, which picks the path (batch, flex, standard) rather than setting one of it.
    assert set(EndpointKeys.model_fields) == set(REALTIME_FIELDS) | set(RAY_KEYS) | {"tier"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("rpm", 0),
        ("tpm", -1),
        ("max_concurrency", 0),
        ("rate_period_seconds", 0),
        ("retry_initial_delay", 0),
        ("retry_backoff_factor", 0.5),
        ("request_timeout", 0),
        ("tensor_parallel_size", 0),
        ("replicas", 0),
    ],
)
def test_a_value_out_of_range_gets_the_same_message_as_a_key_and_as_a_setting(key: str, value: float) -> None:
    with pytest.raises(ValidationError) as as_key:
        EndpointKeys.model_validate({key: value})
    settings = [(RealtimeSettings, REALTIME_FIELDS[key])] if key in REALTIME_FIELDS else []
    settings += [(RaySettings, key)] if key in RAY_KEYS else []
    assert settings
    for schema, field in settings:
        with pytest.raises(ValidationError) as as_setting:
            schema.model_validate({field: value})
        assert as_setting.value.errors()[0]["msg"] == as_key.value.errors()[0]["msg"]
    assert "must be" in as_key.value.errors()[0]["msg"]


def test_a_key_pasted_where_its_variable_name_belongs_is_refused() -> None:
    with pytest.raises(ValidationError):
        EndpointKeys(api_key_env="sk-test-0123456789")
    assert EndpointKeys(api_key_env="VLLM_API_KEY").endpoint_keys() == {"api_key_env": "VLLM_API_KEY"}
