#pragma once
// Host-side errors. Misuse by a caller throws orrery::Error naming the field and
// the expected value; invariants use ORRERY_ASSERT, which validation builds
// (ORRERY_VALIDATE) keep and release builds compile out.

#include <stdexcept>
#include <string>

namespace orrery {

/// Thrown for bad input from a user (shape, dtype, range, file contents).
/// The simulator's state is unchanged when it is thrown.
class Error : public std::runtime_error {
  public:
    explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Thrown for a wrong type of argument (the Python binding maps it to TypeError).
class TypeError : public Error {
  public:
    explicit TypeError(const std::string& what) : Error(what) {}
};

[[noreturn]] void assert_fail(const char* cond, const char* msg, const char* file, int line);

} // namespace orrery

#if defined(ORRERY_VALIDATE) || !defined(NDEBUG)
#define ORRERY_ASSERT(cond, msg)                                                                                       \
    do {                                                                                                               \
        if (!(cond)) ::orrery::assert_fail(#cond, msg, __FILE__, __LINE__);                                            \
    } while (0)
#else
#define ORRERY_ASSERT(cond, msg) ((void)0)
#endif
