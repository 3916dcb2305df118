matmul	ub=0x10 acc=0X2 inner=1
halt ; x
