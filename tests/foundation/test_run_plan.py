"""`m1 run --plan` on a fresh store (flows/run_plan.py): every dataset is to be built because it never
was, a switched-off producer is skipped, and what comes after a rebuilt dataset is "maybe" (only building
it tells whether its content changes); nothing is written. The slow path over a whole run and a changed
setting is tests/foundation/test_orders.py."""

from __future__ import annotations

from flows.config import load_config
from flows.run_plan import run_plan


def test_a_fresh_store_plans_every_dataset_and_writes_nothing(m1_home):
    config = load_config(None, ["name=p", "swe.enabled=false"])
    steps = {s.thing: (s.action, s.why) for s in run_plan(config)}
    assert steps["p-curated"] == ("build", "not built yet")
    assert steps["p-synlogic"] == ("build", "not built yet") and steps["p-code"] == ("build", "not built yet")
    assert steps["p-swe"] == ("skip", "its producer is switched off")
    assert steps["judge"] == ("train", "not trained yet")
    after = "after p-curated, p-synlogic, p-code, p-general, judge are rebuilt: reruns if they change"
    assert steps["base model"] == steps["stages"] == steps["evaluations"] == ("maybe", after)
    assert not m1_home.exists()
