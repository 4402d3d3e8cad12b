"""Tools users point at their own models and samplers: the BDMC sandwich and its bug alarm, BREAD, conditional
consistency, the simulator against the density, the Geweke test and simulation-based calibration."""

from .alarm import BugAlarm, bug_alarm
from .bread import BreadResult, bread
from .compare import DensityComparison, ModelComparison, compare_models
from .consistency import ConsistencyResult, conditional_consistency
from .geweke import GewekeResult, geweke
from .samplers import KernelSampler, NumPyroNUTS, Sampler
from .sandwich import SandwichResult, alarm_from_table, sandwich
from .sbc import SBCResult, sbc
from .simulator_density import SimulatorDensityResult, simulator_density

__all__ = ["BreadResult", "BugAlarm", "ConsistencyResult", "GewekeResult", "SandwichResult", "alarm_from_table",
           "bread", "bug_alarm", "conditional_consistency", "geweke", "sandwich",
           "DensityComparison", "ModelComparison", "compare_models",
           "KernelSampler", "NumPyroNUTS", "Sampler", "SBCResult", "sbc",
           "SimulatorDensityResult", "simulator_density"]
