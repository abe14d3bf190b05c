"""Pure CUDA source generation for the array layer (elementwise now; reductions and scans
build here too). No device or compiler needed: CI compiles what these produce with NVRTC."""
