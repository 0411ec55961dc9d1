"""`m1 run` ends by saying what it built, trained and reused, and where its run is in the Prefect UI."""

from __future__ import annotations

from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL, temporary_settings

from flows.commands.pipeline import this_run, ui_hint

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


def result(judge_trained, general="reused", stages=(("reasoning", True), ("general", True))):
    subflows = [
        {"dataset": "r-curated@v1", "this run": "reused"},
        {"dataset": "r-general@v1", "this run": general},
    ]
    return {
        "subflows": subflows,
        "stages": [{"stage": name, "reused": reused} for name, reused in stages],
        "judge_trained": judge_trained,
    }


def test_the_summary_counts_the_judge_apart_from_the_general_items():
    # the judge retrained (its settings changed), its general items reused: the items were not built
    retrained = this_run(result(True, stages=(("reasoning", True), ("general", False))))
    assert retrained == "this run: built no dataset; trained the judge, general; 3 things reused"
    assert (
        this_run(result(False))
        == "this run: nothing built or trained (5 things reused: their inputs are unchanged)"
    )
    # a judge at M1_GENRM_URL, or none: not a thing of this run's
    assert (
        this_run(result(None))
        == "this run: nothing built or trained (4 things reused: their inputs are unchanged)"
    )
    built = this_run(result(False, general="built"))
    assert built == "this run: built r-general@v1; trained no stage; 4 things reused"
