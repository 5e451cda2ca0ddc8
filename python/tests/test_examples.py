"""The examples in python/examples run without error."""
import os
import runpy

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py")))
def test_example_runs(name, capsys):
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    assert capsys.readouterr().out.strip()
