#!/bin/sh
# Every header that tests DL_HEADER_ONLY or uses DL_API includes dl/config.hpp itself. Without it, a
# program that includes only that header sees DL_HEADER_ONLY undefined (0 to the preprocessor): the
# bodies vanish silently and the program fails to link (as fuzz_pth did, including io/pth.hpp alone).
#   usage: config_include.sh include-dir
status=0
cd "$1/dl" || exit 1
for f in $(grep -rlE "DL_HEADER_ONLY|DL_API" --include='*.hpp' .); do
  [ "$f" = ./config.hpp ] && continue
  case $f in *-inl.hpp) continue ;; esac  # included by its header, after config.hpp
  grep -qE '#include "(\.\./)*config\.hpp"' "$f" || { echo "$f uses DL_HEADER_ONLY/DL_API without including config.hpp"; status=1; }
done
[ $status = 0 ] && echo "every header using DL_HEADER_ONLY/DL_API includes config.hpp"
exit $status
