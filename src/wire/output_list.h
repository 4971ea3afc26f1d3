// OutputList: the bytes of one or more messages, ready for writev(). Small
// parts are copied into a reusable scratch buffer; large tensor bytes are
// referenced in place (zero copy). Reused across calls: after warm-up nothing
// is allocated.
#ifndef MLBRIDGE_SRC_WIRE_OUTPUT_LIST_H
#define MLBRIDGE_SRC_WIRE_OUTPUT_LIST_H

#include <sys/uio.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace mlbridge {
namespace wire {

class OutputList {
 public:
  void clear() {
    scratch_.clear();
    segs_.clear();
    total_ = 0;
  }
  // Copies bytes into the scratch buffer.
  void append(const void* p, size_t n) {
    if (n == 0) return;
    extendScratchSeg(n);
    scratch_.append(static_cast<const char*>(p), n);
  }
  void append(std::string_view s) { append(s.data(), s.size()); }
  void appendByte(char c) { append(&c, 1); }
  // Direct access for formatters that write into the scratch buffer; call
  // commitScratch() with the number of bytes they appended.
  std::string& scratch() { return scratch_; }
  void commitScratch(size_t n) {
    if (n == 0) return;
    size_t start = scratch_.size() - n;
    if (!segs_.empty() && segs_.back().inScratch && segs_.back().offset + segs_.back().len == start) {
      segs_.back().len += n;
    } else {
      segs_.push_back(Seg{true, start, nullptr, n});
    }
    total_ += n;
  }
  // References caller memory that must stay valid until the bytes are written.
  void appendRef(const void* p, size_t n) {
    if (n == 0) return;
    segs_.push_back(Seg{false, 0, p, n});
    total_ += n;
  }
  // Reserves `n` scratch bytes to be filled later (e.g. a length prefix);
  // returns their scratch offset.
  size_t reserve(size_t n) {
    extendScratchSeg(n);
    size_t off = scratch_.size();
    scratch_.append(n, '\0');
    return off;
  }
  void patch(size_t scratchOffset, const void* p, size_t n) { std::memcpy(&scratch_[scratchOffset], p, n); }

  size_t totalBytes() const { return total_; }
  // iovecs for writev; valid until the next mutation.
  const std::vector<iovec>& iovecs() {
    iov_.clear();
    for (const Seg& s : segs_)
      iov_.push_back(iovec{s.inScratch ? const_cast<char*>(scratch_.data() + s.offset) : const_cast<void*>(s.ptr), s.len});
    return iov_;
  }
  // All bytes in one string (tests, tools).
  std::string flatten() const {
    std::string out;
    out.reserve(total_);
    for (const Seg& s : segs_)
      out.append(s.inScratch ? scratch_.data() + s.offset : static_cast<const char*>(s.ptr), s.len);
    return out;
  }

 private:
  struct Seg {
    bool inScratch;
    size_t offset;    // into scratch_ when inScratch
    const void* ptr;  // otherwise
    size_t len;
  };
  void extendScratchSeg(size_t n) {
    size_t start = scratch_.size();
    if (!segs_.empty() && segs_.back().inScratch && segs_.back().offset + segs_.back().len == start)
      segs_.back().len += n;
    else
      segs_.push_back(Seg{true, start, nullptr, n});
    total_ += n;
  }

  std::string scratch_;
  std::vector<Seg> segs_;
  std::vector<iovec> iov_;
  size_t total_ = 0;
};

}  // namespace wire
}  // namespace mlbridge

#endif  // MLBRIDGE_SRC_WIRE_OUTPUT_LIST_H
