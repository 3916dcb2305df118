# SPDX-License-Identifier: Apache-2.0
nop
.inst 0x2a
halt
