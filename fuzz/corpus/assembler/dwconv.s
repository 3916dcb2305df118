read_host ub=0 rows=80 host=0x100000
dwconv ub=0 acc=0 width=8 height=8 w=64 kh=3 kw=3 ub_stride=8 pad_top=1 pad_left=1 pad_bottom=1 pad_right=1 acc a_unsigned stride2
dwconv ub=3 acc=20 width=5 height=1 w=70 kh=1 kw=2 ub_stride=65535 w_unsigned
halt
