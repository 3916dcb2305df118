# comment (also ';')
label:                         ; labels are allowed and ignored by the chip (no branches)
read_host    ub=0 rows=16 host=0x1000            ; dest=ub by default
read_host    dest=param addr=0 rows=12 host=0x2000
read_weights tiles=1 host=0x3000
matmul       ub=0 acc=0 inner=16 outer=1 inner_stride=1 outer_stride=0 acc a_unsigned w_unsigned switch
activate     acc=0 ub=100 width=16 height=1 pool_k=1 pool_s=1 ub_stride=0 slot=0 func=relu out_unsigned
write_host   ub=100 rows=16 host=0x4000
sync
nop
halt
