"""The peers' common problems: moved to :mod:`harness.problems`; this name stays for the scripts and tests that
still import it."""

from harness.problems import (  # noqa: F401
    BUILDERS,
    LOG_2PI,
    MU_SD,
    PROBLEMS,
    SCHOOLS_SIGMA,
    SCHOOLS_Y,
    TAU_SCALE,
    FlatModel,
    Problem,
    check_pymc_density,
    correlated_design,
    correlated_problem,
    get_problem,
    linear_gaussian_log_z,
    narrow_problem,
    pima_problem,
    regression_problem,
    schools_log_z,
    schools_problem,
)
