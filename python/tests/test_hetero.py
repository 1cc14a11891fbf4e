"""The heterograph API (DGL's spellings) on a generated mag-shaped graph:
standalone over one part, and launched (2 machines x 2 trainers) over two.
The checks themselves are in hetero_checks.py."""
import subprocess

import pytest

from conftest import HERE, PYTHON, launch, make_mag, python_cmd

CHECKS = ["types_and_counts", "typed_data", "id_maps", "typed_tensor", "typed_embedding", "typed_split",
          "typed_sampling", "typed_to_block", "typed_loader", "typed_link_loader", "errors"]


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    """(input folder, {1: 1-part config, 2: 2-part config}) of a small mag graph."""
    return make_mag(tmp_path_factory.mktemp("mag"), "--num-nodes", "3000", "--feat-dim", "8",
                    "--num-classes", "5")

def test_standalone(mag):
    graph, parts = mag
    r = subprocess.run([PYTHON, f"{HERE}/hetero_checks.py", parts[1], graph],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    for c in CHECKS:
        assert f"CHECK {c} ok" in r.stdout, r.stdout
    assert "ALL CHECKS PASSED" in r.stdout


def test_launched_two_by_two(mag, tmp_path):
    graph, parts = mag
    code, out, job = launch(tmp_path, parts[2], python_cmd("hetero_checks.py", parts[2], graph))
    assert code == 0, out
    for c in CHECKS:
        assert out.count(f"CHECK {c} ok") == 4, (c, out)
    assert out.count("ALL CHECKS PASSED") == 4
