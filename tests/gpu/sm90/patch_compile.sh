#!/bin/sh
# patch_compile.sh IN OUT - a copy of src/jit/compile.c whose fa4__path_for asks the test shim
# (path_shim.c) first. Test builds only: see path_shim.c.
set -e
sed 's/^const fa4__path_ops \*fa4__path_for(int path)$/const fa4__path_ops *fa4__sm90_shim_for(int path);\nconst fa4__path_ops *fa4__path_for(int path)/; s/^    switch (path) {$/    if (fa4__sm90_shim_for(path))\n        return fa4__sm90_shim_for(path);\n    switch (path) {/' "$1" > "$2.tmp"
grep -q fa4__sm90_shim_for "$2.tmp"
mv "$2.tmp" "$2"
