//===- Diagnostic.cpp - errors, hints and status lines --------------------===//
//
// Part of oxide. See Diagnostic.h.
//
//===----------------------------------------------------------------------===//

#include "Diagnostic.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <unistd.h>

namespace oxide::cli {

static bool useColorOn(int Fd) {
  if (const char *Term = std::getenv("CARGO_TERM_COLOR")) {
    if (std::strcmp(Term, "always") == 0)
      return true;
    if (std::strcmp(Term, "never") == 0)
      return false;
  }
  if (const char *NoColor = std::getenv("NO_COLOR"); NoColor && *NoColor)
    return false;
  return isatty(Fd) != 0;
}

bool useColorOnStderr() { return useColorOn(STDERR_FILENO); }
bool useColorOnStdout() { return useColorOn(STDOUT_FILENO); }

static std::string wrap(const char *Code, const std::string &Text,
                        bool Enabled) {
  if (!Enabled)
    return Text;
  return std::string("\x1b[") + Code + "m" + Text + "\x1b[0m";
}

std::string green(const std::string &Text, bool Enabled) {
  return wrap("1;32", Text, Enabled);
}
std::string red(const std::string &Text, bool Enabled) {
  return wrap("1;31", Text, Enabled);
}
std::string bold(const std::string &Text, bool Enabled) {
  return wrap("1", Text, Enabled);
}

void printError(const Error &E) {
  bool Color = useColorOnStderr();
  // Flush stdout first so that our message lands after anything the tool
  // already printed there (PTX listings, the stage table).
  std::cout.flush();
  std::cerr << red("error", Color) << bold(": " + E.Message, Color) << "\n";
  if (!E.Hint.empty())
    std::cerr << wrap("1;36", "hint", Color) << ": " << E.Hint << "\n";
}

void printWarning(const std::string &Message) {
  bool Color = useColorOnStderr();
  std::cout.flush();
  std::cerr << wrap("1;33", "warning", Color) << ": " << Message << "\n";
}

void printStatus(const std::string &Verb, const std::string &Message) {
  bool Color = useColorOnStderr();
  std::string Padded =
      Verb.size() < 12 ? std::string(12 - Verb.size(), ' ') + Verb : Verb;
  std::cout.flush();
  std::cerr << green(Padded, Color) << " " << Message << "\n";
}

} // namespace oxide::cli
