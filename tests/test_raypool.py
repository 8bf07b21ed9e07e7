"""The judges as Ray actors on a local cluster of two nodes (Ray's own ``cluster_utils.Cluster``): the verdicts
of one process, and none lost or doubled when an actor is killed mid-load."""

import threading
import time

import pytest

from conftest import SHIPPED
from pytest_repoexec.api import open_problems
from pytest_repoexec.mutation import pass_body
from pytest_repoexec.problem import find_manifests, load_problem

import ray
from ray.cluster_utils import Cluster

from pytest_repoexec.raypool import RayPool

PROBLEMS = [load_problem(manifest) for manifest in find_manifests([SHIPPED])]


@pytest.fixture(scope="module")
def cluster():
    # every node on loopback: the tests reach no address but 127.0.0.1
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("RAY_NODE_IP_ADDRESS", "127.0.0.1")
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 << 20,
                                                         "node_ip_address": "127.0.0.1"})
    made.add_node(num_cpus=1, object_store_memory=80 << 20, node_ip_address="127.0.0.1")
    made.wait_for_nodes()
    ray.init(address=made.address, _node_ip_address="127.0.0.1")
    yield made
    ray.shutdown()
    made.shutdown()
    monkeypatch.undo()


def test_two_nodes_give_the_verdicts_of_one_process_and_a_killed_actor_loses_none(cluster, repoexec_cache):
    samples = [(problem.id, text) for problem in PROBLEMS[:8] for text in (problem.reference,
                                                                            pass_body(problem.reference))]
    with open_problems(SHIPPED, cache=repoexec_cache, workers=1) as problems:
        alone = problems.score_batch(samples)
    pool = RayPool([SHIPPED], cache=repoexec_cache, fresh=True)
    try:
        assert len(pool.actors) == 2 and len(set(pool.nodes())) == 2  # one actor on each node
        spread = pool.score_batch(samples)
        assert [(v.passed, v.tests_passed, v.error_type) for v in spread] == \
            [(v.passed, v.tests_passed, v.error_type) for v in alone]
        assert [v.passed for v in spread] == [True, False] * 8
        # an actor killed while its samples are under way: they are judged by the other, once each
        wrong = [(problem_id, text + f"\n# again {copy}\n") for copy in range(3) for problem_id, text in samples]
        answers = {}
        scoring = threading.Thread(target=lambda: answers.update(verdicts=pool.score_batch(wrong)))
        scoring.start()
        time.sleep(1.0)
        assert scoring.is_alive()  # mid-load
        ray.kill(pool.actors[0], no_restart=True)
        scoring.join(timeout=300)
        assert len(pool.actors) == 1
        assert [v.passed for v in answers["verdicts"]] == [True, False] * 24
        assert all(v.counts for v in answers["verdicts"])
    finally:
        pool.close()
