"""Generates the Python modules of every proto of package dpq.v1 (proto/dpq/v1/*.proto) with protoc
and Debian's grpc_python_plugin (no grpc_tools needed).

The modules land in OUT/dpq/v1/, i.e. inside the `dpq` package itself: the proto package dpq.v1 is
the Python package dpq.v1, so the generated `from dpq.v1 import dpq_pb2` imports resolve against
the installed client. Used by setup.py (pip install) and by the CMake target dpq_python_stubs.

    python3 generate_stubs.py --proto-root ../../proto --out build/lib

PROTOC and GRPC_PYTHON_PLUGIN (environment or flags) override the tools found on PATH.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

PROTO_PACKAGE_DIR = os.path.join("dpq", "v1")


def proto_files(proto_root):
    """Every .proto of package dpq.v1, sorted (a proto added there needs no edit here)."""
    files = sorted(glob.glob(os.path.join(proto_root, PROTO_PACKAGE_DIR, "*.proto")))
    if not files:
        raise SystemExit("generate_stubs: no .proto under %s (set --proto-root or DPQ_PROTO_ROOT "
                         "to the repository's proto/ folder)" % os.path.join(proto_root,
                                                                             PROTO_PACKAGE_DIR))
    return files


def find_tool(name, override):
    path = override or shutil.which(name)
    if not path or not os.path.exists(path):
        raise SystemExit("generate_stubs: %s not found (apt-get install protobuf-compiler "
                         "protobuf-compiler-grpc, or set %s)" % (name, name.upper()))
    return path


def generate(proto_root, out_dir, protoc=None, plugin=None):
    """Writes OUT/dpq/v1/<name>_pb2.py and <name>_pb2_grpc.py for every proto, plus the package's
    __init__.py files where missing. Returns the generated paths."""
    protoc = find_tool("protoc", protoc or os.environ.get("PROTOC"))
    plugin = find_tool("grpc_python_plugin", plugin or os.environ.get("GRPC_PYTHON_PLUGIN"))
    protos = proto_files(proto_root)
    os.makedirs(os.path.join(out_dir, PROTO_PACKAGE_DIR), exist_ok=True)
    subprocess.run([protoc, "-I", proto_root, "--python_out=" + out_dir, "--grpc_out=" + out_dir,
                    "--plugin=protoc-gen-grpc=" + plugin] + protos, check=True)
    init = os.path.join(out_dir, PROTO_PACKAGE_DIR, "__init__.py")
    if not os.path.exists(init):
        with open(init, "w") as f:
            f.write('"""Generated protobuf and gRPC modules of the dpq.v1 API."""\n')
    generated = []
    for proto in protos:
        stem = os.path.splitext(os.path.basename(proto))[0]
        for suffix in ("_pb2.py", "_pb2_grpc.py"):
            generated.append(os.path.join(out_dir, PROTO_PACKAGE_DIR, stem + suffix))
    return generated


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--proto-root", default=os.environ.get("DPQ_PROTO_ROOT") or
                        os.path.join(here, "..", "..", "proto"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--protoc")
    parser.add_argument("--grpc-python-plugin")
    args = parser.parse_args(argv)
    for path in generate(args.proto_root, args.out, args.protoc, args.grpc_python_plugin):
        print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
