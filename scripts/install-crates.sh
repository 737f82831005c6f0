#!/usr/bin/env bash
# Installs oxide's crates where cargo finds them by version: packages each
# crate (`cargo package`), puts the packages into a local registry in cargo's
# home ($CARGO_HOME/oxide-registry) and names it in $CARGO_HOME/config.toml as
# the registry `oxide`. A project then depends on them as
#
#   cuda-device = { version = "0.1", registry = "oxide" }
#
# from wherever it lives; nothing in it names this source tree, which may move
# or go (run this script again after pulling a new version). No network is
# used. scripts/setup.sh runs it; tests run it with CARGO_HOME set to a
# temporary directory.
#
#   bash scripts/install-crates.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cargo_home=${CARGO_HOME:-$HOME/.cargo}
registry="$cargo_home/oxide-registry"
# The crates a project uses and everything they depend on, dependencies first.
crates=(oxide-tables cuda-macros cuda-device cuda-driver-sys ptx-vm cuda-emulator
        cuda-core cuda-host cuda-async cuda-blas)

work=$(mktemp -d "${TMPDIR:-/tmp}/oxide-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Run from outside the source tree: its .cargo/config.toml replaces crates.io
# with Debian's packages (for examples/async_mlp), which `cargo package` refuses.
args=(--manifest-path "$root/Cargo.toml" --target-dir "$work/target"
      --allow-dirty --offline --no-verify)
for c in "${crates[@]}"; do args+=(-p "$c"); done
(cd "$work" && cargo package "${args[@]}" 2>&1 | grep -Ev '^warning: manifest has no|^ *\||^ *= note: see' >&2)

(cd "$work" && cargo metadata --manifest-path "$root/Cargo.toml" --format-version 1 --no-deps --offline) > "$work/metadata.json"
mkdir -p "$registry/index"
python3 - "$work/metadata.json" "$work/target/package" "$registry" "${crates[@]}" <<'PY'
# Writes the local registry: <name>-<version>.crate beside index/, whose file
# per crate holds one JSON line per version (cargo's index format).
import hashlib, json, os, shutil, sys
metadata, packages, registry, crates = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
by_name = {p["name"]: p for p in json.load(open(metadata))["packages"]}
def index_path(name):
    n = name.lower()
    if len(n) <= 2: return os.path.join(str(len(n)), n)
    if len(n) == 3: return os.path.join("3", n[0], n)
    return os.path.join(n[:2], n[2:4], n)
for name in crates:
    pkg = by_name[name]
    crate = f"{name}-{pkg['version']}.crate"
    shutil.copyfile(os.path.join(packages, crate), os.path.join(registry, crate))
    deps = [{
        "name": d["name"], "req": d["req"], "features": d["features"],
        "optional": d["optional"], "default_features": d["uses_default_features"],
        "target": d["target"], "kind": d["kind"] or "normal",
        **({"package": d["name"], "name": d["rename"]} if d.get("rename") else {}),
    } for d in pkg["dependencies"] if d["kind"] != "dev"]
    entry = {"name": name, "vers": pkg["version"], "deps": deps,
             "cksum": hashlib.sha256(open(os.path.join(registry, crate), "rb").read()).hexdigest(),
             "features": pkg["features"], "yanked": False, "links": pkg.get("links")}
    path = os.path.join(registry, "index", index_path(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:  # one version: this source tree's
        f.write(json.dumps(entry, separators=(",", ":")) + "\n")
PY

# Cargo unpacks a registry's crate once and trusts the copy from then on, but
# a reinstall may change a crate without changing its version: drop the
# unpacked copies (cargo unpacks them again from the packages when needed).
for c in "${crates[@]}"; do
  rm -rf "$cargo_home"/registry/src/*/"$c"-[0-9]*
done

# Name the registry in cargo's configuration: a block between two marker
# lines, replaced on every run, the rest of the file kept.
config="$cargo_home/config.toml"
begin="# >>> oxide registry (scripts/install-crates.sh) >>>"
end="# <<< oxide registry <<<"
touch "$config"
sed -i "\|^$begin\$|,\|^$end\$|d" "$config"
cat >> "$config" <<TOML
$begin
# The registry \`oxide\` (oxide's crates, for \`registry = "oxide"\` in a
# project's dependencies). Its index URL is a name only, never contacted:
# cargo takes the crates from the local registry that replaces it.
[registries.oxide]
index = "sparse+https://oxide.invalid/index/"
[source.oxide]
registry = "sparse+https://oxide.invalid/index/"
replace-with = "oxide-local"
[source.oxide-local]
local-registry = "$registry"
$end
TOML
echo "installed ${#crates[@]} oxide crates into $registry (registry \`oxide\` in $config)"
