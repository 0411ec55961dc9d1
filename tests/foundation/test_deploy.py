"""Deployments register against a real Prefect server with a parameter form and a schedule."""

import asyncio

from flows.config import PipelineConfig
from flows.deploy import deployments


def test_deployments_register_with_form_and_schedule(prefect_harness):
    from prefect.client.orchestration import get_client

    cfg = PipelineConfig(name="nightly")
    for d in deployments(cfg, cron="0 2 * * *"):
        d.apply()

    async def read():
        async with get_client() as client:
            return await client.read_deployment_by_name("m1-pipeline/m1-run")

    dep = asyncio.run(read())
    schema = dep.parameter_openapi_schema
    # The UI renders its form from this schema: the whole PipelineConfig, sections and all.
    config_schema = schema["definitions"]["PipelineConfig"]
    assert {"data", "curate", "model", "train", "eval"} <= set(config_schema["properties"])
    assert dep.parameters["config"]["name"] == "nightly"
    assert [s.schedule.cron for s in dep.schedules] == ["0 2 * * *"]

    stage = asyncio.run(_read_named("train-stage/m1-train-stage"))
    assert stage.parameters["stage"] and "stage" in stage.parameter_openapi_schema["properties"]
    for name in (
        "m1-logic-tasks/m1-synlogic",
        "m1-code-tasks/m1-code",
        "m1-swe/m1-swe",
        "genrm-general/m1-general",
        "m1-curate/m1-curate",
        "train-curriculum/m1-train-curriculum",
        "logic-calibration/m1-logic-calibration",
    ):
        assert asyncio.run(_read_named(name)).name == name.split("/")[1]


async def _read_named(name):
    from prefect.client.orchestration import get_client

    async with get_client() as client:
        return await client.read_deployment_by_name(name)
