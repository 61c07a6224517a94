"""The TLS context speceval hands google-genai's clients: one per process (a context per client cost each Gemini
adapter 30-100 ms of CPU apiece), and verifying exactly as the SDK's own default would."""

from __future__ import annotations

import ssl

import certifi

from speceval.wire.tls import genai_tls_options


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


def test_three_gemini_adapters_load_a_certificate_bundle_at_most_once(monkeypatch):
    """Before, each adapter's client built three contexts (httpx, aiohttp, websockets): nine bundle loads."""
    from speceval.providers.gemini_batch import GeminiBatchedModel
    from tests.conftest import TEST_KEY

    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    built: list[object] = []
    real = ssl.create_default_context

    def counting(*args: object, **kwargs: object) -> ssl.SSLContext:
        built.append(args or kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ssl, "create_default_context", counting)
    for _ in range(3):
        GeminiBatchedModel("gemini-2.5-flash", api_key=TEST_KEY, base_url="http://127.0.0.1:9")
    assert len(built) <= 1, built
