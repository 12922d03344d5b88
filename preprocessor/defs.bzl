"""lmdx_cc_binary: a cc_binary whose C and C++ sources go through lmdxpp first."""

_SOURCE_EXTENSIONS = [".c", ".cc", ".cpp", ".cxx", ".c++", ".C"]

def _is_source(src):
    for extension in _SOURCE_EXTENSIONS:
        if src.endswith(extension):
            return True
    return False

def lmdx_cc_binary(name, srcs, deps = [], copts = [], **kwargs):
    """Builds an LMDX program written with LMDX_shared, LMDX_thread and the other constructs.

    Each C or C++ file of srcs is translated by //preprocessor:lmdxpp into
    _lmdxpp/<name>/<file> (its #line directives name the original file, so compiler messages
    point at it); headers and other files are compiled as they are. The program links
    //api:lmdx. Other arguments are those of cc_binary.

    Args:
      name: the program's name.
      srcs: its sources, by file name in this package.
      deps: further cc libraries.
      copts: further compiler options.
      **kwargs: passed to cc_binary (data, visibility, linkopts, ...).
    """
    package = native.package_name()
    compiled = []
    for index, src in enumerate(srcs):
        if type(src) != "string" or not _is_source(src) or src.startswith(":") or src.startswith("//"):
            compiled.append(src)
            continue
        out = "_lmdxpp/%s/%s" % (name, src)
        shown = package + "/" + src if package else src
        native.genrule(
            name = "%s_lmdxpp_%d" % (name, index),
            srcs = [src],
            outs = [out],
            cmd = "$(execpath %s) $< -o $@ --name %s --no-notes" % (Label("//preprocessor:lmdxpp"), shown),
            tools = [Label("//preprocessor:lmdxpp")],
            visibility = ["//visibility:private"],
        )
        compiled.append(out)

    # Quoted includes ("grid.h") are searched next to the original source, not the translation.
    native.cc_binary(
        name = name,
        srcs = compiled,
        deps = deps + [Label("//api:lmdx")],
        copts = copts + ["-iquote", package if package else "."],
        **kwargs
    )
