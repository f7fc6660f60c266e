#include "agent/tracer/elf_symbols.h"

#include <cxxabi.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>

namespace ripple::tracer {
namespace {

struct FdCloser {
  void operator()(int* fd) const {
    if (*fd >= 0) close(*fd);
    delete fd;
  }
};
struct ElfCloser {
  void operator()(Elf* e) const { elf_end(e); }
};

std::string demangled_base(const char* sym) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(
      abi::__cxa_demangle(sym, nullptr, nullptr, &status), &std::free);
  if (status != 0 || !d) return {};
  std::string s(d.get());
  auto paren = s.find('(');
  return paren == std::string::npos ? s : s.substr(0, paren);
}

}  // namespace

bool is_elf_file(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4] = {};
  bool ok = read(fd, magic, 4) == 4 && std::memcmp(magic, ELFMAG, SELFMAG) == 0;
  close(fd);
  return ok;
}

Result<ElfFunction> find_function(const std::string& path, const std::string& name) {
  if (name.empty()) return make_error("empty symbol name for {}", path);
  std::unique_ptr<int, FdCloser> fd(new int(open(path.c_str(), O_RDONLY | O_CLOEXEC)));
  if (*fd < 0) return make_errno_error(-errno, "cannot open {}: {}", path, std::strerror(errno));
  if (!is_elf_file(path)) return make_error("{} is not an ELF file", path);
  if (elf_version(EV_CURRENT) == EV_NONE) return make_error("libelf initialisation failed");
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(*fd, ELF_C_READ, nullptr));
  if (!elf) return make_error("{}: cannot parse ELF: {}", path, elf_errmsg(-1));

  std::set<std::string> demangled_hits;  // .symtab and .dynsym repeat names
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
      continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data || sh.sh_entsize == 0) continue;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; i++) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) continue;
      if (GELF_ST_TYPE(sym.st_info) != STT_FUNC && GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC)
        continue;
      if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* sname = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
      if (!sname) continue;
      if (name == sname) return ElfFunction{path, sname};
      if (sname[0] == '_' && sname[1] == 'Z' && demangled_base(sname) == name)
        demangled_hits.insert(sname);
    }
  }
  if (demangled_hits.size() == 1) return ElfFunction{path, *demangled_hits.begin()};
  if (demangled_hits.size() > 1)
    return make_error("symbol '{}' is ambiguous in {} ({} overloads; give the mangled name)",
                      name, path, demangled_hits.size());
  return make_error("symbol '{}' not found in {}", name, path);
}

}  // namespace ripple::tracer
