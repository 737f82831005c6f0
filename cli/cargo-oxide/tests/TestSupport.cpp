//===- TestSupport.cpp - helpers for the cargo-oxide unit tests -----------===//
//
// Part of oxide. See TestSupport.h.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace oxide::cli::test {

TempDir::TempDir() {
  const char *Base = std::getenv("TMPDIR");
  std::string Pattern =
      std::string(Base && *Base ? Base : "/tmp") + "/cargo-oxide-test-XXXXXX";
  if (!mkdtemp(Pattern.data()))
    throw std::runtime_error("mkdtemp failed for " + Pattern);
  Path = fs::canonical(Pattern);
}

TempDir::~TempDir() {
  std::error_code EC;
  fs::remove_all(Path, EC);
}

void writeFile(const fs::path &Path, std::string_view Content) {
  fs::create_directories(Path.parent_path());
  std::ofstream Out(Path, std::ios::binary | std::ios::trunc);
  Out << Content;
  if (!Out)
    throw std::runtime_error("cannot write " + Path.string());
}

void writeExecutable(const fs::path &Path, std::string_view Content) {
  writeFile(Path, Content);
  fs::permissions(Path, fs::perms::owner_all | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
}

std::string readFile(const fs::path &Path) {
  std::ifstream In(Path, std::ios::binary);
  std::ostringstream Buffer;
  Buffer << In.rdbuf();
  return Buffer.str();
}

bool contains(std::string_view Haystack, std::string_view Needle) {
  return Haystack.find(Needle) != std::string_view::npos;
}

const std::string EmulatorProfile =
    " [--config] [profile.dev.package.ptx-vm.opt-level=3] [--config] "
    "[profile.dev.package.cuda-emulator.opt-level=2]";

std::string withFakeCargoMetadata(std::string_view Script) {
  static const char *Metadata = R"sh(
if [ "$1" = metadata ]; then
  mp=""; prev=""
  for a in "$@"; do [ "$prev" = --manifest-path ] && mp="$a"; prev="$a"; done
  dir=$(dirname "$mp"); pkgs=""
  for m in "$mp" "$dir"/examples/*/Cargo.toml; do
    [ -f "$m" ] || continue
    name=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$m" | head -1)
    [ -n "$name" ] || continue
    arch=$(sed -n 's/^arch *= *"\(.*\)"/\1/p' "$m" | head -1)
    emu=$(sed -n 's/^emulate *= *"\(.*\)"/\1/p' "$m" | head -1)
    meta=null
    [ -n "$arch$emu" ] && meta="{\"oxide\":{${arch:+\"arch\":\"$arch\"}${arch:+${emu:+,}}${emu:+\"emulate\":\"$emu\"}}}"
    bins="[]"
    [ -f "$(dirname "$m")/src/main.rs" ] && bins="[{\"kind\":[\"bin\"],\"name\":\"$name\"}]"
    pkgs="$pkgs${pkgs:+,}{\"name\":\"$name\",\"manifest_path\":\"$m\",\"targets\":$bins,\"metadata\":$meta}"
  done
  target=${CARGO_TARGET_DIR:-${FAKE_TARGET:-$dir/target}}
  printf '{"packages":[%s],"workspace_root":"%s","target_directory":"%s","version":1}\n' "$pkgs" "$dir" "$target"
  exit 0
fi
)sh";
  std::string Text(Script);
  size_t EndOfFirstLine = Text.find('\n');
  Text.insert(EndOfFirstLine == std::string::npos ? Text.size()
                                                  : EndOfFirstLine + 1,
              Metadata);
  return Text;
}

} // namespace oxide::cli::test
