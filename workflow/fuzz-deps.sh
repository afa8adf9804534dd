#!/bin/sh
# Installs what `make fuzz` needs and the normal build does not: clang, the
# libFuzzer and sanitizer runtimes, and llvm-symbolizer for readable crash
# reports. As root it runs apt-get; otherwise it prints the line to run.
set -eu
PKGS="clang libclang-rt-14-dev llvm-14"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "qkreport: make fuzz needs Debian packages. Run, then retry:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "qkreport: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
