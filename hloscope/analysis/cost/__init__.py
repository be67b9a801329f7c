"""What each op costs: the roofline model, GEMM kernels, collectives, measured times in the model's
place."""
