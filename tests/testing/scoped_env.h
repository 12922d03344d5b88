#ifndef LMDX_TESTS_TESTING_SCOPED_ENV_H_
#define LMDX_TESTS_TESTING_SCOPED_ENV_H_

#include <stdlib.h>

#include <string>

namespace lmdx::testing {

// Sets an environment variable for the jobs a test starts (they inherit it), and restores what
// it was when the scope ends.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = ::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace lmdx::testing

#endif  // LMDX_TESTS_TESTING_SCOPED_ENV_H_
