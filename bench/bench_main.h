// The main of a bench/ tool: runs it, and turns a cp::Error (bad input: a
// typed recoverable error) into "NAME: <the problem and its fix>" on stderr
// and exit code 1.
#pragma once

#include <iostream>

#include "core/error.h"

namespace cp::bench {

inline int main_of(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::cerr << name << ": " << describe(e) << "\n";
    return 1;
  }
}

}  // namespace cp::bench
