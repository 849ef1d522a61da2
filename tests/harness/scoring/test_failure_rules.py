"""Each suite brings its failure reader through its plugin (SuitePlugin.failures); the core's
rule engine reads no action language itself."""

from __future__ import annotations

from harness.registry.catalog import SUITES
from harness.scoring.failures import classify, rules_for
from harness.interfaces import FailureRules

HEAT = {"object_target": "Apple", "parent_target": "CounterTop", "mrecep_target": "", "toggle_target": "",
        "object_sliced": False}
LOW = [["GotoLocation DiningTable Apple", "Done."], ["PickupObject Apple", "Done."],
       ["GotoLocation CounterTop", "Done."], ["PutObject CounterTop", "Done."]]
SKILLS = [["find a Apple", "Last action executed successfully."],
          ["pick up the Apple", "Last action executed successfully."],
          ["find a CounterTop", "Last action executed successfully."],
          ["put down the object in hand", "Last action executed successfully."]]


def rec(suite, history, **kw):
    base = dict(suite=suite, success=False, error_kind=None, termination="max_steps", empty_plan=False,
                invalid_actions=0, planner_output_errors=0, gc_satisfied=0, gc_total=1,
                task_type="pick_heat_then_place_in_recep", extra={"history": history, "task": HEAT})
    return {**base, **kw}


def test_suites_with_an_action_language_name_their_reader():
    with_rules = {p.name for p in SUITES.entries() if p.failures}
    assert with_rules >= {"eb_alfred", "alfred"}
    for name in with_rules:
        assert isinstance(rules_for(name), FailureRules), name
    for name in ("libero", "eb_manipulation"):
        assert rules_for(name) is None
    assert rules_for("no-such-suite") is None


def test_each_suite_reads_its_own_language_only():
    # The same skipped heat step, in each suite's language, read by that suite's rules.
    assert classify(rec("alfred", LOW)) == "skipped_step"
    assert classify(rec("eb_alfred", SKILLS)) == "skipped_step"
    # The other suite's language is not read: nothing names the target (all steps 'other').
    assert classify(rec("eb_alfred", LOW)) == "target_not_found"
    assert classify(rec("alfred", SKILLS)) == "target_not_found"


def test_suites_without_a_reader_get_the_generic_classes():
    assert classify(rec("libero", SKILLS)) == "other"
    assert classify(rec("libero", SKILLS, gc_satisfied=1)) == "out_of_steps"
    assert classify(rec("eb_manipulation", [], success=True)) == "success"
    assert classify(rec("libero", [], error_kind="env")) == "error"
