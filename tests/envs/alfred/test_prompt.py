"""FLARE-style triplet prompt, parser, retrieval, grounded replanning; the planner with a scripted backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.golden import check_golden

from envs.alfred.language import Triplet, expand_all
from envs.alfred.suite import AlfredSuite
from harness.interfaces import Agent
from harness.run.runner import Runner
from harness.types import RunSpec
from envs.alfred.prompt import (
    AlfredTripletPlanner, Example, PromptOptions, Retriever, TripletPromptBuilder, format_triplets, most_similar,
    missing_object, parse_triplets, substitute, triplets_from_trajectory,
)

GOLDEN = Path(__file__).parent / "testdata" / "alfred_prompt.txt"
KEYCHAIN = "json_2.1.0/pick_two_obj_and_place-KeyChain-None-Sofa-202/trial_T20190908_102840_789300/pp/ann_0.json"

POOL = [
    Example("Put a washed mug in the coffee maker.", (Triplet("PickupObject", "Mug", "CounterTop"),
            Triplet("CleanObject", "Mug"), Triplet("PutObject", "Mug", "CoffeeMachine"))),
    Example("Heat a potato and put it on the counter.", (Triplet("PickupObject", "Potato", "Fridge"),
            Triplet("HeatObject", "Potato"), Triplet("PutObject", "Potato", "CounterTop"))),
    Example("Look at the book under the lamp.", (Triplet("PickupObject", "Book", "Bed"),
            Triplet("ToggleObject", "DeskLamp"))),
]


def test_parse_golden_forms() -> None:
    p = parse_triplets("Plan: (PickupObject, Apple, CounterTop), (HeatObject, Apple, 0), (PutObject, Apple, Plate)")
    assert p.error is None and [t.text for t in p.triplets] == [
        "(PickupObject, Apple, CounterTop)", "(HeatObject, Apple, 0)", "(PutObject, Apple, Plate)"]
    p = parse_triplets('[["pickupobject", "Apple", "None"], ["SliceObject", "Apple", ""]]')
    assert p.triplets == (Triplet("PickupObject", "Apple", "0"), Triplet("SliceObject", "Apple", "0"))
    for bad, why in (("I would pick the apple.", "no (action"), ("(EatObject, Apple, 0)", "unknown action"),
                     ("(PutObject, Apple, 0)", "needs a receptacle")):
        p = parse_triplets(bad)
        assert p.triplets == () and why in p.error
    assert parse_triplets(None).error  # type: ignore[arg-type]


def test_prompt_golden() -> None:
    builder = TripletPromptBuilder(POOL, PromptOptions(k=2))
    text = builder.text("Warm up a potato and set it on the table.", ["Potato", "Microwave", "DiningTable"])
    check_golden(GOLDEN, text)
    later = builder.text("Warm up a potato.", (), "No Potato can be found in this scene.",
                         [Triplet("PickupObject", "Potato", "Fridge")])
    assert "Already done: (PickupObject, Potato, Fridge)" in later and "The last subgoal failed" in later
    ident = builder.identity()
    assert ident["k"] == 2 and ident["pool_sha256"] and ident != TripletPromptBuilder(POOL[:2]).identity()


def test_retrieval_by_instruction_similarity() -> None:
    r = Retriever(POOL)
    assert r.top("heat the potato then put it down", 1)[0] is POOL[1]
    assert r.top("rinse the mug", 1)[0] is POOL[0]
    assert [e.instruction for e in TripletPromptBuilder(POOL, PromptOptions(k=2, retrieval="fixed"))
            .examples_for("look at a book")] == [POOL[0].instruction, POOL[1].instruction]
    with pytest.raises(ValueError):
        TripletPromptBuilder(POOL, PromptOptions(retrieval="bm99"))


def test_grounded_replanning_substitution() -> None:
    assert missing_object("No KeyChains is in reach.") == "KeyChains"
    assert missing_object("Done.") is None
    assert most_similar("KeyChains", ["Sofa", "KeyChain", "Laptop"]) == "KeyChain"
    assert most_similar("ButterKnife", ["Knife", "Fork"]) == "Knife"
    plan = [Triplet("PickupObject", "KeyChains", "Sofa"), Triplet("PutObject", "KeyChains", "Box")]
    assert substitute(plan, "KeyChains", ["KeyChain", "Box"]) == [
        Triplet("PickupObject", "KeyChain", "Sofa"), Triplet("PutObject", "KeyChain", "Box")]
    assert substitute(plan, "KeyChains", []) is None


def test_triplets_from_a_real_trajectory(data_dir: Path) -> None:
    traj = json.loads((data_dir / KEYCHAIN).read_text())
    assert format_triplets(triplets_from_trajectory(traj)) == (
        "(PickupObject, KeyChain, SideTable), (PutObject, KeyChain, Sofa), "
        "(PickupObject, KeyChain, 0), (PutObject, KeyChain, Sofa)")


def test_replaying_the_trajectories_own_triplets(data_dir: Path) -> None:
    """Class-level triplets of ALFRED's expert plans, expanded as FLARE does, on the engine.

    The expert plans themselves replay 213/213 at instance level
    (tests/envs/household/test_expert_replay.py); what fails here is lost in the
    conversion to class-level triplets, not an engine rule. Measured: 200/213 succeed;
    the 13 failures, by cause:

    - 8 ``closed``: the triplet names no receptacle where the object now lies, so the
      expansion adds no Open (``(SliceObject, Lettuce, 0)`` after the Lettuce went into
      the Fridge; the class-level ``Cup`` grounds to the one in the closed Fridge);
    - 2 ``open_twice``: the expansion wraps a put into a Box in Open/Close, but the
      FloorPlan214 Boxes start open (the expert never opens them);
    - 1 ``grounding``: a class-level name reaches another instance (a PotatoSliced
      not in reach);
    - 2 ``wrong_instance``: every step succeeds but the goal is not met: the
      class-level ``Pot`` is not the one the sponge went into, and the converted
      ``(CleanObject, Knife, 0)`` of the TomatoSliced trial cleans the knife.
    """
    suite = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    causes: dict[str, int] = {}
    ok = 0
    for ep in suite.episodes("eb_valid_seen"):
        traj = json.loads((data_dir / ep.metadata["trajectory"]).read_text())
        env = suite.make_env()
        env.reset(seed=0, options={"episode": ep})
        failed = None
        for action in expand_all(triplets_from_trajectory(traj)):
            _, _, _, _, info = env.step(action)
            if not info["action_ok"]:
                failed = info["feedback"]
                break
        if failed is None and info["success"]:
            ok += 1
            continue
        if failed is None:
            cause = "wrong_instance"
        elif "already open" in failed:
            cause = "open_twice"
        elif "which is closed" in failed:
            cause = "closed"
        else:
            cause = "grounding"
        causes[cause] = causes.get(cause, 0) + 1
    print(f"trajectory triplets: {ok}/213 succeed; failures by cause: {causes}")
    assert ok + sum(causes.values()) == 213
    assert ok >= 200, causes
    # No engine refusal is left among the causes (the put whitelist was one).
    assert set(causes) <= {"wrong_instance", "open_twice", "closed", "grounding"}


class ScriptedBackend:
    """Answers from a fixed list, in order (a scripted model)."""

    def __init__(self, outputs: list[str]) -> None:
        self.outputs, self.calls = list(outputs), []

    def identity(self):
        return {"name": "scripted"}

    def generate(self, conversations):
        self.calls.append(conversations)
        return [self.outputs.pop(0) for _ in conversations]


def _keychain_episode(data_dir: Path):
    suite = AlfredSuite(eb_data_dir=str(data_dir), render=False, generated_per_split=0)
    ep = next(e for e in suite.episodes("eb_valid_seen") if e.episode_id.startswith(KEYCHAIN.split("/")[1]))
    return suite, ep


def _run_one(suite, ep, agent):
    spec = RunSpec(suite="alfred", split="eb_valid_seen", agent=agent.name, variant="v")
    runner = Runner(spec, suite, agent, None)
    from harness.run import identity as identity_mod

    orig = identity_mod.select_episodes
    identity_mod.select_episodes = lambda s, sp: [ep]
    try:
        return runner.run().records[0]
    finally:
        identity_mod.select_episodes = orig


def test_planner_grounded_replanning_end_to_end(data_dir: Path) -> None:
    suite, ep = _keychain_episode(data_dir)
    out = ("(PickupObject, KeyChains, SideTable), (PutObject, KeyChains, Sofa), "
           "(PickupObject, KeyChains, TVStand), (PutObject, KeyChains, Sofa)")
    backend = ScriptedBackend([out])
    agent = AlfredTripletPlanner(backend, POOL, k=2)
    assert isinstance(agent, Agent)
    record = _run_one(suite, ep, agent)
    assert record.success and record.termination == "empty_plan"
    assert len(backend.calls) == 1  # the misspelt class was grounded without asking the model again
    assert record.invalid_actions == 1


def test_planner_unusable_output_then_replan(data_dir: Path) -> None:
    suite, ep = _keychain_episode(data_dir)
    good = ("(PickupObject, KeyChain, SideTable), (PutObject, KeyChain, Sofa), "
            "(PickupObject, KeyChain, TVStand), (PutObject, KeyChain, Sofa)")
    backend = ScriptedBackend(["I am not sure.", good])
    record = _run_one(suite, ep, AlfredTripletPlanner(backend, grounded_replanning=False))
    assert record.success and record.planner_output_errors == 1 and len(backend.calls) == 2
    # Without grounding, a failed step asks the model again with the failure in the prompt.
    backend = ScriptedBackend(["(PickupObject, Keys, SideTable), (PutObject, Keys, Sofa)", good])
    record = _run_one(suite, ep, AlfredTripletPlanner(backend, grounded_replanning=False))
    assert record.success and len(backend.calls) == 2
    assert "The last subgoal failed: No Keys is in reach." in backend.calls[1][0][0]["content"][0]["text"]
