"""The judges as Ray actors on a local cluster of two nodes (Ray's own ``cluster_utils.Cluster``): the verdicts
of one process, and none lost or doubled when an actor is killed mid-load.

The cluster is on loopback only. On Linux, Ray gives a node the address by which the machine is reached from
outside (its route to a public address) and rewrites a loopback address given to ``ray.init`` (or as
``_node_ip_address``) to it, so that nodes started on 127.0.0.1 are looked for elsewhere and never found; left to
itself, it listens on every interface, unauthenticated. ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is Ray's own
single-machine mode (its default on macOS and Windows): every node and the driver on 127.0.0.1.
"""

import shutil
import tempfile

import pytest

from conftest import SHIPPED
from pytest_repoexec.api import open_problems, place
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem

import ray
import ray._private.ray_constants
from ray.cluster_utils import Cluster

from pytest_repoexec.raypool import RayPool

PROBLEMS = [load_problem(manifest) for manifest in find_manifests([SHIPPED / "textkit"])][:4]
COMPARED = ("passed", "tests_passed", "tests_total", "error_type", "failed_test", "tr_measured", "decoy", "judge")
# limits no honest test nears on a loaded machine: a verdict here depends on the code, not on the load
LIMITS = {"test_timeout": 30.0, "timeout_factor": 0.0, "sample_timeout": 300.0}


@pytest.fixture
def cluster(monkeypatch):
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # the nodes' processes
    monkeypatch.setattr(ray._private.ray_constants, "ENABLE_RAY_CLUSTER", False)  # this one, which read it
    temp = tempfile.mkdtemp(prefix="ray-")  # short (Ray's sockets are under it), and no other cluster's /tmp/ray
    monkeypatch.setenv("RAY_TMPDIR", temp)
    node = {"num_cpus": 1, "object_store_memory": 80 << 20}
    made = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        made.add_node(**node)
        made.wait_for_nodes()
        ray.init(address=made.address)
        yield made
    finally:
        ray.shutdown()
        made.shutdown()
        shutil.rmtree(temp, ignore_errors=True)


def test_two_nodes_give_the_verdicts_of_one_process_and_a_killed_actor_loses_none(cluster, repoexec_cache,
                                                                                    monkeypatch):
    assert cluster.address.startswith("127.0.0.1:")
    assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
    samples = [(problem.id, text) for problem in PROBLEMS for text in (problem.reference,
                                                                       pass_body(problem.reference))]
    with open_problems(SHIPPED, cache=repoexec_cache, workers=1, fresh=True, **LIMITS) as problems:
        alone = [compared(verdict) for verdict in problems.score_batch(samples)]
    assert [verdict["passed"] for verdict in alone] == [True, False] * len(PROBLEMS)
    pool = RayPool([SHIPPED], cache=repoexec_cache, fresh=True, **LIMITS)
    try:
        assert len(pool.actors) == 2 and len(set(pool.nodes())) == 2  # one actor on each node
        # the first actor, killed once it has judged 2 of its samples (the pool's placement says which are its):
        # the others, queued on it or under way, are judged on the other node, each once
        doomed, wait = pool.actors[0], ray.wait
        placed = place([problem_id for problem_id, _ in samples], [0] * len(pool.actors))
        judged = []

        def wait_then_kill(refs, *args, **options):
            done, rest = wait(refs, *args, **options)
            if len(judged) < 2:
                judged.extend(index for index in (ray.get(ref)["result"]["sample"] for ref in done)
                              if placed[samples[index][0]] == 0)
                if len(judged) >= 2:
                    ray.kill(doomed, no_restart=True)
            return done, rest

        with monkeypatch.context() as patched:
            patched.setattr(ray, "wait", wait_then_kill)
            verdicts = pool.score_batch(samples)
        assert doomed not in pool.actors and len(pool.actors) == 1  # it lost a request, which went to the other
        assert [verdict.result.sample for verdict in verdicts] == list(range(len(samples)))  # one each, in order
        assert [compared(verdict) for verdict in verdicts] == alone
    finally:
        pool.close()


def compared(verdict):
    return {name: verdict.result.to_dict()[name] for name in COMPARED}
