#!/usr/bin/env bash
# Packs what bench/cuda_check.sh needs into one xz archive, for a GPU machine that has the CUDA
# driver but not this project's build dependencies: the stripped binaries, the shared libraries they
# load that are not the C library's, and the golden files (models, logits, manifests) of the stems
# named in STEMS. Python's tarfile writes and reads it, so the GPU machine needs no xz binary.
#
#   bench/cuda_pack.sh BUILD_DIR ARCHIVE
# The build must have been configured with -DGLIA_TESTDATA=/tmp/glia-testdata (the path the tests
# read) and, where the build machine lacks AVX-512, -DGLIA_AVX512_KERNELS=ON (the GPU machine's CPU
# may have it). On the GPU machine:
#   python3 -c "import tarfile; tarfile.open('ARCHIVE').extractall('/tmp/pack')"
#   ln -sfn /tmp/pack/testdata /tmp/glia-testdata; export LD_LIBRARY_PATH=/tmp/pack/lib
#   bench/cuda_check.sh /tmp/pack/bin
set -eu
build=$1
archive=$2
data=${GLIA_TESTDATA_SRC:-$(dirname "$0")/../../shared/testdata}
# Every family's peculiarity (softcaps, sliding windows, QK-norm, biases, BF16, YaRN) and the
# common quantized types; the op harness covers every type kernel by kernel.
STEMS=${STEMS:-"stories260K brown-q8_0 llama-tied-Q4_0 llama-hd128-Q6_K llama-h160-BF16 llama-rope-yarn-F16
  llama-h160-Q4_1 llama-h160-Q5_0 llama-hd128-Q3_K_M llama-hd128-IQ4_XS gemma3-F16 gemma2-F16 qwen2-F16"}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/testdata/models" "$stage/testdata/golden"
for b in glia test_backend_ops test_golden; do
  strip -o "$stage/bin/$b" "$build/bin/$b"
done
for b in "$stage"/bin/*; do
  ldd "$b" | awk '/=> \// {print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*|libgcc_s)\.so' | while read -r lib; do
  cp -L "$lib" "$stage/lib/"
done
for stem in $STEMS; do
  manifest="$data/golden/$stem.json"
  for rel in $(python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['model'], m['logits_file'])" "$manifest"); do
    cp "$data/$rel" "$stage/testdata/$rel"
  done
  cp "$manifest" "$stage/testdata/golden/"
done
cp "$data/models/brown-q8_0.gguf" "$stage/testdata/models/" 2>/dev/null || true
python3 - "$stage" "$archive" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[2], "w:xz", preset=6) as t:
    for name in ("bin", "lib", "testdata"):
        t.add(f"{sys.argv[1]}/{name}", arcname=name)
PY
echo "packed $(echo $STEMS | wc -w) golden stems: $(du -sh "$stage" | cut -f1) -> $(du -h "$archive" | cut -f1) in $archive"
