#!/usr/bin/env python3
"""Converts docs/openapi.yaml to JSON and embeds it in a C++ header (CMake runs this at
build time; server/openapi.cc serves the result at GET /v1/openapi.json).

Usage: openapi_embed.py OPENAPI_YAML OUT_HEADER OUT_JSON

Refuses YAML that JSON cannot say the same way: duplicate keys (PyYAML would keep the
last silently) and keys or values that are not JSON types (an unquoted date, say).
"""
import json
import sys

import yaml

DELIMITER = "sluice_openapi"
# ISO C++ compilers need only support string literals of 65536 bytes (-Woverlength-
# strings under -Wpedantic): the document is cut into parts well below that.
PART_BYTES = 16000


class StrictLoader(yaml.SafeLoader):
    pass


def construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str):
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is not a string (quote it)", key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen[key] = True
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    source, out_header, out_json = sys.argv[1:]
    with open(source, encoding="utf-8") as f:
        document = yaml.load(f, Loader=StrictLoader)
    text = json.dumps(document, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    if ")" + DELIMITER + '"' in text:
        sys.exit(f"{source} contains the raw-string delimiter ){DELIMITER}\"")
    parts = [text[i:i + PART_BYTES] for i in range(0, len(text), PART_BYTES)]
    with open(out_json, "w", encoding="utf-8") as f:
        f.write(text)
        f.write("\n")
    with open(out_header, "w", encoding="utf-8") as f:
        f.write("// Generated from docs/openapi.yaml by server/openapi_embed.py. Do not edit.\n")
        f.write("#pragma once\n\n#include <string_view>\n\n")
        f.write("namespace sluice::generated {\n")
        f.write("// The document as compact JSON, in parts to be joined in order.\n")
        f.write("inline constexpr std::string_view kOpenApiJsonParts[] = {\n")
        for part in parts:
            f.write(f'    R"{DELIMITER}({part}){DELIMITER}",\n')
        f.write("};\n}  // namespace sluice::generated\n")


if __name__ == "__main__":
    main()
