# SPDX-License-Identifier: Apache-2.0
# not ASCII outside a comment (UTF-8 e-acute)
nép
halt
