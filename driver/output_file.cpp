// SPDX-License-Identifier: Apache-2.0
// OutputFile (output_file.h).
#include "output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <system_error>

namespace tpu {

namespace fs = std::filesystem;

namespace {

// Temporaries not yet committed, as fixed buffers so that a signal handler can unlink them.
constexpr int kSlots = 32;
constexpr size_t kPathMax = 4096;
char g_pending[kSlots][kPathMax];
std::atomic<bool> g_used[kSlots];

int register_pending(const std::string& temp) {
  if (temp.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (g_used[i].compare_exchange_strong(expected, true)) {
      std::memcpy(g_pending[i], temp.c_str(), temp.size() + 1);
      return i;
    }
  }
  return -1;  // more than kSlots at once: still removed by the destructor, not by a signal
}

void unregister_pending(int slot) {
  if (slot >= 0) g_used[slot].store(false);
}

std::atomic<unsigned> g_counter{0};

}  // namespace

void remove_pending_output_files() noexcept {
  for (int i = 0; i < kSlots; ++i) {
    if (g_used[i].load()) ::unlink(g_pending[i]);
  }
}

void check_not_directory(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (path != "-" && fs::is_directory(path, ec)) {
    throw std::runtime_error((what.empty() ? "" : what + " ") + path +
                             ": is a directory (expected a file)");
  }
}

OutputFile::OutputFile(std::string path, std::string option)
    : path_(std::move(path)), option_(std::move(option)) {
  if (path_.empty())
    throw std::runtime_error(option_ + (option_.empty() ? "" : " ") +
                             "'': an empty path (expected a file name)");
  if (is_stdout()) return;
  check_not_directory(path_, option_);
  // Write through a symbolic link to the file it names (renaming over the link would replace it).
  std::error_code ec;
  dest_ = path_;
  if (fs::is_symlink(path_, ec)) {
    const fs::path target = fs::weakly_canonical(path_, ec);
    if (!ec) dest_ = target.string();
  }
  // A device or a pipe (/dev/null, /dev/stdout, a FIFO) cannot be replaced: written directly.
  const fs::file_status st = fs::status(dest_, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    direct_ = true;
    file_ = std::make_unique<std::ofstream>(dest_, std::ios::binary | std::ios::trunc);
    if (!*file_) {
      throw std::runtime_error(what() + ": cannot open for writing (" + std::strerror(errno) + ")");
    }
    return;
  }
  const fs::path dest(dest_);
  const fs::path dir = dest.has_parent_path() ? dest.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    throw std::runtime_error(what() + ": cannot write: directory " + dir.string() +
                             " does not exist (expected a path in an existing directory)");
  }
  temp_ = (dir / ("." + dest.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                  std::to_string(g_counter++)))
              .string();
  slot_ = register_pending(temp_);
  file_ = std::make_unique<std::ofstream>(temp_, std::ios::binary | std::ios::trunc);
  if (!*file_) {
    const int err = errno;
    discard();
    throw std::runtime_error(what() + ": cannot write in " + dir.string() + " (" +
                             std::strerror(err) + "; expected a writable directory)");
  }
}

OutputFile::~OutputFile() {
  if (!done_) discard();
}

std::string OutputFile::what() const { return option_.empty() ? path_ : option_ + " " + path_; }

std::ostream& OutputFile::stream() {
  if (is_stdout()) return stdout_buf_;
  return *file_;
}

void OutputFile::discard() {
  done_ = true;
  if (file_) file_->close();
  if (!temp_.empty()) ::unlink(temp_.c_str());
  unregister_pending(slot_);
  slot_ = -1;
}

