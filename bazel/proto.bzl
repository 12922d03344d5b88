"""Protobuf C++ code generated with Debian's system protoc.

@com_google_protobuf cannot be fetched offline, so cc_proto_library is out of reach; a genrule
runs the system compiler and a cc_library wraps what it writes.
"""

def lmdx_cc_proto_library(name, srcs, deps = [], visibility = None):
    """Generates and compiles C++ for the .proto files in srcs.

    Args:
      name: the cc_library to create.
      srcs: .proto files in this package.
      deps: other lmdx_cc_proto_library targets whose .proto files these import.
      visibility: visibility of the cc_library.
    """
    headers = [src.replace(".proto", ".pb.h") for src in srcs]
    sources = [src.replace(".proto", ".pb.cc") for src in srcs]
    native.genrule(
        name = name + "_protoc",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = headers + sources,
        cmd = "protoc --proto_path=. --proto_path=$(GENDIR) --cpp_out=$(GENDIR) " +
              " ".join(["$(location %s)" % src for src in srcs]),
    )
    native.filegroup(
        name = name + "_srcs",
        srcs = srcs,
        visibility = visibility,
    )
    native.cc_library(
        name = name,
        srcs = sources,
        hdrs = headers,
        deps = deps + ["//third_party/system:protobuf"],
        visibility = visibility,
    )
