# not ASCII outside a comment (UTF-8 e-acute)
nép
halt
