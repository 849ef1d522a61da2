"""An example suite plugin for the embodied-transfer harness: reach a target on a number line.

Everything a suite needs, in one package: the declaration of its parameters and its
registration (:mod:`example_suite.plugin`), its episodes and env (:mod:`example_suite.suite`)
and its own oracle (:mod:`example_suite.agents`). docs/writing-a-suite.md follows it.
"""
