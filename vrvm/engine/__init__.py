"""The numerical library: variational relevance vector machines and their predictives.

Kernels and sufficient statistics (:mod:`~vrvm.engine.kernels`), the variational
updates and the fast solver (:mod:`~vrvm.engine.variational`), the estimators
:class:`VRVMRegressor` and :class:`BayesianLinearRegression` with the conjugate
:class:`NormalGammaPosterior` they update online, predictive distributions and their
uniform mixtures, scores (:mod:`~vrvm.engine.metrics`) and the distance-dependent
spread (:mod:`~vrvm.engine.calibration`). Imports numpy, scipy and scikit-learn only;
it knows nothing about trips. How work runs in parallel is public too: BLAS held to
one thread for many small calls (:func:`single_threaded_blas`), blocks spread over
threads (:func:`in_threads`), worker processes with a parent-death watchdog
(:func:`watched_parallel`) and their heap settings (:func:`heap_for_numerics`).
"""

from vrvm.engine._blas import CORE_THREADS, in_threads, single_threaded_blas
from vrvm.engine._malloc import heap_for_numerics
from vrvm.engine._watchdog import watched_parallel
from vrvm.engine.blr import BayesianLinearRegression
from vrvm.engine.calibration import PitMap
from vrvm.engine.distributions import Normal, StudentT
from vrvm.engine.metrics import evaluate_distribution
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.posterior import NormalGammaPosterior
from vrvm.engine.recalibrated import RecalibratedMixture
from vrvm.engine.regressor import VRVMRegressor

__all__ = [
    "CORE_THREADS",
    "BayesianLinearRegression",
    "MixtureDistribution",
    "Normal",
    "NormalGammaPosterior",
    "PitMap",
    "RecalibratedMixture",
    "StudentT",
    "VRVMRegressor",
    "evaluate_distribution",
    "heap_for_numerics",
    "in_threads",
    "single_threaded_blas",
    "watched_parallel",
]
