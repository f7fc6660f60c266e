// Finds a function symbol in an ELF file, so that a uprobe on a symbol the
// binary lacks (or on a file that is not ELF) fails with one clear line before
// anything is attached.
#pragma once

#include <string>

#include "ripple/status.h"

namespace ripple::tracer {

struct ElfFunction {
  std::string path;    // the ELF file
  std::string symbol;  // the name as it appears in the symbol table (mangled for C++)
};

// Looks `name` up among the defined functions of `path` (.symtab, then
// .dynsym). A C++ function may be named by its demangled name without the
// parameter list ("ns::job_step") when that name is unique.
Result<ElfFunction> find_function(const std::string& path, const std::string& name);

// True if `path` starts with the ELF magic.
bool is_elf_file(const std::string& path);

}  // namespace ripple::tracer
