// Test node: prints LINES numbered lines on stdout and on stderr, then a last line without a
// newline on stdout, and exits with EXIT_CODE. Each line goes out in two writes with a pause
// between, so a launcher that forwarded bytes instead of lines would mix lines of different ranks.
//
// Usage: print_lines LINES EXIT_CODE

#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace {

void Write(int fd, const std::string& text) {
  std::string_view rest = text;
  while (!rest.empty()) {
    ssize_t n = ::write(fd, rest.data(), rest.size());
    if (n <= 0) std::exit(90);
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
}

void Pause() {
  timespec ts{0, 50'000};
  ::nanosleep(&ts, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 99;
  int lines = std::atoi(argv[1]);
  int code = std::atoi(argv[2]);
  const char* rank_env = std::getenv("LMDX_RANK");
  std::string rank = rank_env ? rank_env : "?";
  std::string padding(40, 'x');
  for (int i = 0; i < lines; ++i) {
    for (auto [fd, name] : {std::pair{1, "out"}, std::pair{2, "err"}}) {
      Write(fd, "rank " + rank + " " + name + " " + std::to_string(i) + " ");
      Pause();
      Write(fd, padding + "\n");
    }
  }
  Write(1, "rank " + rank + " tail");
  return code;
}
