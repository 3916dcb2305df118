// SPDX-License-Identifier: Apache-2.0
// A temporary directory of this test process: <system temp>/tpu-rtl-<pid>-<random>, created on
// first use, removed with everything in it when the process exits. Tests put every file they
// write under the system temp folder here, so two test runs on one machine (two clones, a
// developer's run beside CI, parallel ctest) never share a file name. gtest_discover_tests
// runs each test case in its own process, so each test case gets its own directory.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

namespace test_support {

namespace detail {
inline std::string& temp_dir_path() {
  static std::string path;
  return path;
}
inline void remove_temp_dir() {
  std::error_code ec;
  if (!temp_dir_path().empty()) std::filesystem::remove_all(temp_dir_path(), ec);
}
}  // namespace detail

// The directory, with a trailing '/' (as ::testing::TempDir(), which it replaces).
inline const std::string& temp_dir() {
  std::string& path = detail::temp_dir_path();
  if (path.empty()) {
    std::string base = ::testing::TempDir();  // $TEST_TMPDIR or the system temp folder
    if (!base.empty() && base.back() != '/') base += '/';
    std::random_device rd;
    for (int attempt = 0; attempt < 100 && path.empty(); ++attempt) {
      const std::string candidate =
          base + "tpu-rtl-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 1000000);
      std::error_code ec;
      if (std::filesystem::create_directory(candidate, ec) && !ec) path = candidate + "/";
    }
    if (path.empty()) throw std::runtime_error("cannot create a temporary directory in " + base);
    std::atexit(detail::remove_temp_dir);
  }
  return path;
}

}  // namespace test_support
