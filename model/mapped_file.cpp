#include "model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "model/error.h"

namespace lenscheck {

MappedFile MappedFile::open(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(file, std::string("cannot open: ") + std::strerror(errno));
  struct stat sb {};
  if (::fstat(fd, &sb) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(file, std::string("cannot stat: ") + std::strerror(err));
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd);
    throw InputError(file, "not a regular file");
  }
  MappedFile mapped;
  const size_t size = static_cast<size_t>(sb.st_size);
  if (size == 0) {  // mmap refuses a 0-byte file; there is nothing to map
    ::close(fd);
    return mapped;
  }
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);  // the mapping outlives the descriptor
  if (base == MAP_FAILED) throw InputError(file, std::string("cannot mmap: ") + std::strerror(map_errno));
  mapped.mapping_ = std::shared_ptr<const void>(base, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  mapped.bytes_ = std::span<const std::byte>(static_cast<const std::byte*>(base), size);
  return mapped;
}

}  // namespace lenscheck
