"""The searches over compiles: ``sweep`` (policy x scheduler x pipelining x batch), ``tune`` (per-name
offload choices), ``whatif`` (the same step compiled twice), and ``executors`` (local processes or Ray)."""
