#!/usr/bin/env bash
# Builds and runs the user project in this folder three ways, as a new user would: against an
# installed dl through pkg-config (and the build tree's dl-uninstalled.pc), through the installed
# CMake package (find_package(dl)), and with dl as a Meson subproject. Run by .ci/run.
#   usage: tests/packaging/check.sh [work-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cxx=${CXX:-c++}
step() { printf '\n== %s\n' "$*"; }

step "install dl into $work/prefix"
meson setup "$work/dl-build" "$src" -Dtests=false -Dbench=false -Dsamples=false --prefix="$work/prefix" >/dev/null
meson install -C "$work/dl-build" >/dev/null
pcdir=$(dirname "$(find "$work/prefix" -name dl.pc)")

step "pkg-config, installed: $cxx \$(pkg-config --cflags --libs dl)"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dl)
echo "$flags"
$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-pc" $flags
"$work/app-pc"

step "pkg-config, installed, compiled mode: $cxx \$(pkg-config --cflags --libs dl-compiled)"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dl-compiled)
echo "$flags"
$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-pc-compiled" $flags \
  -Wl,-rpath,"$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir dl-compiled)"
"$work/app-pc-compiled"

step "pkg-config, uninstalled build tree (dl-uninstalled.pc)"
flags=$(PKG_CONFIG_PATH="$work/dl-build/meson-uninstalled" pkg-config --cflags --libs dl)
echo "$flags"
$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-uninstalled" $flags
"$work/app-uninstalled"
flags=$(PKG_CONFIG_PATH="$work/dl-build/meson-uninstalled" pkg-config --cflags --libs dl-compiled)
echo "$flags"
$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-uninstalled-compiled" $flags -Wl,-rpath,"$work/dl-build"
"$work/app-uninstalled-compiled"

step "CMake: find_package(dl) + target_link_libraries(app dl::dl), and app_compiled with dl::compiled"
cuda_cmake=()
[[ -x /usr/local/cuda/bin/nvcc ]] && cuda_cmake=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_cmake[@]}" >/dev/null
cmake --build "$work/cmake-build"
"$work/cmake-build/app"
"$work/cmake-build/app_compiled"

# CUDA (dl-cuda.pc and dl::cuda), where the toolkit is installed: build, link and run (the program
# says so and exits 0 without a GPU).
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -n "$nvcc" && -f "$pcdir/dl-cuda.pc" ]]; then
  step "pkg-config, CUDA: nvcc \$(pkg-config --cflags dl-cuda) app.cu \$(pkg-config --libs dl-cuda)"
  flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dl-cuda)
  echo "$flags"
  "$nvcc" -O1 "$here/app.cu" -o "$work/app-cuda" $flags
  "$work/app-cuda"
  [[ -x "$work/cmake-build/app_cuda" ]] || { echo "CMake did not build app_cuda with dl::cuda"; exit 1; }
  "$work/cmake-build/app_cuda"
else
  step "no CUDA toolkit (or dl built without it): dl-cuda.pc and dl::cuda not checked"
fi

step "Meson subproject: subprojects/dl"
mkdir -p "$work/project/subprojects"
cp "$here/main.cpp" "$here/meson.build" "$work/project/"
ln -sfn "$src" "$work/project/subprojects/dl"
meson setup "$work/project/build" "$work/project" --force-fallback-for=dl >/dev/null
meson compile -C "$work/project/build"
"$work/project/build/app"
"$work/project/build/app_compiled"

step "all three ways build and run, header-only and compiled mode"
