"""cgroup v2 as root, laid out as the kernel asks (CI's main pass runs as root): no processes in a cgroup whose
children have controllers, so the processes of the engine's own cgroup move into a leaf and the samples' cgroups go
beside it. Tried on this host's real cgroup2 mount, in a cgroup made for the test, with pids where the host binds
it to v2, else a controller it offers there (the rule is the kernel's for every controller: this machine binds
pids to v1, and its v2 mount offers hugetlb)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pytest_repoexec import cgroups

IN_THE_CGROUP = r'''
import json, os, sys, time
from pytest_repoexec import cgroups
controller = sys.argv[1]
own = cgroups._own_v2_folder()
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
seen = {"own": str(own)}
try:
    (own / "cgroup.subtree_control").write_text(f"+{controller}\n")
    seen["direct"] = "taken"
except OSError as exc:
    seen["direct"] = exc.strerror
seen["layout"] = str(cgroups.lay_out_v2(controller))
seen["leaf"] = sorted((own / cgroups.ENGINE_LEAF / "cgroup.procs").read_text().split())
seen["left"] = (own / "cgroup.procs").read_text().split()
seen["subtree"] = (own / "cgroup.subtree_control").read_text().split()
seen["own after"] = str(cgroups._own_v2_folder())
seen["again"] = str(cgroups.lay_out_v2(controller))  # another worker of the run, in the leaf now
sample = own / f"repoexec-{os.getpid()}-0"
sample.mkdir()
(sample / "cgroup.procs").write_text(f"{child}\n")
seen["sample"] = (sample / "cgroup.procs").read_text().split()
seen["sample controllers"] = (sample / "cgroup.controllers").read_text().split()
seen["ours"] = sorted([str(os.getpid()), str(child)])
seen["child"] = str(child)
seen["pids here"] = str(cgroups.lay_out_v2("pids"))
if controller == "pids":
    seen["probe"] = cgroups.ProcessCgroup(own, 2).probe(2)
os.kill(child, 9)
os.waitpid(child, 0)
sample.rmdir()
print(json.dumps(seen))
'''


def test_the_engines_processes_go_into_a_leaf_and_the_samples_cgroups_beside_it():
    assert os.geteuid() == 0, "this file is CI's as root: it makes cgroups on the host's cgroup2 mount"
    mount = next(point for point, fstype, _ in cgroups._mounts() if fstype == "cgroup2")
    offered = (mount / "cgroup.controllers").read_text().split()
    controller = "pids" if "pids" in offered else offered[0]
    top = mount / "cgroup.subtree_control"
    enabled = controller in top.read_text().split()
    if not enabled:
        top.write_text(f"+{controller}\n")  # the hierarchy's root takes it with processes in it
    test = mount / f"repoexec-test-{os.getpid()}"
    test.mkdir()
    try:
        done = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(test / "cgroup.procs"),
                               sys.executable, "-c", IN_THE_CGROUP, controller],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
    finally:
        cgroups._remove(test / cgroups.ENGINE_LEAF)
        cgroups._remove(test)
        if not enabled:
            top.write_text(f"-{controller}\n")
    assert seen["own"] == str(test)
    assert seen["direct"] == "Device or resource busy"  # the kernel's rule: not with processes in the cgroup
    assert seen["layout"] == str(test) and seen["again"] == str(test)
    assert seen["leaf"] == seen["ours"] and seen["left"] == []  # every process of the cgroup moved, none left
    assert controller in seen["subtree"]
    assert seen["own after"] == str(test / cgroups.ENGINE_LEAF)
    assert seen["sample"] == [seen["child"]] and controller in seen["sample controllers"]
    if controller == "pids":
        assert seen["probe"] is None
    else:  # no pids controller on this v2 mount: no v2 layout for the process limit, and the probe goes on
        assert seen["pids here"] == "None"
        assert all(not (isinstance(found, cgroups.ProcessCgroup) and found.version == 2)
                   for found in cgroups.candidates()[0])
