# matmul waits for weights that never come: runs until --max-cycles (for the signal tests)
matmul ub=0 acc=0 outer=16
halt
