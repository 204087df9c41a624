#!/usr/bin/env bash
# Mesa's software Vulkan driver (lavapipe) for ManiSkill3/SAPIEN on a machine without a GPU driver, unpacked
# into DEST without touching the system's packages: Debian 12's own lavapipe (Mesa 22) lacks a feature SAPIEN
# needs, so the one of bookworm-backports (Mesa 25) is downloaded with a private apt list and `dpkg -x`-ed.
# It links the system's libLLVM and libdrm. Skipped when the system already has a Vulkan driver.
#   usage: bash scripts/prepare_vulkan.sh DEST     (make install-maniskill runs it with DEST=.venv/vulkan)
set -euo pipefail
dest=${1:?usage: prepare_vulkan.sh DEST}
if ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
    echo "prepare_vulkan: the system has a Vulkan driver; nothing to do"
    exit 0
fi
if ! command -v apt-get >/dev/null || ! grep -qs bookworm /etc/os-release; then
    echo "prepare_vulkan: no Vulkan driver and not Debian 12: install Mesa >= 23's lavapipe (mesa-vulkan-drivers) or a GPU's Vulkan driver" >&2
    exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb http://deb.debian.org/debian bookworm-backports main" > "$work/sources.list"
apt_opts=(-q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o Debug::NoLocking=1
          -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update >/dev/null
(cd "$work/debs" && apt-get "${apt_opts[@]}" download mesa-vulkan-drivers/bookworm-backports >/dev/null)
rm -rf "$dest" && mkdir -p "$dest"
dpkg -x "$work"/debs/mesa-vulkan-drivers_*.deb "$dest/root"
lib=$(cd "$dest/root/usr/lib/x86_64-linux-gnu" && pwd)/libvulkan_lvp.so
sed "s#\"library_path\": \"[^\"]*\"#\"library_path\": \"$lib\"#" \
    "$dest/root/usr/share/vulkan/icd.d/lvp_icd.json" > "$dest/lvp_icd.json.tmp"
mv "$dest/lvp_icd.json.tmp" "$dest/lvp_icd.json"
echo "prepare_vulkan: lavapipe $(basename "$work"/debs/mesa-vulkan-drivers_*.deb .deb) in $dest (VK_ICD_FILENAMES=$dest/lvp_icd.json)"
