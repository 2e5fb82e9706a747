#pragma once
// Writing a file whole or not at all. The bytes go to a temporary file in the target's folder;
// every write, the flush to disk and the close are checked, and only then does the temporary
// file replace the target (a rename, atomic within one file system). Any failure leaves the
// target as it was, removes the temporary file and throws IoError naming the target with the
// system's reason (no space left, quota, permission, read-only file system, file too large).
#include <cstddef>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <utility>

namespace cumulus {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  // Without commit() (an exception on the way), the temporary file goes and the target stays.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, std::size_t bytes);  // buffered; flushed by commit()
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Writes what is buffered, syncs it to disk, closes and renames over the target.
  void commit();

 private:
  void flush();
  void discard() noexcept;
  [[noreturn]] void fail(const std::string& step, int error);

  std::string path_;    // as given, for messages
  std::string target_;  // the file replaced: path_, or where the symbolic link path_ points
  std::string temp_;
  int slot_ = -1;  // in the list that remove_unfinished_writes() reads
  int fd_ = -1;
  std::string buffer_;
};

// Removes the temporary files of writes still under way. Async-signal-safe: for a handler of
// SIGINT or SIGTERM that ends the process, so that an interrupted write leaves nothing behind.
void remove_unfinished_writes() noexcept;

// An std::ostream onto an AtomicFile, for writers that format with <<: a failed write throws
// the AtomicFile's IoError out of the << that met it; commit() puts the file in place.
class AtomicOstream : public std::ostream {
 public:
  explicit AtomicOstream(std::string path)
      : std::ostream(nullptr), file_(std::move(path)), to_file_(file_) {
    rdbuf(&to_file_);
    exceptions(std::ios::badbit);
  }
  void commit() {
    flush();
    file_.commit();
  }

 private:
  class ToFile : public std::streambuf {
   public:
    explicit ToFile(AtomicFile& file) : file_(file) {}

   protected:
    int_type overflow(int_type c) override {
      if (!traits_type::eq_int_type(c, traits_type::eof())) {
        const char ch = traits_type::to_char_type(c);
        file_.write(&ch, 1);
      }
      return traits_type::not_eof(c);
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      file_.write(s, std::size_t(n));
      return n;
    }

   private:
    AtomicFile& file_;
  };

  AtomicFile file_;
  ToFile to_file_;
};

}  // namespace cumulus
