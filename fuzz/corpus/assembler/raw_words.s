; illegal and reserved words via .inst, decimal and hex fields
.inst 0x2a
.inst 0x00000000000000000000000000000107
.inst 0xffffffffffffffffffffffffffffffff
read_host dest=3 addr=0 rows=0 host=8
read_host dest=ub ub=8191 rows=2 host=4294967280
activate acc=65535 ub=16777215 width=4095 height=4095 pool_k=15 pool_s=15 ub_stride=16777215 slot=15 func=identity
matmul ub=16777215 acc=65535 inner=4095 outer=4095 inner_stride=255 outer_stride=16777215
halt
