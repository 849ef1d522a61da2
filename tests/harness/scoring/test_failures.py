"""Failure taxonomy (harness/scoring/failures.py, with each suite's reader: envs/<suite>/failures.py)
on hand-built EB-ALFRED histories, and ``harness table --by failure`` on real runs
(oracle: all success)."""

from __future__ import annotations


from harness.scoring import failures
from harness.scoring.failures import classify

OK = "Last action executed successfully."
ABSENT = "Last action is invalid. Cannot find {0}. This object may not exist in this scene. Try to explore other instances instead."
NOT_FOUND = "Last action is invalid. Cannot find {0} to pick up. Find the object before picking up it"

CLEAN = {"object_target": "Ladle", "parent_target": "DiningTable", "mrecep_target": "", "toggle_target": "",
         "object_sliced": False}
SIMPLE = {"object_target": "SprayBottle", "parent_target": "Toilet", "mrecep_target": "", "toggle_target": "",
          "object_sliced": False}


def rec(history=None, task=None, **kw):
    base = dict(suite="eb_alfred", success=False, error_kind=None, termination="max_invalid", empty_plan=False, invalid_actions=0,
                planner_output_errors=0, gc_satisfied=0, gc_total=1, task_type="pick_and_place_simple",
                extra={})
    base.update(kw)
    if history is not None:
        base["extra"] = dict(base["extra"], history=[list(h) for h in history])
    if task is not None:
        base["extra"] = dict(base["extra"], task=task)
    return base


def test_success_error_empty_plan_output_format():
    assert classify(rec(success=True, history=[("find a Toilet", OK)], task=SIMPLE)) == "success"
    assert classify(rec(error_kind="env")) == "error"
    assert classify(rec(empty_plan=True, termination="empty_plan")) == "empty_plan"
    # 3 of 4 invalid actions were unusable model outputs.
    assert classify(rec(invalid_actions=4, planner_output_errors=3, history=[("find a Mug", OK)])) == "output_format"
    # 1 of 10: not the dominant cause.
    assert classify(rec(invalid_actions=10, planner_output_errors=1, history=[("find a Mug", OK)],
                        task=SIMPLE)) != "output_format"


def test_target_never_found_and_found_not_picked():
    h = [("find a Toilet", OK), ("pick up the SprayBottle", NOT_FOUND.format("SprayBottle"))]
    assert classify(rec(history=h, task=SIMPLE, invalid_actions=1)) == "target_not_found"
    h = [("find a SprayBottle", OK), ("find a Toilet", OK), ("put down the object in hand",
                                                              "Last action is invalid. Robot is not holding any object")]
    assert classify(rec(history=h, task=SIMPLE, invalid_actions=1)) == "target_not_picked"


def test_hallucinated_object():
    h = [("find a Unicorn", ABSENT.format("Unicorn")), ("pick up the Unicorn", NOT_FOUND.format("Unicorn")),
         ("find a SprayBottle", OK)]
    assert classify(rec(history=h, task=SIMPLE, invalid_actions=2)) == "hallucinated_object"
    # An absent-object find among many other invalid actions is not the cause.
    h2 = [("find a Unicorn", ABSENT.format("Unicorn"))] + [("pick up the SprayBottle", NOT_FOUND.format("SprayBottle"))] * 3
    assert classify(rec(history=h2, task=SIMPLE, invalid_actions=4)) == "target_not_found"


def test_wrong_receptacle_and_skipped_clean():
    wrong = [("find a SprayBottle", OK), ("pick up the SprayBottle", OK), ("find a Cabinet_2", OK),
             ("put down the object in hand", OK)]
    assert classify(rec(history=wrong, task=SIMPLE, termination="max_steps")) == "wrong_receptacle"
    skipped = [("find a Ladle", OK), ("pick up the Ladle", OK), ("find a DiningTable", OK),
               ("put down the object in hand", OK)]
    assert classify(rec(history=skipped, task=CLEAN, task_type="pick_clean_then_place_in_recep",
                        termination="max_steps")) == "skipped_step"
    cleaned = [("find a Ladle", OK), ("pick up the Ladle", OK), ("find a Sink", OK), ("put down the object in hand", OK),
               ("turn on the Faucet", OK), ("pick up the Ladle", OK), ("find a DiningTable", OK),
               ("put down the object in hand", OK)]
    # Cleaned and placed: not skipped (a failing record here would be 'other').
    assert classify(rec(history=cleaned, task=CLEAN, task_type="pick_clean_then_place_in_recep",
                        termination="max_invalid")) == "other"
    # The Sink on the way is no wrong receptacle; running out there is progress.
    assert classify(rec(history=cleaned[:5], task=CLEAN, task_type="pick_clean_then_place_in_recep",
                        termination="max_steps", gc_satisfied=1)) == "out_of_steps"


