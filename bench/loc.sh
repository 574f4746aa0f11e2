#!/usr/bin/env bash
# Lines per library (lib/* folder) at one or two commits: production sources
# (.cc, .h) and their tests (*_test.cc, testing/) apart, from git's objects
# (no checkout; uncommitted changes do not count).
#
#   bench/loc.sh [BEFORE] [AFTER]    default: 6dae620 (before issue #21's
#                                    clean-up) and HEAD
#
# A folder that is not there at a commit shows "-".
set -euo pipefail

before=${1:-6dae620}
after=${2:-HEAD}
cd "$(git rev-parse --show-toplevel)"

# "<folder> <prod> <test>" per lib/* folder at commit $1.
count() {
  git grep -I -c '' "$1" -- 'lib/*.cc' 'lib/*.h' |
    awk -F: '{
      path = $2; n = $3
      split(path, p, "/"); lib = p[2]
      if (path ~ /_test\.cc$/ || path ~ /\/testing\//) test[lib] += n; else prod[lib] += n
      seen[lib] = 1
    }
    END { for (l in seen) printf "%s %d %d\n", l, prod[l], test[l] }' | sort
}

join -a1 -a2 -e- -o 0,1.2,1.3,2.2,2.3 <(count "$before") <(count "$after") |
  awk -v b="$before" -v a="$after" '
    BEGIN { printf "%-14s %10s %10s %10s %10s\n", "library", "prod " b, "prod " a, "test " b, "test " a }
    {
      printf "%-14s %10s %10s %10s %10s\n", $1, $2, $4, $3, $5
      if ($2 != "-") pb += $2; if ($4 != "-") pa += $4
      if ($3 != "-") tb += $3; if ($5 != "-") ta += $5
    }
    END { printf "%-14s %10d %10d %10d %10d\n", "total", pb, pa, tb, ta }'
