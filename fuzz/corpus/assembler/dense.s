read_host dest=param addr=36 rows=12 host=0x100000
read_host dest=lut addr=0 rows=16 host=0x100400
read_host ub=0 rows=48 host=0x100800
read_weights tiles=3 host=0x101000
matmul ub=0 acc=5 inner=16 switch
matmul ub=16 acc=5 inner=16 switch acc a_unsigned
matmul ub=32 acc=5 inner=16 switch acc w_unsigned
activate acc=5 ub=1000 width=16 height=1 slot=3 func=lut
write_host ub=1000 rows=16 host=0x400000
halt
