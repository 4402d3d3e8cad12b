"""The annealing engine, paths and schedules, AIS in both directions and the combination of estimates."""
