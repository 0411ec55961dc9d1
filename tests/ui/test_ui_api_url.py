"""`m1 ui --port P` serves a UI that calls the API on P, not Prefect's default 4200."""

from prefect.settings import PREFECT_UI_API_URL, temporary_settings

from flows.deploy import _ui_api_url


def test_ui_calls_the_port_the_server_listens_on():
    assert _ui_api_url("127.0.0.1", 4311) == "http://127.0.0.1:4311/api"
    assert _ui_api_url("::1", 4311) == "http://[::1]:4311/api"


def test_wildcard_host_is_called_on_loopback():
    # A browser cannot call 0.0.0.0; on this machine the server answers on loopback.
    assert _ui_api_url("0.0.0.0", 4311) == "http://127.0.0.1:4311/api"


def test_configured_ui_api_url_is_kept():
    # A reverse proxy in front of the server is what PREFECT_UI_API_URL exists for.
    with temporary_settings(updates={PREFECT_UI_API_URL: "https://prefect.example.org/api"}):
        assert _ui_api_url("127.0.0.1", 4311) is None
