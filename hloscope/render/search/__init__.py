"""The sweep's and the tuner's results: their tables, JSON and CSV (sweep, tune_words) and their plots
(sweep_plot, tune_plot)."""
