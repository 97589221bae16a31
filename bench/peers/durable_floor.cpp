// The least a durable intake can do, as a yardstick for bench/intake.sh: a bare
// HTTP/1.1 keep-alive server (one thread per connection, no framework, no JSON, no
// database) that appends each POST body to a log file and answers 202 only after an
// fdatasync that began after the append (group commit: one thread flushes at a time,
// for every append made before its flush began; the others wait for it).
// Whatever a real queue does on top (SQLite, indexes, admission, auth, JSON) can only
// be slower; the gap between this and a hello-world is the cost of the disk flush on
// this machine.
//
// Build: g++ -O2 -std=c++17 -pthread -o durable_floor durable_floor.cpp
// Run:   durable_floor <port> <file>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace {

class Log {
 public:
  // The log is a ring of kRing bytes, written (zeros) and flushed once at startup, as
  // SQLite reuses its WAL: an append overwrites blocks already on disk, so a flush
  // carries data only, never a new file size or new blocks.
  static constexpr int64_t kRing = 16 << 20;

  explicit Log(const char* path) : fd_(::open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) {
    if (fd_ < 0) {
      std::perror("open");
      std::exit(1);
    }
    const std::string zeros(1 << 20, '\0');
    for (int64_t at = 0; at < kRing; at += static_cast<int64_t>(zeros.size())) {
      if (::pwrite(fd_, zeros.data(), zeros.size(), at) != static_cast<ssize_t>(zeros.size())) {
        std::perror("pwrite");
        std::exit(1);
      }
    }
    if (::fsync(fd_) != 0) {
      std::perror("fsync");
      std::exit(1);
    }
  }
  // Appends and returns once a flush that began after the append has ended. Appends
  // are written under the lock (a page-cache copy), so a flush covers every append
  // made before it began. Flushes are numbered; an append made during flush n waits
  // for flush n + 1, which the first of its waiters starts as soon as flush n ends.
  // Waiters sleep on the condition variable of the flush they need, so a flush wakes
  // only the appends it covered and one to start the next.
  bool AppendDurably(const std::string& data) {
    std::unique_lock lock(mu_);
    if (end_ + static_cast<int64_t>(data.size()) > kRing) end_ = 0;  // wrap around
    if (::pwrite(fd_, data.data(), data.size(), end_) != static_cast<ssize_t>(data.size())) {
      return false;
    }
    end_ += static_cast<int64_t>(data.size());
    const uint64_t needed = started_ + 1;  // the first flush to begin after this append
    while (done_ < needed) {
      if (!flushing_ && started_ + 1 == needed) {
        flushing_ = true;
        started_ = needed;
        lock.unlock();
        const bool ok = ::fdatasync(fd_) == 0;
        lock.lock();
        flushing_ = false;
        if (!ok) {
          --started_;  // the next waiter tries again
          waiting_[needed % 2].notify_one();
          return false;
        }
        done_ = needed;
        waiting_[needed % 2].notify_all();        // the appends it covered
        waiting_[(needed + 1) % 2].notify_one();  // one of the next flush's, to start it
        return true;
      }
      waiting_[needed % 2].wait(lock);
    }
    return true;
  }

 private:
  int fd_;
  std::mutex mu_;
  std::condition_variable waiting_[2];  // by the parity of the flush waited for
  int64_t end_ = 0;
  uint64_t started_ = 0;  // flushes begun
  uint64_t done_ = 0;     // flushes ended
  bool flushing_ = false;
};

void Serve(int fd, Log& log) {
  const char kReply[] =
      "HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n"
      "{\"id\":1}";
  std::string buf;
  char chunk[16384];
  for (;;) {
    size_t header_end;
    while ((header_end = buf.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) return;
      buf.append(chunk, static_cast<size_t>(n));
    }
    size_t length = 0;
    if (const char* cl = strcasestr(buf.c_str(), "\r\ncontent-length:")) {
      length = std::strtoul(cl + 17, nullptr, 10);
    }
    const size_t total = header_end + 4 + length;
    while (buf.size() < total) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n <= 0) return;
      buf.append(chunk, static_cast<size_t>(n));
    }
    std::string record = buf.substr(header_end + 4, length);
    record += '\n';
    buf.erase(0, total);
    if (!log.AppendDurably(record)) {
      const char kFail[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
      (void)!::write(fd, kFail, sizeof kFail - 1);
      return;
    }
    if (::write(fd, kReply, sizeof kReply - 1) != static_cast<ssize_t>(sizeof kReply - 1)) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s <port> <file>\n", argv[0]);
    return 2;
  }
  static Log log(argv[2]);
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(argv[1])));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listener, 128) != 0) {
    std::perror("listen");
    return 1;
  }
  for (;;) {
    int fd = ::accept(listener, nullptr, nullptr);
    if (fd < 0) continue;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::thread([fd] {
      Serve(fd, log);
      ::close(fd);
    }).detach();
  }
}
