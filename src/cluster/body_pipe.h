#pragma once
// The answer's body on its way from the HTTP transfer (one thread) to the reader that parses
// it (another), so that the answer is parsed as it streams in and never held whole. The
// transfer waits while `capacity` bytes wait to be read; the reader sees them as a stream. A
// reader that stops early (a refused answer) abandons the pipe, which stops the transfer.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <streambuf>
#include <string>

namespace gpureap::cluster {

class BodyPipe {
 public:
  explicit BodyPipe(size_t capacity = size_t{1} << 20) : capacity_(capacity) {}

  // The transfer's side. False once the reader abandoned the pipe: stop receiving.
  bool write(const char* data, size_t n);
  void close();  // no more bytes will come

  // The reader's side: the next bytes into `chunk`; false at the end of the body.
  bool read(std::string& chunk);
  void abandon();  // the reader wants no more

 private:
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> chunks_;
  size_t queued_ = 0;
  bool closed_ = false, abandoned_ = false;
};

// The reader's side of a pipe as a std::streambuf, for a std::istream.
class BodyPipeBuf : public std::streambuf {
 public:
  explicit BodyPipeBuf(BodyPipe& pipe) : pipe_(pipe) {}

 protected:
  int_type underflow() override;

 private:
  BodyPipe& pipe_;
  std::string chunk_;
};

}  // namespace gpureap::cluster
