"""Test support shipped with the package: the table of validated bad inputs
(:mod:`~.bad_inputs`), which the tests run and the robustness page renders."""