bool OutputFile::commit(bool require_temp) {
  if (done_)
    throw std::logic_error("OutputFile::commit: " + path_ + " already committed or discarded");
  if (is_stdout()) {
    done_ = true;
    const std::string s = stdout_buf_.str();
    std::cout.write(s.data(), std::streamsize(s.size()));
    std::cout.flush();
    if (!std::cout) throw std::runtime_error(what() + ": write error on standard output");
    return true;
  }
  file_->flush();
  const bool ok = bool(*file_);
  const int err = errno;
  file_->close();
  if (direct_) {
    done_ = true;
    if (!ok || file_->fail())
      throw std::runtime_error(what() + ": write error (" + std::strerror(err) + ")");
    return true;
  }
  if (!ok || file_->fail()) {
    discard();
    throw std::runtime_error(what() + ": write error (" + std::strerror(err) +
                             "); the file was left as it was");
  }
  std::error_code ec;
  if (!require_temp && fs::file_size(temp_, ec) == 0) {  // the writer produced nothing
    discard();
    return false;
  }
  // Keep the permissions of a file being replaced.
  struct stat st {};
  if (::stat(dest_.c_str(), &st) == 0) ::chmod(temp_.c_str(), st.st_mode & 07777);
  if (std::rename(temp_.c_str(), dest_.c_str()) != 0) {
    const int rerr = errno;
    discard();
    throw std::runtime_error(what() + ": cannot replace the file (" + std::strerror(rerr) +
                             "); it was left as it was");
  }
  done_ = true;
  unregister_pending(slot_);
  slot_ = -1;
  return true;
}

void write_file_atomically(const std::string& path, const std::string& bytes,
                           const std::string& option) {
  OutputFile f(path, option);
  f.write(bytes);
  f.commit();
}

namespace {

// The path with every symbolic link resolved (also of directories that exist above a file that
// does not exist yet), absolute and normalized.
fs::path resolved(const std::string& p) {
  std::error_code ec;
  fs::path a = fs::absolute(p, ec);
  if (ec) a = p;
  fs::path c = fs::weakly_canonical(a, ec);
  return ec ? a.lexically_normal() : c;
}

bool same_file(const std::string& a, const std::string& b) {
  if (resolved(a) == resolved(b)) return true;
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec) && !ec;
}

// `p` lies inside directory `dir` (both resolved).
bool inside(const fs::path& p, const fs::path& dir) {
  auto d = dir.begin(), q = p.begin();
  for (; d != dir.end(); ++d, ++q) {
    if (d->empty()) continue;  // a trailing separator
    if (q == p.end() || *q != *d) return false;
  }
  return q != p.end();
}

std::string named(const std::string& option, const std::string& path) {
  return option.empty() ? path : option + " " + path;
}

}  // namespace

RunPaths& RunPaths::input(const std::string& option, const std::string& path) {
  if (!path.empty() && path != "-") inputs_.push_back({option, path});
  return *this;
}

RunPaths& RunPaths::output(const std::string& option, const std::string& path) {
  if (path.empty() || path == "-") return *this;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st) && !fs::is_directory(st)) return *this;
  outputs_.push_back({option, path});
  return *this;
}

RunPaths& RunPaths::output_in(const std::string& option, const std::string& dir,
                              const std::string& name) {
  return output(option, (fs::path(dir) / name).string());
}

void RunPaths::check() const {
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Entry& out = outputs_[o];
    const fs::path rout = resolved(out.path);
    for (const Entry& in : inputs_) {
      std::error_code ec;
      if (same_file(out.path, in.path))
        throw std::runtime_error(named(out.option, out.path) + ": is also an input (" +
                                 named(in.option, in.path) +
                                 "); refusing to overwrite it (expected a different output file)");
      if (fs::is_directory(in.path, ec) && inside(rout, resolved(in.path)))
        throw std::runtime_error(named(out.option, out.path) + ": is inside the input directory " +
                                 named(in.option, in.path) +
                                 "; refusing to write there (expected an output outside it)");
    }
    for (size_t p = 0; p < o; ++p) {
      if (same_file(out.path, outputs_[p].path))
        throw std::runtime_error(named(out.option, out.path) + ": is also written by " +
                                 named(outputs_[p].option, outputs_[p].path) +
                                 " (expected a different file for each output)");
    }
  }
}

void check_output_not_input(const std::string& output, const std::string& option,
                            std::initializer_list<std::string> inputs) {
  RunPaths paths;
  for (const std::string& in : inputs) paths.input("", in);
  paths.output(option, output).check();
}

}  // namespace tpu
