#pragma once
// Errors the backend reports to its callers. Every failure that a user can cause (bad files,
// bad parameters, no GPU, out of GPU memory) becomes one of these, never an abort.
#include <stdexcept>
#include <string>

namespace cumulus {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// `path` as text that can be shown anywhere: bytes that are not UTF-8 become \xNN, followed by
// a note saying so (a name in another encoding would otherwise print as garbage or break JSON).
std::string printable_path(const std::string& path);

// What the system's `error` (an errno value) means for `path`, in words: a symbolic link loop,
// a path or name too long for the system, a missing folder on the way, permission, ...
std::string path_error(const std::string& path, int error);

// A file could not be read or written; the message names the file and the problem.
class IoError : public Error {
 public:
  IoError(const std::string& path, const std::string& problem)
      : Error(printable_path(path) + ": " + problem), path_(path), problem_(problem) {}
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string path_;
  std::string problem_;
};

// A parameter is outside what the algorithm accepts.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// The GPU could not be used (no device, driver error, out of memory).
class GpuError : public Error {
 public:
  using Error::Error;
};

// What every GPU entry of a build without CUDA throws: "<what> needs a GPU, and this build ...".
[[noreturn]] inline void throw_no_cuda(const std::string& what) {
  throw GpuError(what +
                 " needs a GPU, and this build has no CUDA support (nvcc was not found when it was "
                 "configured)");
}

// A long run was stopped by its caller (through a progress callback); nothing was changed.
class Cancelled : public Error {
 public:
  using Error::Error;
};

}  // namespace cumulus
