#!/usr/bin/env bash
# Installs every pinned dependency of the user-client examples
# (examples/live-clients/), idempotently:
#   - Python: each pin of requirements.txt that is not installed at exactly
#     that version is installed with pip (nothing is run when all are there);
#   - Node: `npm ci` in each directory with a package-lock.json whose
#     node_modules is missing or older than its package-lock.json.
# Exit status non-zero when something could not be installed (python3, pip,
# node or npm missing, or an install failed). PYTHON=... picks the interpreter.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
py="${PYTHON:-python3}"
status=0

echo "== live-clients: Python packages (requirements.txt)"
if ! command -v "$py" >/dev/null; then
  echo "!!! $py not found: the Python examples cannot run" >&2
  status=1
else
  missing=()
  while read -r pin; do
    pin="${pin%%#*}"; pin="$(echo "$pin" | tr -d '[:space:]')"
    [ -n "$pin" ] || continue
    name="${pin%%==*}"; want="${pin##*==}"
    have="$("$py" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name" 2>/dev/null || true)"
    if [ "$have" != "$want" ]; then
      missing+=("$pin")
    fi
  done <"$here/requirements.txt"
  if [ ${#missing[@]} -eq 0 ]; then
    echo "   all pinned (nothing to do)"
  else
    echo "   installing: ${missing[*]}"
    "$py" -m pip install -q --disable-pip-version-check "${missing[@]}" || status=1
  fi
fi

echo "== live-clients: npm packages (npm ci where node_modules is missing or stale)"
for lock in "$here"/*/package-lock.json; do
  [ -e "$lock" ] || continue
  dir="$(dirname "$lock")"
  if [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$lock" ]; then
    echo "   $(basename "$dir"): installed (nothing to do)"
    continue
  fi
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "!!! node/npm not found: $(basename "$dir") cannot be installed" >&2
    status=1
    continue
  fi
  echo "   $(basename "$dir"): npm ci"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || status=1
done
exit "$status"
