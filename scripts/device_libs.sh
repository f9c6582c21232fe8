# shellcheck shell=bash
# Sourced by scripts/stage_device.sh and scripts/check_stage.sh: which shared libraries a staged
# device folder may leave to the device (docs/CUDA.md, "The device check from a carried build").
#   lib_kind SONAME  prints
#     glibc  part of glibc (and the vDSO): always the device's own; never staged, because libc, its
#            loader and libcuda (the driver, loaded into the same process) must come from one system
#     gcc    libstdc++, libgcc_s, libgomp: staged in lib/gcc; the device's own are used where they are
#            recent enough (device_check.sh), this machine's otherwise
#     cuda   the driver and CUDA's libraries: always the device's own (they must match its driver);
#            winfer links cudart statically and opens cuBLAS/cuDNN with dlopen()
#     stage  anything else: must be inside the folder (lib/)
lib_kind() {
  case "$1" in
    linux-vdso.so.* | linux-gate.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | \
      librt.so.* | libresolv.so.* | libutil.so.* | libmvec.so.* | libanl.so.*)
      echo glibc ;;
    libstdc++.so.* | libgcc_s.so.* | libgomp.so.*)
      echo gcc ;;
    libcuda.so* | libcudart.so* | libcublas.so* | libcublasLt.so* | libcudnn*.so* | libnvrtc*.so* | libnvJitLink.so* | \
      libnvidia-*.so* | libcufft*.so* | libcurand.so* | libcusparse*.so* | libcusolver*.so* | libnvToolsExt.so*)
      echo cuda ;;
    *)
      echo stage ;;
  esac
}
