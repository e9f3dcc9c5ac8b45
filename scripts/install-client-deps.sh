#!/usr/bin/env bash
# Installs what the client-compatibility suite (npm run test:clients) needs, and only what is
# missing, so running it again costs nothing:
#   Mono (.NET): mono, mcs and the wsdl tool      Debian mono-complete
#   Python zeep, with Debian's /usr/bin/python3    Debian python3-zeep
#   PHP SoapClient (+ DOM to read the DataTable)   Debian php-cli, php-soap, php-xml
#   node-soap                                      npm devDependency `soap` (npm ci)
# Debian 12; needs root (or sudo) for apt-get. Non-interactive (DEBIAN_FRONTEND=noninteractive).
# With --missing it only prints the Debian packages it would install (one line, maybe empty), so
# that .ci/run can install them together with its own after a single apt-get update.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

started=$(date +%s)
packages=()

if ! command -v mono >/dev/null || ! command -v mcs >/dev/null || ! command -v wsdl >/dev/null \
   || [ ! -f /usr/lib/mono/4.5/System.Web.Services.dll ] || [ ! -f /usr/lib/mono/4.5/System.Web.Extensions.dll ]; then
  packages+=(mono-complete)
fi
if ! /usr/bin/python3 -c 'import zeep' >/dev/null 2>&1; then
  packages+=(python3-zeep)
fi
if ! command -v php >/dev/null; then
  packages+=(php-cli php-soap php-xml)
else
  php -r 'exit(class_exists("SoapClient") ? 0 : 1);' || packages+=(php-soap)
  php -r 'exit(class_exists("DOMDocument") ? 0 : 1);' || packages+=(php-xml)
fi

if [ "${1:-}" = "--missing" ]; then
  echo "${packages[*]}"
  exit 0
fi

if [ ${#packages[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-client-deps: need root or sudo to install: ${packages[*]}" >&2; exit 1; }
    sudo=(sudo --preserve-env=DEBIAN_FRONTEND)
  fi
  echo "install-client-deps: apt-get install ${packages[*]}"
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
else
  echo "install-client-deps: Debian packages already present"
fi

if ! node -e 'import("soap").then(() => process.exit(0), () => process.exit(1))' >/dev/null 2>&1; then
  echo "install-client-deps: npm ci (node-soap is a devDependency)"
  npm ci --no-audit --no-fund
fi

echo "install-client-deps: done in $(( $(date +%s) - started )) s"
echo "  $(mono --version | head -n 1)"
echo "  $(mcs --version)"
echo "  zeep $(/usr/bin/python3 -c 'import zeep; print(zeep.__version__)') (Python $(/usr/bin/python3 -c 'import platform; print(platform.python_version())'))"
echo "  PHP $(php -r 'echo PHP_VERSION;') (soap $(php -r 'echo phpversion("soap");'))"
echo "  soap (npm) $(node -p 'require("soap/package.json").version')"
