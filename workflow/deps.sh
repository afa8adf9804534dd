#!/bin/sh
# Installs the Debian packages the suite needs, when any is missing.
# As root it runs apt-get; otherwise it prints the one line to run and fails.
set -eu
PKGS="build-essential pkg-config libopenblas-dev liblapacke-dev libzstd-dev libsnappy-dev
zlib1g-dev libarchive-dev libsleef-dev check gnuplot-nox fonts-dejavu-core python3 python3-numpy python3-sklearn"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "qkreport: missing Debian packages. Run, then retry:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "qkreport: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
