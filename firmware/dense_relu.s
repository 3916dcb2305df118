# SPDX-License-Identifier: Apache-2.0
# dense_relu.s - a dense layer with bias and ReLU, two K tiles by two output blocks.
#
#   OUT = relu(requant(X . W + bias))   X: 24 x 2N int8, W: 2N x 2N int8, OUT: 24 x 2N int8
#
# The layouts are those of driver/tiled_ops.h, so tpu::pack_rows / pack_weights / pack_quant
# prepare the inputs and tpu::reference_matmul checks the output. Valid for every N.
#   0x00010000  X      24 rows of 2N bytes, row-major (UB row 2r + t holds X[r][tN .. tN+N-1])
#   0x00020000  W      4 tiles of N x N in consumption order: (t,j) = (0,0) (1,0) (0,1) (1,1),
#                      tile (t,j) byte k*N + n = W[tN + k][jN + n]
#   0x00030000  QUANT  2 slot images (output columns 0..N-1, then N..2N-1), 12*N bytes each
#   0x00040000  OUT    24 rows of 2N bytes, row-major (written)
#
# Schedule: output block j accumulates its two K tiles into its own ACC region (0 or 32), and
# its activate is placed after the next block's first matmul, so the MXU never waits for it.

        read_host    dest=param addr=0 rows=24 host=0x30000    ; slots 0, 1
        read_weights tiles=4 host=0x20000
        read_host    ub=0 rows=48 host=0x10000                  ; X -> UB 0..47
block0:
        matmul       ub=0 acc=0 inner=1 outer=24 outer_stride=2 switch
        matmul       ub=1 acc=0 inner=1 outer=24 outer_stride=2 switch acc
block1:
        matmul       ub=0 acc=32 inner=1 outer=24 outer_stride=2 switch
        activate     acc=0 ub=100 width=1 height=24 ub_stride=2 slot=0 func=relu    ; row r -> UB 100 + 2r
        matmul       ub=1 acc=32 inner=1 outer=24 outer_stride=2 switch acc
        activate     acc=32 ub=101 width=1 height=24 ub_stride=2 slot=1 func=relu   ; row r -> UB 101 + 2r
        write_host   ub=100 rows=48 host=0x40000
        halt
