read_host ub=9000 rows=1 host=0x10000
halt
