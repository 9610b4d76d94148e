"""The statistics a report states: paired tests, intervals, aggregates, seed spread, grid selection, compute-curve fits, their calibration."""
