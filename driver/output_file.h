// SPDX-License-Identifier: Apache-2.0
// OutputFile: write a file so that readers only ever see the old file or the complete new one.
//
// The bytes go to a temporary file next to the destination (same directory, so the final
// rename is atomic); commit() flushes, closes and renames it over the destination. If commit()
// is never reached (an exception, a failed run) the destructor removes the temporary file and
// the destination is untouched: no 0-byte or half-written file is ever left behind. A process
// stopped by a signal removes its temporaries too when its handler calls
// remove_pending_output_files() (async-signal-safe).
//
//   tpu::OutputFile out(path);          // throws "PATH: is a directory", "PATH: cannot write ..."
//   out.stream() << text;               // or out.write(bytes), or let a library write temp_path()
//   out.commit();                       // throws "PATH: write error (...)" and leaves PATH as it
//   was
//
// The path "-" means standard output (written at commit(); nothing is written on failure). An
// existing path that is not a regular file (/dev/null, /dev/stdout, a FIFO) is written in place.
// RunPaths refuses an output path that names one of the inputs (the same file through any
// link, or a file inside an input directory), so `asm x.s -o x.s` cannot destroy its source.
#pragma once

#include <fstream>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace tpu {

class OutputFile {
 public:
  // Opens a temporary file for `path` ("-": standard output). `option` names where the path
  // came from ("-o", "--report") for messages; may be empty. Throws std::runtime_error.
  explicit OutputFile(std::string path, std::string option = "");
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  void write(const std::string& bytes) {
    stream().write(bytes.data(), std::streamsize(bytes.size()));
  }
  // The temporary file, for writers that open a path themselves (a VCD): they must have closed
  // it before commit(). Empty for standard output; the device itself for a device or pipe.
  const std::string& temp_path() const { return direct_ ? dest_ : temp_; }
  const std::string& path() const { return path_; }
  bool is_stdout() const { return path_ == "-"; }
  // Makes the new contents visible under path(). Throws std::runtime_error on failure (the
  // destination is then unchanged). `require_temp` false: if temp_path() is still empty (a
  // writer that had nothing to write), discard it, leave the destination untouched and return
  // false.
  bool commit(bool require_temp = true);
  // Throws the temporary away now (as the destructor does).
  void discard();

 private:
  std::string what() const;  // "--report PATH" or "PATH"
  std::string path_, option_, dest_, temp_;
  std::unique_ptr<std::ofstream> file_;
  std::ostringstream stdout_buf_;
  int slot_ = -1;        // in the signal-safe registry of temporaries
  bool direct_ = false;  // a device or pipe (/dev/null, a FIFO): written in place
  bool done_ = false;
};

// Writes bytes to `path` through an OutputFile (all or nothing).
void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& option = "");

// The input and output paths of one run, checked together before anything runs (the one
// mechanism every tpusim subcommand uses). check() refuses, naming both options and paths:
//   * an output that is an input: the same file, compared after resolving symbolic links
//     (of the file and of every directory above it) and by device and inode (hard links);
//   * an output inside an input directory (a directory the run reads: a data set, a test
//     directory, a directory of calibration tensors);
//   * two outputs that are the same file.
// Outputs are files: the option's own path, or each file an output directory will create
// (output_in). "-" (standard output / input) and empty paths are skipped, and so are outputs
// that exist and are neither regular files nor directories (/dev/null, a FIFO: written in
// place, nothing is replaced).
class RunPaths {
 public:
  // A file or directory the run reads. `option` names it in messages ("--model", "--input x").
  RunPaths& input(const std::string& option, const std::string& path);
  // A file the run writes.
  RunPaths& output(const std::string& option, const std::string& path);
  // The file DIR/NAME that output directory `dir` (given by `option`) will hold.
  RunPaths& output_in(const std::string& option, const std::string& dir, const std::string& name);
  // Throws std::runtime_error("<option> <output>: is also an input (<option> <input>); refusing
  // to overwrite it ..."), or "... is inside the input directory ..." / "... is also written
  // by ...".
  void check() const;

 private:
  struct Entry {
    std::string option, path;
  };
  std::vector<Entry> inputs_, outputs_;
};

// RunPaths with one output and the given inputs (no option names for them).
void check_output_not_input(const std::string& output, const std::string& option,
                            std::initializer_list<std::string> inputs);

// Throws std::runtime_error("PATH: is a directory") when `path` names a directory; `what` is
// put in front ("--model", "file=") when not empty. For inputs, before opening them.
void check_not_directory(const std::string& path, const std::string& what = "");

// Removes every temporary file of an OutputFile that has not been committed or discarded.
// Async-signal-safe (unlink only): for SIGINT/SIGTERM handlers.
void remove_pending_output_files() noexcept;

}  // namespace tpu
