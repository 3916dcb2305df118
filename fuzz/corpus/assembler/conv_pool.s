read_host ub=0 rows=64 host=0x100000
read_weights tiles=3 host=0x102000
matmul ub=0 acc=0 inner=6 outer=6 inner_stride=1 outer_stride=8 switch
matmul ub=1 acc=0 inner=6 outer=6 inner_stride=1 outer_stride=8 switch acc
matmul ub=2 acc=0 inner=6 outer=6 inner_stride=1 outer_stride=8 switch acc
activate acc=0 ub=200 width=6 height=6 pool_k=2 pool_s=2 ub_stride=3 func=clamp slot=15
write_host ub=200 rows=9 host=0x400000
sync
halt
