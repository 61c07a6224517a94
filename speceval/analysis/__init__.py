"""Analysis of judged runs: loading verdict files into typed rows, statistics, plots, an HTML report, export."""
