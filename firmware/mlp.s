# SPDX-License-Identifier: Apache-2.0
# mlp.s - a three-layer perceptron; the hidden activations never leave the chip.
#
#   H1  = relu(requant(X  . W1 + b1))    X : 32 x 2N  ->  H1: 32 x 2N
#   H2  = relu(requant(H1 . W2 + b2))    H1: 32 x 2N  ->  H2: 32 x 2N
#   OUT =      requant(H2 . W3 + b3)     H2: 32 x 2N  ->  OUT: 32 x N
#
# All int8. Layouts as in driver/tiled_ops.h (see dense_relu.s). Valid for N up to 64.
#   0x00010000  X      32 rows of 2N bytes, row-major
#   0x00020000  W1     4 tiles (t,j) = (0,0) (1,0) (0,1) (1,1)
#   0x00024000  W2     4 tiles, same order
#   0x00028000  W3     2 tiles (t,j) = (0,0) (1,0)
#   0x00030000  QUANT  5 slot images: layer 1 blocks 0, 1; layer 2 blocks 0, 1; layer 3
#   0x00040000  OUT    32 rows of N bytes (written)
#
# UB: X at 0..63 (row 2r + t), H1 at 100..163, H2 at 200..263, OUT at 300..331.
# ACC: output blocks alternate between rows 0..31 and 64..95.
# At most WFifoTiles + 2 = 6 weight tiles may wait, so the next layer's tiles are requested
# once two of the current layer's have been consumed.

        read_host    dest=param addr=0 rows=60 host=0x30000    ; slots 0..4
        read_weights tiles=4 host=0x20000                       ; W1
        read_host    ub=0 rows=64 host=0x10000                  ; X
layer1:
        matmul       ub=0 acc=0 inner=1 outer=32 outer_stride=2 switch
        matmul       ub=1 acc=0 inner=1 outer=32 outer_stride=2 switch acc
        read_weights tiles=4 host=0x24000                       ; W2: 2 + 4 tiles wait
        matmul       ub=0 acc=64 inner=1 outer=32 outer_stride=2 switch
        activate     acc=0 ub=100 width=1 height=32 ub_stride=2 slot=0 func=relu
        matmul       ub=1 acc=64 inner=1 outer=32 outer_stride=2 switch acc
        activate     acc=64 ub=101 width=1 height=32 ub_stride=2 slot=1 func=relu
layer2:
        matmul       ub=100 acc=0 inner=1 outer=32 outer_stride=2 switch
        matmul       ub=101 acc=0 inner=1 outer=32 outer_stride=2 switch acc
        read_weights tiles=2 host=0x28000                       ; W3: 2 + 2 tiles wait
        matmul       ub=100 acc=64 inner=1 outer=32 outer_stride=2 switch
        activate     acc=0 ub=200 width=1 height=32 ub_stride=2 slot=2 func=relu
        matmul       ub=101 acc=64 inner=1 outer=32 outer_stride=2 switch acc
        activate     acc=64 ub=201 width=1 height=32 ub_stride=2 slot=3 func=relu
layer3:
        matmul       ub=200 acc=0 inner=1 outer=32 outer_stride=2 switch
        matmul       ub=201 acc=0 inner=1 outer=32 outer_stride=2 switch acc
        activate     acc=0 ub=300 width=32 height=1 slot=4 func=identity
        write_host   ub=300 rows=32 host=0x40000
        halt
