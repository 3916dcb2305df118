// SPDX-License-Identifier: Apache-2.0
// libsystemc.so references sc_main (its own main() calls it), so every executable linking
// SystemC must define one. Programs using tpu::sim::Chip have their own main() and never go
// through SystemC's; this weak definition satisfies the linker for them, and a program that
// does want SystemC's main() simply defines a (strong) sc_main of its own.
// The sim CMake targets force this object into the link with -Wl,--undefined=sc_main.
#include <cstdio>

extern "C" __attribute__((weak)) int sc_main(int, char**) {
  std::fprintf(stderr, "tpu_sim: sc_main is not implemented; this program must define main()\n");
  return 1;
}
