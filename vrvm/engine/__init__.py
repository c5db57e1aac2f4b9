"""The numerical library: variational relevance vector machines and their predictives.

Kernels and sufficient statistics (:mod:`~vrvm.engine.kernels`), the variational
updates and the fast solver (:mod:`~vrvm.engine.variational`), the estimators
:class:`VRVMRegressor` and :class:`BayesianLinearRegression` with the conjugate
:class:`NormalGammaPosterior` they update online, predictive distributions and their
uniform mixtures, scores (:mod:`~vrvm.engine.metrics`) and the distance-dependent
spread (:mod:`~vrvm.engine.calibration`). Imports numpy, scipy and scikit-learn only;
it knows nothing about trips.
"""

from vrvm.engine.blr import BayesianLinearRegression
from vrvm.engine.distributions import Normal, StudentT
from vrvm.engine.metrics import evaluate_distribution
from vrvm.engine.mixture import MixtureDistribution
from vrvm.engine.posterior import NormalGammaPosterior
from vrvm.engine.regressor import VRVMRegressor

__all__ = [
    "BayesianLinearRegression",
    "MixtureDistribution",
    "Normal",
    "NormalGammaPosterior",
    "StudentT",
    "VRVMRegressor",
    "evaluate_distribution",
]
