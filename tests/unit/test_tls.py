"""The TLS contexts speceval hands the SDKs' clients: one per process (a context per client cost each
adapter 30-100 ms of CPU apiece), and verifying exactly as the SDK's own default would."""

from __future__ import annotations

import ssl

import certifi
import pytest

from speceval.wire.tls import genai_tls_options


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The arguments of every `ssl.create_default_context` call (each loads a certificate bundle) from here on,
    with `SSL_CERT_FILE` set as on this machine (the case where every SDK would build one per client)."""
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    calls: list[object] = []
    real = ssl.create_default_context

    def counting(*args: object, **kwargs: object) -> ssl.SSLContext:
        calls.append(args or kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    return calls


def test_every_client_gets_the_same_verifying_context_from_ssl_cert_file(monkeypatch, tmp_path):
    bundle = tmp_path / "ca.pem"
    bundle.write_text(certifi.contents())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first, second = genai_tls_options(), genai_tls_options()
    contexts = [first["client_args"]["verify"], first["async_client_args"]["verify"], first["async_client_args"]["ssl"]]
    assert all(c is contexts[0] for c in contexts) and second["client_args"]["verify"] is contexts[0]
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname
    assert contexts[0].get_ca_certs()  # the bundle was loaded


def test_without_ssl_cert_file_the_httpx_client_keeps_the_sdks_own_default(monkeypatch):
    """The SDK's httpx2 backend then trusts the system's store, not certifi's: only aiohttp's and websockets'
    context (certifi's bundle in the SDK too) is shared."""
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    options = genai_tls_options()
    assert set(options) == {"async_client_args"} and set(options["async_client_args"]) == {"ssl"}
    shared = options["async_client_args"]["ssl"]
    assert shared is genai_tls_options()["async_client_args"]["ssl"]
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname and shared.get_ca_certs()


def test_three_gemini_adapters_load_a_certificate_bundle_at_most_once(built):
    """Before, each adapter's client built three contexts (httpx, aiohttp, websockets): nine bundle loads."""
    from speceval.providers.gemini_batch import GeminiBatchedModel
    from tests.conftest import TEST_KEY

    for _ in range(3):
        GeminiBatchedModel("gemini-2.5-flash", api_key=TEST_KEY, base_url="http://127.0.0.1:9")
    assert len(built) <= 1, built


def test_three_vertex_adapters_load_a_certificate_bundle_at_most_once(built):
    """The Vertex adapter's genai client too (it built its three contexts per adapter until 2026-11-29: 2 s of the
    inner test loop's CPU)."""
    from google.oauth2.credentials import Credentials

    from speceval.providers.vertex_batch import VertexBatchedModel
    from speceval.wire.params import GenerationParams

    for _ in range(3):
        VertexBatchedModel(
            "gemini-2.5-flash",
            GenerationParams(),
            base_url="http://127.0.0.1:9",
            project="p",
            location="us-central1",
            input_bucket="gs://in",
            output_bucket="gs://out",
            credentials=Credentials(token="test-token-not-a-secret"),
        )
    assert len(built) <= 1, built


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_openai_and_anthropic_adapters_share_their_http_librarys_default_context(built, provider):
    """Each adapter's SDK client used to build its own (SSL_CERT_FILE's bundle, or the system's store): now the
    first builds it and the rest reuse it; a test that it verifies as the SDK's own default would."""
    from speceval.providers.anthropic_batch import AnthropicBatchedModel
    from speceval.providers.openai_batch import OpenAIBatchedModel
    from tests.conftest import TEST_KEY

    cls, model = (
        (OpenAIBatchedModel, "gpt-4.1-2025-04-14")
        if provider == "openai"
        else (AnthropicBatchedModel, "claude-haiku-4-5-20251001")
    )
    adapters = [cls(model, api_key=TEST_KEY, base_url="http://127.0.0.1:9") for _ in range(3)]
    assert len(built) <= 1, built
    http = [adapter._client._client for adapter in adapters]  # the SDK client's HTTP client
    contexts = {id(h._transport._pool._ssl_context) for h in http}
    assert len(contexts) == 1 and all(h.follow_redirects for h in http)
    context = http[0]._transport._pool._ssl_context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname and context.get_ca_certs()
