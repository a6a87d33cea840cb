"""The test suite's own layout: the modules that start a service are the ones ``make test``'s scheduling keeps on one
worker (:data:`tests.conftest.SERVICE_MODULES`)."""

from __future__ import annotations

import re

from tests.conftest import LONGEST_FIRST, SERVICE_MODULES
from tests.support import ROOT

#: a marker of a test that starts a service, as a module writes it
SERVICE_MARK = re.compile(r"pytest\.mark\.(vllm|server|cluster)\b")


def test_service_modules_are_the_modules_marked_as_starting_a_service():
    marked = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "tests").rglob("test_*.py")
        if SERVICE_MARK.search(path.read_text(encoding="utf-8"))
    }
    assert marked == set(SERVICE_MODULES), (
        "a test module that marks tests vllm, server or cluster must be in tests.conftest.SERVICE_MODULES (and only "
        f"those): marked {sorted(marked)}, listed {sorted(SERVICE_MODULES)}"
    )
    assert all((ROOT / path).is_file() for path in SERVICE_MODULES)


def _scheduler():
    """``make test``'s scheduler (tests/conftest.py) for two workers (``-n 2``)."""
    import pytest

    pytest.importorskip("xdist")
    from xdist.remote import Producer

    from tests.conftest import pytest_xdist_make_scheduler

    class Config:  # what the scheduler reads of pytest's config
        def getvalue(self, name):
            return ["2*popen"] if name == "tx" else None

    return pytest_xdist_make_scheduler(Config(), Producer("test", enabled=False))


def test_the_scheduler_keeps_a_module_together_and_the_services_on_one_worker():
    scope = _scheduler()._split_scope
    assert scope("tests/test_io.py::test_a") == scope("tests/test_io.py::test_b") == "tests/test_io.py"
    assert {scope(f"{path}::test_x") for path in SERVICE_MODULES} == {"services"}


def test_the_longest_units_are_handed_out_first():
    from collections import OrderedDict

    assert LONGEST_FIRST[0] == "services" and all((ROOT / path).is_file() for path in LONGEST_FIRST[1:])

    class Node:  # what the scheduler asks of a worker: run these tests of its collection
        def __init__(self):
            self.sent = []

        def send_runtest_some(self, indexes):
            self.sent.append(indexes)

    sched = _scheduler()
    node = Node()
    collection = ["tests/a.py::t1", "tests/a.py::t2", f"{LONGEST_FIRST[2]}::t", f"{sorted(SERVICE_MODULES)[0]}::t"]
    sched.registered_collections[node] = collection
    sched.workqueue = OrderedDict()
    for n in collection:  # xdist's queue: a unit per scope, in collection order
        sched.workqueue.setdefault(sched._split_scope(n), {})[n] = False
    for _ in range(3):
        sched._assign_work_unit(node)
    # the services first, then the student lab, then the rest in xdist's order
    assert node.sent == [[3], [2], [0, 1]]


def test_each_xdist_worker_takes_its_share_of_the_cores(monkeypatch):
    import os

    import tests.conftest as conftest

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    for var in ("INVARIRANK_THREADS", "VLLM_CPU_OMP_THREADS_BIND"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    conftest._share_the_cores()
    assert (os.environ["INVARIRANK_THREADS"], os.environ["VLLM_CPU_OMP_THREADS_BIND"]) == ("2", "2,3")
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0")  # a choice made outside is kept
    conftest._share_the_cores()
    assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "0"
    for var in ("INVARIRANK_THREADS", "VLLM_CPU_OMP_THREADS_BIND"):
        monkeypatch.delenv(var)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "1")  # one process keeps every core
    conftest._share_the_cores()
    assert "INVARIRANK_THREADS" not in os.environ and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ
