nop
read_host ub=0 rows=1
  bogus_op x=1
