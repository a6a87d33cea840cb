#!/usr/bin/env bash
# System set-up that pip cannot do: Chromium (apt) for the book's HTML checks and MathJax 3 (npm),
# served from the book itself so formulas render offline. Idempotent and quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${INVARIRANK_CACHE:-$HOME/.cache/invarirank}"

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing chromium with apt-get" >&2
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "setup: warning: could not install chromium; the book's browser checks will fail under CI" >&2
  else
    echo "setup: warning: chromium not found and apt-get not usable; install it to run the browser checks" >&2
  fi
fi

mj="$cache/npm/node_modules/mathjax"
if [ ! -f "$mj/es5/tex-chtml.js" ]; then
  if command -v npm >/dev/null 2>&1; then
    echo "setup: fetching mathjax@3 with npm" >&2
    mkdir -p "$cache/npm"
    npm install --silent --no-audit --no-fund --prefix "$cache/npm" mathjax@3 >/dev/null
  else
    echo "setup: warning: npm not found; formulas will not render offline" >&2
  fi
fi
if [ -f "$mj/es5/tex-chtml.js" ] && [ ! -f book/_static/mathjax/tex-chtml.js ]; then
  mkdir -p book/_static/mathjax
  cp "$mj/es5/tex-chtml.js" book/_static/mathjax/
  cp -r "$mj/es5/output" book/_static/mathjax/
  # tex-chtml.js loads its extensions (input/, a11y/, ...) relative to itself
  for d in input a11y adaptors sre ui; do [ -d "$mj/es5/$d" ] && cp -r "$mj/es5/$d" book/_static/mathjax/; done
fi
exit 0
