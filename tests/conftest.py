"""Shared fixtures. Query builders live in :mod:`invarirank.llm._testing` (``toy_query``, ``toy_split_queries``);
the data layer's raw-file writers in ``tests/support/data.py``."""

from __future__ import annotations

import os
import tempfile

import pytest

#: hypothesis keeps its example database and constants cache under ``.hypothesis/``: outside the repository
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "invarirank-hypothesis"))
#: the vLLM engines the tests start (the backend's worker, the test server) keep a 1 GiB key/value cache, not the
#: backend's 2 GiB: ~23,000 tokens of SmolLM2, far more than a test's prompts, and 1 GB less beside the other worker
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


def _share_the_cores() -> None:
    """Under pytest-xdist, each worker's models take its share of the CPUs: torch's threads
    (``$INVARIRANK_THREADS``) and a vLLM engine's bound cores (``$VLLM_CPU_OMP_THREADS_BIND``: worker ``gw<i>``
    the i-th share). Two workers each running two bound threads on two cores stall at every OpenMP barrier: the
    served-model tests took 2-3 times as long beside another busy process (measured 23.5 s against 10.8 s). Set
    either variable to choose otherwise; one process (``-n 0``) keeps every core."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if workers < 2 or not name.startswith("gw") or len(cpus) < workers:
        return
    share = len(cpus) // workers
    index = int(name[2:]) % workers
    os.environ.setdefault("INVARIRANK_THREADS", str(share))
    os.environ.setdefault(
        "VLLM_CPU_OMP_THREADS_BIND", ",".join(str(c) for c in cpus[index * share : (index + 1) * share])
    )


_share_the_cores()

#: ``make test`` sets it: a test skipped for a missing prerequisite (``pytest.importorskip`` of torch, transformers,
#: gguf, implicit, ...) fails instead, with the reason, so a broken install cannot pass by testing less
REQUIRE_ALL = os.environ.get("INVARIRANK_REQUIRE_ALL") == "1"


def _require(report) -> None:
    """Turn a skip for a missing module into a failure naming it (under ``INVARIRANK_REQUIRE_ALL=1``)."""
    if not (REQUIRE_ALL and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if "could not import" in reason:
        report.outcome = "failed"
        report.longrepr = (
            f"make test (INVARIRANK_REQUIRE_ALL=1): a prerequisite is missing, so these tests cannot "
            f"run: {reason}; run `make setup` (or unset INVARIRANK_REQUIRE_ALL to skip them)"
        )


#: the test modules whose tests start a service (a vLLM engine or server, a local Ray; marked ``vllm``, ``server`` or
#: ``cluster``, which tests/structure/test_test_layout.py holds to this set)
SERVICE_MODULES = frozenset(
    {
        "tests/audit/test_served_vllm.py",
        "tests/benchmarks/test_vllm_committed_run.py",
        "tests/llm/test_vllm_backend.py",
        "tests/runner/test_ray.py",
    }
)


#: the longest work units, longest first (idle 2-core machine, two workers, 2026-12-05: the services ~480 s, the
#: book build 95 s, the student lab 82 s, ...): handed out before the rest, so the run does not end with one worker
#: on a long module while the other waits (xdist would otherwise order by test count, and these have few tests).
#: A stale list costs only time.
LONGEST_FIRST = (
    "services",
    "tests/book/test_build.py",
    "tests/book/test_student_lab.py",
    "tests/llm/test_qwen.py",
    "tests/book/test_verdicts.py",
    "tests/runner/test_real.py",
    "tests/test_front_door.py",
    "tests/llm/test_real.py",
    "tests/llm/test_paper_tokenizers.py",
)


@pytest.hookimpl(optionalhook=True)  # (a hook of pytest-xdist, which the test extras install)
def pytest_xdist_make_scheduler(config, log):
    """pytest-xdist's scheduling for ``make test`` (``-n``): a test module's tests run on one worker, one after
    another, so its module-scoped fixtures (a built book, a served model) are set up once (xdist's ``loadfile``);
    and the modules of :data:`SERVICE_MODULES` all run on one worker, so two engines or clusters never start at once
    (two vLLM engines starting side by side on two cores failed to start one of them); the units of
    :data:`LONGEST_FIRST` go first. Not ``--dist loadgroup``:
    with pytest 9 it no longer reads the groups (it renames a test by an attribute pytest stopped using)."""
    from xdist.scheduler import LoadFileScheduling

    class ModuleScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "services" if path in SERVICE_MODULES else path

        def _assign_work_unit(self, node) -> None:
            for scope in reversed(LONGEST_FIRST):  # to the front of xdist's queue (an OrderedDict), longest first
                if scope in self.workqueue:
                    self.workqueue.move_to_end(scope, last=False)
            super()._assign_work_unit(node)

    return ModuleScheduling(config, log)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # importorskip inside a test or fixture
    outcome = yield
    _require(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):  # importorskip at module level skips the whole module
    outcome = yield
    _require(outcome.get_result())


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    """A private ``$INVARIRANK_CACHE`` for one test (nothing it caches leaks into other tests or the user's cache).
    Modules that need it for every test say ``pytestmark = pytest.mark.usefixtures("private_cache")``."""
    monkeypatch.setenv("INVARIRANK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    """A small finished run read back by the compendium (one per test module): the four methods on five synthetic
    queries with the simulated scorer (K = 6, M = 4, primacy bias 2.0), in seconds and without torch."""
    from invarirank import compendium
    from invarirank.runner._lab import live_run

    run = live_run(
        "primacy",
        2.0,
        K=6,
        M=4,
        n_queries=5,
        calibration_queries=4,
        calibration_repeats=1,
        seed=3,
        out=tmp_path_factory.mktemp("simulated"),
        n_bootstrap=100,
    )
    return compendium.load_run(run.path)


from tests.support import ROOT  # noqa: E402

#: what pytest itself may leave in the repository root
_TOOL_FOLDERS = {".pytest_cache", "__pycache__"}


def _footprint() -> tuple[set[str], set[str]]:
    top = {p.name for p in ROOT.iterdir()}
    package = {str(p.relative_to(ROOT)) for p in (ROOT / "invarirank").rglob("*") if "__pycache__" not in p.parts}
    return top, package


@pytest.fixture(scope="session", autouse=True)
def _nothing_written_into_the_repository():
    """No test writes into the repository root or the package (temporary folders are for that): checked once,
    after the last test of the session."""
    top, package = _footprint()
    yield
    now_top, now_package = _footprint()
    new = sorted((now_top - top - _TOOL_FOLDERS) | (now_package - package))
    assert not new, f"tests wrote into the repository root or the package: {', '.join(new)}"
