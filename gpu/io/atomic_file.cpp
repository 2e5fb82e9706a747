#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace cumulus {

namespace {

constexpr std::size_t kBufferBytes = std::size_t(1) << 20;

// Hidden, in the target's folder (a rename never crosses file systems), and unique within this
// host: process id and a counter.
std::string temporary_name_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target(path);
  const std::string name = "." + target.filename().string() + ".cumulus-" +
                           std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".tmp";
  return (target.parent_path() / name).string();
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw IoError(path_, "no file name given");
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = temporary_name_for(path_);
    // 0666 less the umask, as any new file gets; an existing target's mode is kept below.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) {
      const int error = errno;
      temp_.clear();
      fail("creating a file beside it", error);
    }
  }
  struct stat old {};
  if (::stat(path_.c_str(), &old) == 0) ::fchmod(fd_, old.st_mode & 07777);
  buffer_.reserve(kBufferBytes);
}

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  if (buffer_.size() + bytes > kBufferBytes) flush();
  if (bytes >= kBufferBytes) {
    // Large blocks go straight out.
    buffer_.assign(p, bytes);
    flush();
  } else {
    buffer_.append(p, bytes);
  }
}

void AtomicFile::flush() {
  std::size_t done = 0;
  while (done < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail("writing", errno);
    if (n == 0) fail("writing", ENOSPC);
    done += std::size_t(n);
  }
  buffer_.clear();
}

void AtomicFile::commit() {
  flush();
  if (::fsync(fd_) != 0) fail("writing to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing", errno);
  if (std::rename(temp_.c_str(), path_.c_str()) != 0) fail("replacing the old file", errno);
  temp_.clear();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

void AtomicFile::fail(const std::string& step, int error) {
  discard();
  std::string why = std::strerror(error);
  if (error == EFBIG) why += " (the file size limit was reached)";
  throw IoError(path_, "not written: " + step + " failed: " + why +
                           "; the file that was there, if any, is unchanged");
}

}  // namespace cumulus
