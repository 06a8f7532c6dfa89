#!/usr/bin/env python3
"""The shared libraries Kestrel's binaries need on a GPU machine that has torch but no OpenCV C++.

Usage: device_bundle.py OUT_LIB_DIR BINARY...

The GPU machine has the same torch (LibTorch, CUDA and NVIDIA libraries) and glibc; everything else
the binaries load must travel, within the device tool's 64 MiB. Debian's OpenCV alone pulls in about
217 MB (libopencv_imgcodecs -> GDAL -> HDF5, Poppler, ...; videoio -> FFmpeg, GStreamer), none of
which the check runs: it decodes JPEGs with TurboJPEG, writes plots as PNG and JPEG, and opens no
video or exotic image format. So:
  - libraries the check uses (KEEP) are copied under their SONAME;
  - every other library one of those needs directly is replaced by a stub with the same SONAME and
    the same exported symbols (functions that trap if ever called, zero-filled data of the right
    size, the same symbol versions), a few KB each, so that the dynamic linker, which binds every
    symbol at load time (BIND_NOW), is satisfied;
  - what only the replaced libraries needed does not travel at all.
Prints one line per library: kept, stub, or provided by the GPU machine.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Provided on the GPU machine: its torch venv (LibTorch, CUDA, cuDNN, NCCL) and glibc.
PROVIDED = re.compile(r"^(libtorch|libc10|libcaffe2|libnv|libcu|libnccl|libcudnn|libcufile|libcusparse|libgomp|"
                      r"libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|ld-linux|libresolv\.so|libutil\.so)")
# Used by the check, or too entangled with what is used to stub: copied whole. (OpenCV's dnn serves
# only `kestrel export`'s check, which the device run does not call: it is a stub.)
KEEP = re.compile(r"^(libopencv_(core|imgproc|imgcodecs|videoio)\.|libtbb|libz\.|libjpeg|libturbojpeg|libpng16|"
                  r"libwebp|libsharpyuv|libyaml-cpp|liblmdb|libstdc\+\+|libgcc_s|libgtest|libgmock|"
                  r"libbenchmark)")


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed(path):
    """DT_NEEDED sonames of an ELF file."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run("readelf", "-d", path))


def resolved(binaries):
    """soname -> path of every library the binaries load (ldd resolves the whole closure)."""
    paths = {}
    for b in binaries:
        for m in re.finditer(r"^\s*(\S+) => (/\S+)", run("ldd", b), re.M):
            paths.setdefault(m.group(1), m.group(2))
    return paths


def write_stub(real, soname, out_dir, work):
    """A library with real's SONAME and exported symbols, whose functions trap (ud2)."""
    asm, versions = [], {}
    for line in run("objdump", "-T", real).splitlines():
        # e.g. "00000000001c2f30 g    DF .text  0000000000000042  Base        GDALOpen"
        m = re.match(r"^[0-9a-f]+ g\s+(\w*)\s+(D[FO])\s+(\S+)\s+([0-9a-f]+)\s+(\(?[\w.@]*\)?)\s+(\S+)$", line)
        if not m or m.group(3) in ("*UND*", "*ABS*"):  # imports, and the version names themselves
            continue
        kind, size, version, name = m.group(2), int(m.group(4), 16), m.group(5).strip("()"), m.group(6)
        if kind == "DF":
            asm += [f'.text\n.globl "{name}"\n.type "{name}", @function\n"{name}":\n  ud2\n']
        else:
            asm += [f'.data\n.globl "{name}"\n.type "{name}", @object\n.size "{name}", {max(size, 1)}\n'
                    f'"{name}":\n  .zero {max(size, 1)}\n']
        if version and version != "Base":
            versions.setdefault(version, []).append(name)
    src = os.path.join(work, soname + ".s")
    with open(src, "w") as f:
        f.write("".join(asm))
    cmd = ["gcc", "-shared", "-nostdlib", "-o", os.path.join(out_dir, soname), src, f"-Wl,-soname,{soname}"]
    if versions:
        script = os.path.join(work, soname + ".map")
        with open(script, "w") as f:
            for v, names in versions.items():
                f.write(v + " { global:\n" + "".join(f'  "{n}";\n' for n in names) + "};\n")
        cmd.append(f"-Wl,--version-script={script}")
    subprocess.run(cmd, check=True)


def main():
    out_dir, binaries = sys.argv[1], sys.argv[2:]
    os.makedirs(out_dir, exist_ok=True)
    paths = resolved(binaries)
    todo = [n for b in binaries for n in needed(b)]
    seen, kept, stubs = set(), [], []
    while todo:  # walk DT_NEEDED from the binaries, descending only into kept libraries
        soname = todo.pop()
        if soname in seen:
            continue
        seen.add(soname)
        if PROVIDED.match(soname):
            continue
        if soname not in paths:
            sys.exit(f"device_bundle: {soname} is needed but ldd did not resolve it")
        if KEEP.match(soname):
            kept.append(soname)
            todo += needed(paths[soname])
        else:
            stubs.append(soname)
    with tempfile.TemporaryDirectory() as work:
        for soname in sorted(kept):
            shutil.copyfile(paths[soname], os.path.join(out_dir, soname))
            print(f"kept  {soname:40s} {os.path.getsize(paths[soname]) / 1e6:7.2f} MB")
        for soname in sorted(stubs):
            write_stub(paths[soname], soname, out_dir, work)
            print(f"stub  {soname:40s} {os.path.getsize(os.path.join(out_dir, soname)) / 1e6:7.2f} MB "
                  f"(for {os.path.getsize(paths[soname]) / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
