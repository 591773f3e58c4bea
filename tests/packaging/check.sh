#!/usr/bin/env bash
# Builds and runs the user project in this folder three ways, as a new user would: against an
# installed dl through pkg-config (and the build tree's dl-uninstalled.pc), through the installed
# CMake package (find_package(dl)), and with dl as a Meson subproject. Run by .ci/run.
#   usage: tests/packaging/check.sh [work-dir]
# DL_BUILD=<a built build directory of this source tree> installs from it (with the prefix changed)
# instead of configuring and compiling a fresh one: .ci/run passes the suite's build, so
# libdl_kernels is not compiled a second time. The independent compiles below run two at a time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cxx=${CXX:-c++}
step() { printf '\n== %s\n' "$*"; }

# Runs two commands at once (these machines have 2 cores); each one's output is shown when both
# have ended; fails when either failed.
pair() {
  local l1 l2 p1 p2 rc=0
  l1=$(mktemp) l2=$(mktemp)
  (eval "$1") >"$l1" 2>&1 & p1=$!
  (eval "$2") >"$l2" 2>&1 & p2=$!
  wait "$p1" || rc=1
  wait "$p2" || rc=1
  cat "$l1" "$l2"
  rm -f "$l1" "$l2"
  return $rc
}

step "install dl into $work/prefix"
if [[ -n "${DL_BUILD:-}" ]]; then
  dlbuild=$(cd "$DL_BUILD" && pwd)
  meson configure "$dlbuild" --prefix="$work/prefix" >/dev/null
else
  dlbuild=$work/dl-build
  meson setup "$dlbuild" "$src" -Dtests=false -Dbench=false -Dsamples=false --prefix="$work/prefix" >/dev/null
fi
meson install -C "$dlbuild" >/dev/null
pcdir=$(dirname "$(find "$work/prefix" -name dl.pc)")

step "pkg-config, installed: $cxx \$(pkg-config --cflags --libs dl), header-only and compiled mode (dl-compiled)"
flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dl)
cflags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs dl-compiled)
echo "$flags"
echo "$cflags"
pair '$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-pc" $flags' \
  '$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-pc-compiled" $cflags -Wl,-rpath,"$(PKG_CONFIG_PATH="$pcdir" pkg-config --variable=libdir dl-compiled)"'
"$work/app-pc"
"$work/app-pc-compiled"

step "pkg-config, uninstalled build tree (dl-uninstalled.pc, dl-compiled-uninstalled.pc)"
flags=$(PKG_CONFIG_PATH="$dlbuild/meson-uninstalled" pkg-config --cflags --libs dl)
cflags=$(PKG_CONFIG_PATH="$dlbuild/meson-uninstalled" pkg-config --cflags --libs dl-compiled)
echo "$flags"
echo "$cflags"
pair '$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-uninstalled" $flags' \
  '$cxx -std=c++20 -O1 "$here/main.cpp" -o "$work/app-uninstalled-compiled" $cflags -Wl,-rpath,"$dlbuild"'
"$work/app-uninstalled"
"$work/app-uninstalled-compiled"

step "CMake: find_package(dl) + target_link_libraries(app dl::dl), and app_compiled with dl::compiled"
cuda_cmake=()
[[ -x /usr/local/cuda/bin/nvcc ]] && cuda_cmake=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cuda_cmake[@]}" >/dev/null
cmake --build "$work/cmake-build" --parallel 2
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
