// Names a function across the processes of a job. Every node runs the same executable (and the
// same shared libraries), loaded at addresses of their own, so a function is named by the file
// that holds it and its offset from that file's load address.
#ifndef LMDX_THREADS_FUNCTION_ADDRESS_H_
#define LMDX_THREADS_FUNCTION_ADDRESS_H_

#include <cstdint>
#include <string>

namespace lmdx::threads {

struct PortableFunction {
  std::string object;        // "" for the executable, else the shared library as loaded
  std::uint64_t offset = 0;  // from that object's load address
};

// Throws lmdx::Error(LMDX_ERR_INVALID_ARGUMENT) when address lies in no loaded object.
PortableFunction Describe(const void* function);
// The address of the same function in this process; throws when the object is not loaded here.
void* Locate(const PortableFunction& function);
// The function's name from its file's symbol table (demangled), or "" when the file has none for
// it (a stripped binary). Reads the file: meant for messages, not for every call.
std::string SymbolName(const PortableFunction& function);

}  // namespace lmdx::threads

#endif  // LMDX_THREADS_FUNCTION_ADDRESS_H_
