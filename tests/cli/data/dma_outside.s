read_host ub=0 rows=1 host=0x0
halt
