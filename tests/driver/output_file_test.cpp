// SPDX-License-Identifier: Apache-2.0
// OutputFile (output_file.h): an output file is replaced by a complete new one or left alone.
#include "output_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Dir {
  std::string path;
  explicit Dir(const std::string& name) : path(test_support::temp_dir() + "/" + name) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  std::string operator/(const std::string& f) const { return path + "/" + f; }
  size_t entries() const {
    return size_t(std::distance(fs::directory_iterator(path), fs::directory_iterator()));
  }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(OutputFile, CommitReplacesAndFailureLeavesTheOldFile) {
  const Dir d("output_file_commit");
  std::ofstream(d / "out.txt") << "old";
  {
    tpu::OutputFile f(d / "out.txt");
    f.write("half");
    EXPECT_EQ(slurp(d / "out.txt"), "old");  // nothing visible before commit()
    EXPECT_EQ(d.entries(), 2u);              // the temporary, next to it
    // destroyed without commit(): an exception on the way
  }
  EXPECT_EQ(slurp(d / "out.txt"), "old");
  EXPECT_EQ(d.entries(), 1u);
  {
    tpu::OutputFile f(d / "out.txt");
    f.stream() << "new";
    EXPECT_TRUE(f.commit());
  }
  EXPECT_EQ(slurp(d / "out.txt"), "new");
  EXPECT_EQ(d.entries(), 1u);
  tpu::write_file_atomically(d / "fresh.txt", "fresh");
  EXPECT_EQ(slurp(d / "fresh.txt"), "fresh");
}

TEST(OutputFile, TemporariesRemovedForASignal) {
  const Dir d("output_file_signal");
  tpu::OutputFile f(d / "a.txt");
  f.write("x");
  EXPECT_EQ(d.entries(), 1u);
  tpu::remove_pending_output_files();  // what the SIGINT handler does
  EXPECT_EQ(d.entries(), 0u);
}

TEST(OutputFile, WritesThroughASymlinkAndKeepsPermissions) {
  const Dir d("output_file_link");
  std::ofstream(d / "target.txt") << "old";
  fs::permissions(d / "target.txt",
                  fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink("target.txt", d / "link.txt");
  tpu::write_file_atomically(d / "link.txt", "new");
  EXPECT_TRUE(fs::is_symlink(d / "link.txt"));
  EXPECT_EQ(slurp(d / "target.txt"), "new");
  EXPECT_EQ(fs::status(d / "target.txt").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(OutputFile, Errors) {
  const Dir d("output_file_errors");
  EXPECT_EQ(error_of([&] { tpu::OutputFile f(d.path, "-o"); }),
            "-o " + d.path + ": is a directory (expected a file)");
  EXPECT_EQ(error_of([&] { tpu::OutputFile f("", "-o"); }),
            "-o '': an empty path (expected a file name)");
  EXPECT_EQ(error_of([&] { tpu::OutputFile f(d / "no/such/dir.txt", "--timeline"); }),
            "--timeline " + (d / "no/such/dir.txt") + ": cannot write: directory " +
                (d / "no/such") + " does not exist (expected a path in an existing directory)");
  std::ofstream(d / "in.s") << "nop";
  fs::create_hard_link(d / "in.s", d / "alias.s");
  EXPECT_EQ(error_of([&] { tpu::check_output_not_input(d / "alias.s", "-o", {d / "in.s"}); }),
            "-o " + (d / "alias.s") + ": is also an input (" + (d / "in.s") +
                "); refusing to overwrite it (expected a different output file)");
  EXPECT_EQ(error_of([&] { tpu::check_output_not_input(d / "new.bin", "-o", {d / "in.s"}); }),
            "(no error)");
  EXPECT_EQ(error_of([&] { tpu::check_output_not_input("-", "-o", {"-"}); }), "(no error)");
  EXPECT_EQ(error_of([&] { tpu::check_not_directory(d.path, "--model"); }),
            "--model " + d.path + ": is a directory (expected a file)");
}

// RunPaths: one check of every input and output path of a run (links resolved, files an
// output directory will create, outputs inside input directories, two outputs on one file).
TEST(RunPaths, OutputsNeverInputs) {
  const Dir d("run_paths");
  fs::create_directories(d / "data/sub");
  std::ofstream(d / "data/sub/in.npy") << "x";
  std::ofstream(d / "model.onnx") << "m";
  fs::create_directory_symlink(d / "data", d / "link");
  fs::create_symlink(d / "model.onnx", d / "model_link.onnx");
  auto check = [](tpu::RunPaths& p) { return error_of([&] { p.check(); }); };
  {  // an output directory's file that is an input, reached through a symbolic link
    tpu::RunPaths p;
    p.input("--input", d / "data/sub/in.npy").output_in("--output-dir", d / "link/sub", "in.npy");
    EXPECT_EQ(check(p), "--output-dir " + (d / "link/sub/in.npy") + ": is also an input (--input " +
                            (d / "data/sub/in.npy") +
                            "); refusing to overwrite it (expected a different output file)");
  }
  {  // a file through a symbolic link to it
    tpu::RunPaths p;
    p.input("--model", d / "model.onnx").output("--timeline", d / "model_link.onnx");
    EXPECT_NE(check(p).find("is also an input (--model"), std::string::npos);
  }
  {  // an output inside an input directory, also one that does not exist yet
    tpu::RunPaths p;
    p.input("--test-dir", d / "data").output_in("--output-dir", d / "data/new", "y.npy");
    EXPECT_EQ(check(p), "--output-dir " + (d / "data/new/y.npy") +
                            ": is inside the input directory --test-dir " + (d / "data") +
                            "; refusing to write there (expected an output outside it)");
  }
  {  // two outputs on one file
    tpu::RunPaths p;
    p.output("--hostmem-out", d / "o.mem").output("--vcd", d / "./o.mem");
    EXPECT_EQ(check(p), "--vcd " + (d / "./o.mem") + ": is also written by --hostmem-out " +
                            (d / "o.mem") + " (expected a different file for each output)");
  }
  {  // what never conflicts: "-", an empty path, a device, a sibling of an input directory
    tpu::RunPaths p;
    p.input("", "-").input("--data", d / "data").input("--model", d / "model.onnx");
    p.output("-o", "-").output("--vcd", "").output("--timeline", "/dev/null");
    p.output("--hostmem-out", "/dev/null").output_in("--report", d / "data2", "report.json");
    p.output("--x", d / "datax");
    EXPECT_EQ(check(p), "(no error)");
  }
}

// A device is written in place, never replaced by a regular file (tpusim run as root with
// --hostmem-out /dev/null must not turn /dev/null into a file).
TEST(OutputFile, DevicesAreWrittenInPlace) {
  tpu::write_file_atomically("/dev/null", "discarded");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  tpu::OutputFile f("/dev/null");
  EXPECT_EQ(f.temp_path(), "/dev/null");  // a VCD writer opens the device itself
  EXPECT_TRUE(f.commit(/*require_temp=*/false));
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST(OutputFile, DashIsStandardOutput) {
  testing::internal::CaptureStdout();
  {
    tpu::OutputFile f("-");
    EXPECT_TRUE(f.is_stdout());
    EXPECT_EQ(f.temp_path(), "");
    f.write("to stdout\n");
    f.commit();
  }
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "to stdout\n");
  EXPECT_FALSE(fs::exists("-"));
}

}  // namespace
