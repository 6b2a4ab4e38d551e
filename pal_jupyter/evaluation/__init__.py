"""Benchmarks of the whole loop: ``runner`` (accuracy, vote, calibration and speed over a data
set, settings compared side by side) and ``dataframes`` (a suite of questions about DataFrames)."""
