#!/usr/bin/env bash
# OpenGL on the GPU machine (shared/gpu-machine.md, "OpenGL there"; docs/gl.md): unpacks the
# Debian .deb files brought in .gl/ (an ignored folder that travels with the tree) and points the
# build and the loaders at them. Source it: `source tools/gl_setup.sh [PREFIX]` (default prefix:
# .gl/root). Needs dpkg-deb (dpkg -x); as root it also puts the GL loaders (libEGL, libGL,
# libOpenGL, libGLX, libGLdispatch, libGLES) into / and runs ldconfig, which is what worked there
# (everything else goes into PREFIX only: unpacking all of it into / can break the machine).
# Windows need an X server with GLX: the ignored folder .glx/ (when it came along: 46 MiB, so only
# for the windowed run) holds Xvfb with Mesa's software GLX for the server side (libgl1-mesa-dri
# and LLVM 15; docs/gl.md); the client side is NVIDIA's GLX (__GLX_VENDOR_LIBRARY_NAME=nvidia).
# As root it links xkbcomp into /usr/bin and Mesa's DRI folder into /usr/lib/x86_64-linux-gnu/dri,
# where Xvfb looks for them (both paths are compiled into Xvfb), when the system has none.
# Exports: LD_LIBRARY_PATH, CMAKE_PREFIX_PATH, PATH (Xvfb), CUPLUG_XKB_DIR (Xvfb's -xkbdir),
# LIBGL_DRIVERS_PATH (Xvfb's GLX finds Mesa's swrast there), __GLX_VENDOR_LIBRARY_NAME=nvidia where
# NVIDIA's GLX library is installed, and __EGL_VENDOR_LIBRARY_FILENAMES when no EGL vendor file is
# where glvnd looks by default.
# Prints what it did; returns non-zero when .gl/ has no .deb files.

gl_setup_main() {
  local root debs prefix f name loaders vendor lib
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  debs=$root/.gl
  prefix=${1:-$debs/root}
  if ! ls "$debs"/*.deb >/dev/null 2>&1; then
    echo "gl_setup: no .deb files in $debs (docs/gl.md says how to fetch them)" >&2
    return 1
  fi
  mkdir -p "$prefix"
  # Loaders go into / only where the system has none (or GL_SETUP_FORCE_LOADERS=1 says so).
  local into_root=0
  if ! [ -e /usr/lib/x86_64-linux-gnu/libGLdispatch.so.0 ] || [ -n "${GL_SETUP_FORCE_LOADERS:-}" ]; then
    into_root=1
  fi
  # The loaders: libglvnd's dispatch libraries, vendor-neutral; NVIDIA's vendor libraries plug in.
  loaders="libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2"
  for f in "$debs"/*.deb "$debs"/xvfb/*.deb "$root"/.glx/*.deb; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    name=${name%%_*}
    dpkg-deb -x "$f" "$prefix" || { echo "gl_setup: cannot unpack $f" >&2; return 1; }
    if [[ " $loaders " == *" $name "* ]] && [ "$(id -u)" = 0 ] && [ "$into_root" = 1 ]; then
      dpkg-deb -x "$f" / && echo "gl_setup: loader $name unpacked into /"
    fi
  done
  [ "$(id -u)" = 0 ] && command -v ldconfig >/dev/null && ldconfig
  lib=$prefix/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CMAKE_PREFIX_PATH=$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export PATH=$prefix/usr/bin:$PATH
  export CUPLUG_XKB_DIR=$prefix/usr/share/X11/xkb
  export LIBGL_DRIVERS_PATH=$lib/dri
  if [ -x "$prefix/usr/bin/xkbcomp" ] && ! [ -e /usr/bin/xkbcomp ] && [ "$(id -u)" = 0 ]; then
    ln -s "$prefix/usr/bin/xkbcomp" /usr/bin/xkbcomp && echo "gl_setup: /usr/bin/xkbcomp linked"
    mkdir -p /var/lib/xkb
  fi
  if [ -d "$lib/dri" ] && ! [ -e /usr/lib/x86_64-linux-gnu/dri ] && [ "$(id -u)" = 0 ]; then
    ln -s "$lib/dri" /usr/lib/x86_64-linux-gnu/dri && echo "gl_setup: Mesa's DRI folder linked"
  fi
  if ldconfig -p 2>/dev/null | grep -q libGLX_nvidia; then
    export __GLX_VENDOR_LIBRARY_NAME=nvidia
  fi
  # glvnd finds EGL vendors through JSON files; NVIDIA's may sit outside the default folders.
  if ! ls /usr/share/glvnd/egl_vendor.d/*nvidia*.json /etc/glvnd/egl_vendor.d/*nvidia*.json \
    >/dev/null 2>&1; then
    for vendor in /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json \
      /usr/share/glvnd/egl_vendor.d/10_nvidia.json /usr/local/nvidia/egl_vendor.d/10_nvidia.json; do
      if [ -e "$vendor" ]; then
        export __EGL_VENDOR_LIBRARY_FILENAMES=$vendor
        break
      fi
    done
  fi
  echo "gl_setup: unpacked $(ls "$debs"/*.deb "$debs"/xvfb/*.deb "$root"/.glx/*.deb 2>/dev/null | wc -l) packages into $prefix"
  echo "gl_setup: __GLX_VENDOR_LIBRARY_NAME=${__GLX_VENDOR_LIBRARY_NAME:-unset}"
  echo "gl_setup: LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  echo "gl_setup: CMAKE_PREFIX_PATH=$CMAKE_PREFIX_PATH"
  echo "gl_setup: __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-glvnd default folders}"
}

gl_setup_main "$@"