def test_skipped_heat_cool_slice_and_lamp():
    heat = dict(CLEAN, object_target="Potato", parent_target="CounterTop")
    h = [("find a Potato", OK), ("pick up the Potato", OK), ("find a Microwave", OK), ("put down the object in hand", OK),
         ("pick up the Potato", OK), ("find a CounterTop", OK), ("put down the object in hand", OK)]
    assert classify(rec(history=h, task=heat, task_type="pick_heat_then_place_in_recep")) == "skipped_step"
    h_on = h[:4] + [("turn on the Microwave", OK)] + h[4:]
    assert classify(rec(history=h_on, task=heat, task_type="pick_heat_then_place_in_recep")) == "other"
    h_cool = [(a.replace("Microwave", "Fridge"), f) for a, f in h]
    assert classify(rec(history=h_cool, task=heat, task_type="pick_cool_then_place_in_recep")) == "other"
    sliced = dict(SIMPLE, object_target="Apple", parent_target="Fridge", object_sliced=True)
    h_sl = [("find a Apple", OK), ("pick up the Apple", OK), ("find a Fridge", OK), ("put down the object in hand", OK)]
    assert classify(rec(history=h_sl, task=sliced)) == "skipped_step"
    lamp = dict(SIMPLE, object_target="Pillow", parent_target="", toggle_target="FloorLamp")
    h_l = [("find a Pillow", OK), ("pick up the Pillow", OK), ("find a FloorLamp", OK)]
    assert classify(rec(history=h_l, task=lamp, task_type="look_at_obj_in_light")) == "skipped_step"


def test_movable_receptacle():
    task = dict(SIMPLE, object_target="Spoon", parent_target="DiningTable", mrecep_target="Plate")
    wrong = [("find a Spoon", OK), ("pick up the Spoon", OK), ("find a Plate_2", OK), ("put down the object in hand", OK),
             ("pick up the Plate", OK), ("find a Sofa", OK), ("put down the object in hand", OK)]
    assert classify(rec(history=wrong, task=task, task_type="pick_and_place_with_movable_recep")) == "wrong_receptacle"


def test_old_records_without_history_or_task():
    assert classify(rec(termination="max_steps", gc_satisfied=1)) == "out_of_steps"
    assert classify(rec(termination="max_invalid")) == "no_history"
    # No task params: the task rules are skipped, the rest still applies.
    h = [("find a Mug", OK), ("pick up the Mug", OK)]
    assert classify(rec(history=h, termination="max_steps")) == "out_of_steps"
    # The caller's re-derived params are used when the record has none.
    assert classify(rec(history=h, termination="max_steps"), task=SIMPLE) == "target_not_found"


def test_obj_type():
    from envs.household.failures import obj_type

    assert obj_type("Cabinet_8") == "cabinet"
    assert obj_type("SinkBasin") == obj_type("Sink") == "sink"
    assert obj_type("AppleSliced_1") == "apple"


def test_table_by_failure_oracle_and_random(tmp_path, capsys):
    from harness.cli.entry import main

    out = str(tmp_path / "o")
    assert main(["run", "-m", "planner=oracle,random", "split=seen", "limit=12", f"out={out}", "progress=false"]) == 0
    capsys.readouterr()
    assert main(["table", out, "--by", "failure", "--format", "csv"]) == 0
    import io

    import pandas as pd

    t = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("variant")
    assert t.loc["oracle", "success"] == 100.0 and t.loc["oracle", "n"] == 12
    assert t.loc["random", "success"] == 0.0
    shares = t.loc["random"].drop(["group", "n", "of_split"]).astype(float)  # of_split: the split's total
    assert abs(shares.sum() - 100.0) < 1e-6 and (shares.drop("success") > 0).sum() >= 2


