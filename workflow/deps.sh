#!/bin/sh
# workflow/deps.sh [GROUP]: installs the Debian packages of a group when any
# is missing. As root it runs apt-get; otherwise it prints the one line to
# run and fails. Groups:
#   build    (default) what `make report` and `make check` need
#   browser  Chromium, for make check-browser
#   fuzz     clang, the libFuzzer and sanitizer runtimes and llvm-symbolizer
#   latex    pdfTeX and the LaTeX packages of the thesis example, and
#            pdfinfo/pdffonts (poppler-utils) for make check-latex
#   slurm    a Slurm controller, node daemon, clients and munge, for check-slurm
set -eu
group=${1:-build}
case $group in
build) PKGS="build-essential pkg-config libopenblas-dev liblapacke-dev libzstd-dev libsnappy-dev
zlib1g-dev liblz4-dev libxxhash-dev libarchive-dev check gnuplot-nox fonts-dejavu-core python3
libsleef-dev libpng-dev python3-numpy python3-sklearn python3-zstandard locales" ;;
browser) PKGS="chromium" ;;
fuzz) PKGS="clang libclang-rt-14-dev llvm-14" ;;
latex) PKGS="texlive-latex-base texlive-latex-recommended poppler-utils" ;;
slurm) PKGS="slurmctld slurmd slurm-client munge procps" ;;
*) echo "qkreport: deps.sh: unknown group '$group'" >&2; exit 1 ;;
esac
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "qkreport: missing Debian packages ($group). Run, then retry:" >&2
    echo "  sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "qkreport: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# the package lists may be missing or old on a fresh machine
apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
}
