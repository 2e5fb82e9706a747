#include "io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace cumulus {

namespace {

constexpr std::size_t kBufferBytes = std::size_t(1) << 20;

// The temporary files being written, where a signal handler can find them: fixed slots (no
// allocation), each claimed with an atomic flag. More writes at once than slots are simply not
// listed; their temporaries would survive only a signal that ends the process.
struct UnfinishedWrite {
  std::atomic<bool> used{false};   // claimed by a write
  std::atomic<bool> ready{false};  // `path` is complete
  char path[4096] = {};
};
UnfinishedWrite g_unfinished[16];

int list_unfinished(const std::string& temp) {
  if (temp.size() >= sizeof g_unfinished[0].path) return -1;
  for (int i = 0; i < 16; ++i) {
    bool expected = false;
    if (!g_unfinished[i].used.compare_exchange_strong(expected, true)) continue;
    std::memcpy(g_unfinished[i].path, temp.c_str(), temp.size() + 1);
    g_unfinished[i].ready.store(true);
    return i;
  }
  return -1;
}

void unlist_unfinished(int slot) {
  if (slot < 0) return;
  g_unfinished[slot].ready.store(false);
  g_unfinished[slot].used.store(false);
}

// Hidden, in the target's folder (a rename never crosses file systems), and unique within this
// host: process id and a counter.
std::string temporary_name_for(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target(path);
  // The target's name is cut so that the temporary name stays within NAME_MAX (255 bytes).
  const std::string name = "." + target.filename().string().substr(0, 200) + ".cumulus-" +
                           std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".tmp";
  return (target.parent_path() / name).string();
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), target_(path_) {
  if (path_.empty()) throw IoError(path_, "no file name given");
  // Writing to a symbolic link writes the file it points to (a rename would replace the link).
  struct stat link {};
  if (::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
    if (char* real = ::realpath(path_.c_str(), nullptr)) {
      target_ = real;
      std::free(real);
    } else if (errno != ENOENT) {  // a dangling link is replaced by the new file
      fail("following the symbolic link", errno);
    }
  }
  for (int attempt = 0; fd_ < 0; ++attempt) {
    temp_ = temporary_name_for(target_);
    // 0666 less the umask, as any new file gets; an existing target's mode is kept below.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) {
      const int error = errno;
      temp_.clear();
      fail("creating a file beside it", error);
    }
  }
  slot_ = list_unfinished(temp_);
  struct stat old {};
  if (::stat(target_.c_str(), &old) == 0) ::fchmod(fd_, old.st_mode & 07777);
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
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) fail("replacing the old file", errno);
  temp_.clear();
  unlist_unfinished(slot_);
  slot_ = -1;
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  unlist_unfinished(slot_);
  slot_ = -1;
}

void AtomicFile::fail(const std::string& step, int error) {
  discard();
  std::string why = std::strerror(error);
  if (error == EFBIG || error == ELOOP || error == ENAMETOOLONG || error == EDQUOT)
    why += " (" + path_error(path_, error) + ")";
  throw IoError(path_, "not written: " + step + " failed: " + why +
                           "; the file that was there, if any, is unchanged");
}

void remove_unfinished_writes() noexcept {
  for (auto& w : g_unfinished)
    if (w.ready.load()) ::unlink(w.path);
}

}  // namespace cumulus