def test_alfred_low_level_language():
    """The alfred suite's steps: 'Done.' is success, PutObject names the receptacle."""
    heat = {"object_target": "Apple", "parent_target": "CounterTop", "mrecep_target": "", "toggle_target": "",
            "object_sliced": False}
    kw = dict(suite="alfred", task_type="pick_heat_then_place_in_recep", termination="max_fails")
    skipped = [("GotoLocation DiningTable Apple", "Done."), ("PickupObject Apple", "Done."),
               ("GotoLocation CounterTop", "Done."), ("PutObject CounterTop", "Done.")]
    assert classify(rec(history=skipped, task=heat, **kw)) == "skipped_step"
    heated = [("GotoLocation DiningTable Apple", "Done."), ("PickupObject Apple", "Done."),
              ("GotoLocation Microwave", "Done."), ("OpenObject Microwave", "Done."), ("PutObject Microwave", "Done."),
              ("CloseObject Microwave", "Done."), ("ToggleObjectOn Microwave", "Done."),
              ("ToggleObjectOff Microwave", "Done."), ("OpenObject Microwave", "Done."), ("PickupObject Apple", "Done."),
              ("GotoLocation Sofa", "Done."), ("PutObject Sofa", "Done.")]
    assert classify(rec(history=heated, task=heat, **kw)) == "wrong_receptacle"
    assert classify(rec(history=[("PickupObject Apple", "No Apple is in reach.")], task=heat, invalid_actions=1,
                        **kw)) == "target_not_found"
    ghosts = [("GotoLocation Unicorn", "No Unicorn can be found in this scene."),
              ("PickupObject Unicorn", "No Unicorn is in reach.")]
    assert classify(rec(history=ghosts, task=heat, invalid_actions=2, **kw)) == "hallucinated_object"


def test_table_by_failure_on_the_alfred_suite(tmp_path, capsys):
    import io

    import pandas as pd

    from harness.cli.entry import main

    out = str(tmp_path / "a")
    assert main(["run", "-m", "suite=alfred", "planner=oracle,random", "split=seen", "limit=12", f"out={out}",
                 "progress=false"]) == 0
    capsys.readouterr()
    assert main(["table", out, "--by", "failure", "--format", "csv"]) == 0
    t = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("variant")
    assert t.loc["oracle", "success"] == 100.0 and t.loc["random", "success"] == 0.0
    assert "other" not in t.columns or t.loc["random", "other"] < 50


def test_taxonomy_on_a_store_mixing_errors_and_failures(tmp_path, capsys):
    """One timed-out episode of another variant in the store must
    not turn every failure into 'error'. Read back under the installed pandas, a
    record without an error has ``error_kind`` NaN (``bool(nan)`` is True)."""
    import io
    import math

    import pandas as pd

    from harness.cli.entry import main
    from harness.store import ResultStore

    out = str(tmp_path / "mix")
    assert main(["run", "planner=random", "split=seen", "limit=3", f"out={out}", "progress=false"]) == 0
    assert main(["run", "planner=oracle", "variant.name=slow", "split=seen", "limit=1", "episode_timeout_s=1e-9",
                 f"out={out}", "progress=false"]) == 0
    with ResultStore(out, readonly=True) as store:
        frame = store.frame()
    kinds = dict(zip(frame["variant"], frame["error_kind"]))
    assert kinds["slow"] == "timeout"
    missing = frame.loc[frame["variant"] == "random", "error_kind"]
    assert all(v is None or (isinstance(v, float) and math.isnan(v)) for v in missing)
    classes = dict(zip(zip(frame["variant"], frame["episode_id"]), failures.classify_frame(frame)))
    assert [c for (v, _), c in classes.items() if v == "slow"] == ["error"]
    random_classes = [c for (v, _), c in classes.items() if v == "random"]
    assert len(random_classes) == 3 and "error" not in random_classes
    assert set(random_classes) <= {c.name for c in failures.declared_classes("eb_alfred")} - {"success", "error", "no_history"}
    capsys.readouterr()
    assert main(["table", out, "--by", "failure", "--format", "csv"]) == 0
    t = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("variant")
    assert t.loc["slow", "error"] == 100.0 and t.loc["random", "error"] == 0.0


def test_missing_values_as_pandas_reads_them():
    """NaN / pd.NA in optional fields (error_kind, task_type, counts) are 'absent'."""
    import pandas as pd

    for missing in (float("nan"), pd.NA, None, ""):
        r = rec(error_kind=missing, task_type=missing, planner_output_errors=missing,
                history=[("find a SprayBottle", OK)], task=SIMPLE)
        assert classify(r) == "target_not_picked", missing
    assert classify(rec(error_kind="timeout", success=float("nan"))) == "error"
