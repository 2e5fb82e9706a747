#!/usr/bin/env bash
# Installs the Debian package into a fresh Debian 12 (debootstrap, minbase) with apt resolving
# its dependencies, then runs it there: both programs' --version, the CLI on the packaged sample
# data, a benchmark with its plot, the Python module, the man page and the GUI under Xvfb.
# Needs root and the network (deb.debian.org); not part of the tests for that reason.
#   scripts/check-clean-install.sh [BUILD_DIR] [ROOT_DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
root=${2:-/tmp/cumulus-clean-root}
[ "$(id -u)" = 0 ] || { echo "needs root (debootstrap, chroot)"; exit 2; }
command -v debootstrap > /dev/null || apt-get install -y debootstrap
out=$(mktemp -d)
(cd "$build" && cpack -G DEB -B "$out" > "$out/cpack.log")
deb=$(ls "$out"/cumulus_*.deb)
[ -x "$root/bin/bash" ] || debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
mount -t proc proc "$root/proc"
trap 'umount "$root/proc"' EXIT
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/root/"
chroot "$root" /bin/bash -euo pipefail -c "
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q /root/$(basename "$deb") | grep -E 'newly installed|Need to get'
apt-get install -y -q xvfb xauth > /dev/null
cumulus-cli --version
QT_QPA_PLATFORM=offscreen cumulus --version
sample=/usr/share/cumulus/sample_data/street_scene.pcd
cumulus-cli info \$sample | head -1
cumulus-cli bench cluster --sweeps real --sample /usr/share/cumulus/sample_data --data /nonexistent \
  --repeat 1 --methods cpu --out /tmp/bench | tail -1
test -s /tmp/bench/cluster_real.png
python3 -c \"import cumulus; c = cumulus.read('\$sample'); print('python:', len(c), 'points')\"
test -e /usr/share/man/man1/cumulus-cli.1.gz || test -e /usr/share/man/man1/cumulus-cli.1
cd /tmp && xvfb-run -a -s '-screen 0 1280x800x24' cumulus --screenshot-window /tmp/gui.png \$sample 2>/dev/null
test -s /tmp/gui.png
"
echo "PASS: $(basename "$deb") installs and runs on a clean Debian 12 ($root)"
