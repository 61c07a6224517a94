"""Experiment grids: a YAML file expands into generation, judging and report runs, executed and resumed as one."""
