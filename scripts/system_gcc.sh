# Sourced by gpu_check.sh and gpu_build.sh before they build: the system gcc where there is one.
# The GPU image's default compiler (CC/CXX=/opt/gcc wrapper) links libstdc++ statically into the extension; with
# torch's shared libstdc++ in the same process, the first ostream use (any error message, e.g. a refused input)
# segfaults. The system gcc of the same version links it shared.
if [[ -x /usr/bin/g++ && -x /usr/bin/gcc ]]; then
  export CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++
fi
