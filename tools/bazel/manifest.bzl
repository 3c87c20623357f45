"""Files derived from the shim manifest (shims/shim_manifest.tsv), one macro each so no BUILD file retypes the
generator's command line."""

def manifest_version_script(name, platform, out):
    """A linker version script exporting exactly `platform`'s shims."""
    native.genrule(
        name = name,
        srcs = ["//shims:shim_manifest.tsv"],
        outs = [out],
        cmd = "$(location //tools/manifest:manifest) --manifest $(location //shims:shim_manifest.tsv) " +
              "version-script --platform %s $@" % platform,
        tools = ["//tools/manifest:manifest"],
    )

def manifest_def_file(name, platform, library, out):
    """A Windows .def listing `platform`'s shims (with the note on what must not be listed)."""
    native.genrule(
        name = name,
        srcs = ["//shims:shim_manifest.tsv"],
        outs = [out],
        cmd = "$(location //tools/manifest:manifest) --manifest $(location //shims:shim_manifest.tsv) " +
              "def --platform %s --library %s $@" % (platform, library),
        tools = ["//tools/manifest:manifest"],
    )
