#!/usr/bin/env bash
# Copies the device linker's tables (compiler/include/oxide/*.def, their one
# source) into crates/oxide-tables/tables/, the copy that travels in the
# oxide-tables package: a packaged crate cannot reach ../../compiler. Run it
# after editing a .def file; oxide-tables' test `packaged_tables_match_source`
# fails while the copy differs.
#
#   bash scripts/sync-tables.sh           # refresh the copy
#   bash scripts/sync-tables.sh --check   # exit 1 when the copy is stale
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/compiler/include/oxide"
dst="$root/crates/oxide-tables/tables"
if [ "${1:-}" = "--check" ]; then
  stale=0
  for f in "$src"/*.def; do cmp -s "$f" "$dst/$(basename "$f")" || { echo "stale: tables/$(basename "$f")"; stale=1; }; done
  for f in "$dst"/*.def; do [ -e "$src/$(basename "$f")" ] || { echo "extra: tables/$(basename "$f")"; stale=1; }; done
  exit $stale
fi
mkdir -p "$dst"
rm -f "$dst"/*.def
cp "$src"/*.def "$dst/"
tables=("$src"/*.def)
echo "copied ${#tables[@]} tables into crates/oxide-tables/tables"
