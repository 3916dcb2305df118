nop
.inst 0x2a
halt
