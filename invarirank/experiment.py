"""Former home of the runner, kept only as an alias for the teaching lab's ``live_run`` until the compendium
half moves it (then delete this module): use :mod:`invarirank.runner`."""

from .runner import RunConfig as ExperimentConfig
from .runner import run_experiment

__all__ = ["ExperimentConfig", "run_experiment"]
