//===- Diagnostic.h - errors, hints and status lines ------------*- C++ -*-===//
//
// Part of oxide. Every failure of `cargo oxide` is reported the same way:
//
//   error: <what went wrong>
//   hint: <what to do next>
//
// The pure parts of the tool (argument parsing, manifest reading, project
// discovery) return an Expected<T> carrying such an Error instead of printing,
// so they can be unit tested and so the caller decides the exit code.
//
//===----------------------------------------------------------------------===//

#ifndef OXIDE_CLI_DIAGNOSTIC_H
#define OXIDE_CLI_DIAGNOSTIC_H

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace oxide::cli {

/// A user-facing failure: one line saying what went wrong and one saying what
/// to do about it. Both are plain text; printing adds the prefixes.
struct Error {
  std::string Message;
  std::string Hint;
};

/// A value or an Error. A small stand-in for std::expected (C++23), which the
/// C++20 toolchains we support do not all have.
template <typename T> class Expected {
public:
  Expected(T Value) : Storage(std::move(Value)) {}
  Expected(Error E) : Storage(std::move(E)) {}

  explicit operator bool() const { return Storage.index() == 0; }

  T &operator*() {
    assert(*this && "dereferencing an Expected that holds an error");
    return std::get<0>(Storage);
  }
  const T &operator*() const {
    assert(*this && "dereferencing an Expected that holds an error");
    return std::get<0>(Storage);
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }

  const Error &error() const {
    assert(!*this && "asking for the error of an Expected that holds a value");
    return std::get<1>(Storage);
  }

private:
  std::variant<T, Error> Storage;
};

/// Prints `error: ...` and, when present, `hint: ...` to stderr.
void printError(const Error &E);

/// Prints `warning: ...` to stderr.
void printWarning(const std::string &Message);

/// Prints a cargo-style status line to stderr: the verb right-aligned in a
/// 12-column field and highlighted, as cargo prints `Compiling` / `Finished`,
/// so our lines sit naturally between cargo's own.
void printStatus(const std::string &Verb, const std::string &Message);

/// Whether stderr / stdout should be coloured: a terminal, NO_COLOR unset, and
/// CARGO_TERM_COLOR (which cargo users already set) not `never`.
bool useColorOnStderr();
bool useColorOnStdout();

/// ANSI helpers; they return the text unchanged when \p Enabled is false.
std::string green(const std::string &Text, bool Enabled);
std::string red(const std::string &Text, bool Enabled);
std::string bold(const std::string &Text, bool Enabled);

} // namespace oxide::cli

#endif // OXIDE_CLI_DIAGNOSTIC_H
