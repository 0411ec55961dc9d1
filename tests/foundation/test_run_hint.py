"""`m1 run` ends by saying where its run is in the Prefect UI."""

from __future__ import annotations

from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL, temporary_settings

from flows.commands.pipeline import ui_hint

RUN = "6e7a7d16-e39c-4eea-922d-8598cc81ae28"


def test_without_a_server_the_hint_starts_one_over_the_same_database():
    with temporary_settings(restore_defaults={PREFECT_API_URL, PREFECT_UI_URL}):
        assert ui_hint(RUN, "m1 tiny") == (
            f"Prefect UI: start it with `m1 ui`, then open http://127.0.0.1:4200/runs/flow-run/{RUN}: "
            "the run's subflows, and the report as artifact run-report-m1-tiny"
        )


def test_with_a_server_configured_the_hint_is_its_page():
    with temporary_settings({PREFECT_API_URL: "http://10.0.0.5:4300/api"}):
        assert ui_hint(RUN, "r").startswith(f"Prefect UI: open http://10.0.0.5:4300/runs/flow-run/{RUN}: ")
