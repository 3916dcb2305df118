# SPDX-License-Identifier: Apache-2.0
# matmul_tile.s - the smallest complete job: one weight tile.
#
#   OUT = requant(X . W)     X: 16 x N int8, W: N x N int8, OUT: 16 x N int8
#
# Valid for every array size N (rows are N bytes). Host memory (tests/device/firmware_test.cpp
# fills it; docs/tpusim.md shows how to run it with tpusim):
#   0x00010000  X      16 rows of N bytes
#   0x00020000  W      one N x N tile, row-major: byte k*N + n = W[k][n]
#   0x00030000  QUANT  one quantization slot image, 12*N bytes: bias[N], mult[N], misc[N] (int32)
#   0x00040000  OUT    16 rows of N bytes (written)

        read_host    dest=param addr=0 rows=12 host=0x30000   ; slot 0
        read_weights tiles=1 host=0x20000
        read_host    ub=0 rows=16 host=0x10000                 ; X -> UB 0..15
        matmul       ub=0 acc=0 inner=16 switch                ; ACC 0..15 = X . W
        activate     acc=0 ub=16 width=16 height=1 slot=0 func=identity
        write_host   ub=16 rows=16 host=0x40000
        halt
