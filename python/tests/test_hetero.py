"""The heterograph API (DGL's spellings) on a generated mag-shaped graph:
standalone over one part, and launched (2 machines x 2 trainers) over two.
The checks themselves are in hetero_checks.py."""
import pytest

from conftest import launch_checks, make_mag, run_checks

CHECKS = ["types_and_counts", "typed_data", "id_maps", "typed_tensor", "typed_embedding", "typed_split",
          "typed_sampling", "typed_to_block", "typed_loader", "typed_link_loader", "errors"]


@pytest.fixture(scope="module")
def mag(tmp_path_factory):
    """(input folder, {1: 1-part config, 2: 2-part config}) of a small mag graph."""
    return make_mag(tmp_path_factory.mktemp("mag"), "--num-nodes", "3000", "--feat-dim", "8",
                    "--num-classes", "5")


def test_standalone(mag):
    graph, parts = mag
    run_checks("hetero_checks.py", [parts[1], graph], CHECKS)


def test_launched_two_by_two(mag, tmp_path):
    graph, parts = mag
    launch_checks(tmp_path, parts[2], "hetero_checks.py", [parts[2], graph], CHECKS)
