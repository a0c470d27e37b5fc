#pragma once
// The loaders under test take a path; a memfd holds each fuzz input as a file without touching disk.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace lenscheck::fuzz {

class MemoryFile {
 public:
  MemoryFile() : fd_(::memfd_create("lenscheck-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) std::abort();
  }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;
  ~MemoryFile() { ::close(fd_); }

  // Replaces the file's contents; the path opens the same file anew, as the loaders do.
  std::filesystem::path write(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    for (size_t done = 0; done < size;) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    return path();
  }
  std::filesystem::path path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  int fd_;
};

// A broken invariant: crash, so that libFuzzer keeps the input.
inline void require(bool holds) {
  if (!holds) __builtin_trap();
}

}  // namespace lenscheck::fuzz
