#!/usr/bin/env bash
# What a detour binary is made of: its ELF sections, then the bytes its
# symbols take in the file (code, read-only data, data; not .bss, which
# takes none), summed by module and by package, largest first.
# Usage: scripts/binsize.sh [BINARY] [TOP]   (default bin/detour, 40 packages)
#
# Symbols are read with `go tool nm -size`; the package of a symbol is its
# name up to the first dot after the last slash (types, itabs and generic
# instances go to the package of the type), and the module is the longest
# path `go version -m` lists that the package starts with; packages whose
# first element has no dot are the standard library. What no symbol
# covers is left out of the sums: the pc-line table (.gopclntab), the
# compiler's funcdata (go:func.*), DWARF and the symbol table themselves;
# docs/binary-size.md says how they scale.
set -euo pipefail
top=${2:-40}
if [ $# -ge 1 ]; then bin=$(realpath "$1"); else bin=$(realpath "$(dirname "$0")/../bin/detour"); fi

# hex reads a hexadecimal number (mawk has no strtonum).
hexfn='function hex(h,   i, v) {
  v = 0; h = tolower(h); sub(/^0x/, "", h)
  for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
  return v
}'
# sections prints each ELF section as NAME TYPE ADDRESS SIZE.
sections() { readelf -S -W "$bin" | sed -n 's/^ *\[ *[0-9]*\] *//p' | awk '$1 ~ /^\./ { print $1, $2, $3, $5 }'; }

echo "== sections (bytes in the file)"
sections | awk "$hexfn"' $2 != "NOBITS" { printf "%-20s %12d\n", $1, hex($4) }' |
  sort -k2,2nr

mods=$(go version -m "$bin" | awk '$1 == "dep" || $1 == "mod" { print $2 }')
bss=$(sections | awk "$hexfn"' $2 == "NOBITS" { printf "%d %d\n", hex($3), hex($3) + hex($4) }')

go tool nm -size "$bin" | awk -v mods="$mods" -v bss="$bss" -v top="$top" "$hexfn"'
BEGIN {
  n = split(mods, m, "\n")
  nb = split(bss, b, "\n")
}
function inbss(addr,   i, r) {
  for (i = 1; i <= nb; i++) { split(b[i], r, " "); if (addr >= r[1] && addr < r[2]) return 1 }
  return 0
}
function pkgof(s,   i, slash, dot) {
  sub(/^type:\.(eq|hash|namedata|importpath)\./, "", s)
  if (s ~ /^go:(string|func)\./) return "(go:string.*, go:func.*)"
  sub(/^type:/, "", s); sub(/^go:itab\./, "", s)
  sub(/^go:/, "", s); gsub(/^[*]+/, "", s); sub(/^\(\*?/, "", s)
  if (s ~ /^(struct \{|interface \{|func\(|map\[|\[|chan |go\.shape\.)/) return "(unnamed types, generic shapes)"
  i = index(s, ","); if (i > 0) s = substr(s, 1, i - 1)
  i = index(s, "["); if (i > 0) s = substr(s, 1, i - 1)
  slash = 0; for (i = length(s); i > 0; i--) if (substr(s, i, 1) == "/") { slash = i; break }
  dot = index(substr(s, slash + 1), ".")
  if (dot > 0) s = substr(s, 1, slash + dot - 1)
  return s
}
function modof(p,   i, best) {
  if (p ~ /^\(/) return p
  best = ""
  for (i = 1; i <= n; i++) if ((p == m[i] || index(p, m[i] "/") == 1) && length(m[i]) > length(best)) best = m[i]
  if (best != "") return best
  if (p ~ /^vendor\// || p !~ /^[^\/]*\./) return "std"
  return p
}
NF >= 4 {
  addr = hex($1); size = $2
  if (inbss(addr) || size == 0) next
  name = $4; for (i = 5; i <= NF; i++) name = name " " $i
  p = pkgof(name)
  pkg[p] += size; mod[modof(p)] += size; total += size
}
END {
  printf "\n== by module (symbol bytes; total %.1f MB)\n", total / 1e6
  for (k in mod) printf "%10.2f MB  %s\n", mod[k] / 1e6, k | "sort -rn"
  close("sort -rn")
  printf "\n== top %d packages\n", top
  for (k in pkg) printf "%10.2f MB  %s\n", pkg[k] / 1e6, k | "sort -rn | head -" top
  close("sort -rn | head -" top)
}'
