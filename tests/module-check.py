#!/usr/bin/python3
"""Checks the library's module structure (workflow/build.mk):

- no header include cycle: for each header of include/qk/ and src/lib/*/,
  the headers it includes, transitively, never include it back;
- a module's files include only the headers of the module itself and of
  the modules it uses (MODULE_HEADERS_<m>, MODULE_USES_<m>);
- every header of include/qk/ belongs to one module;
- the modules that never exit (core, io, analysis) call no qk_die or exit.

Prints one line per problem and exits 1 when there is one."""
import glob
import os
import re
import sys

NEVER_EXIT = ("core", "io", "analysis")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def build_mk_lists(prefix):
    text = open("workflow/build.mk").read()
    return {m: v.split() for m, v in re.findall(r"^%s_(\w+)\s*:=[ \t]*(.*)$" % prefix, text, re.M)}


def header_path(including, name):
    """The file an #include "name" of file including names, or None."""
    for base in (os.path.dirname(including), "include"):
        path = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(path):
            return path
    return None


def includes(path):
    found = []
    for name in INCLUDE.findall(open(path, errors="replace").read()):
        target = header_path(path, name)
        if target:
            found.append(target)
    return found


def include_cycles(headers):
    problems = []
    graph = {h: includes(h) for h in headers}
    for start in headers:
        seen, todo = set(), list(graph[start])
        while todo:
            h = todo.pop()
            if h == start:
                problems.append("include cycle: %s includes itself through %s"
                                % (start, " ".join(sorted(seen)) or "itself"))
                break
            if h in seen:
                continue
            seen.add(h)
            todo.extend(graph.get(h) or includes(h))
    return problems


def layering(headers_of, uses):
    problems = []
    owner = {h: m for m, hs in headers_of.items() for h in hs}
    for h in sorted(glob.glob("include/qk/*.h")):
        if os.path.basename(h)[:-2] not in owner:
            problems.append("%s belongs to no module (MODULE_HEADERS_* in workflow/build.mk)" % h)
    for module in headers_of:
        allowed = {module, *uses.get(module, [])}
        public = ["include/qk/%s.h" % h for h in headers_of[module]]
        for path in sorted(glob.glob("src/lib/%s/*.[ch]" % module)) + public:
            if not os.path.isfile(path):
                problems.append("%s (MODULE_HEADERS_%s) does not exist" % (path, module))
                continue
            for name in INCLUDE.findall(open(path).read()):
                if not name.startswith("qk/"):
                    continue
                used = owner.get(name[3:-2])
                if used not in allowed:
                    problems.append("%s (module %s) includes %s of module %s"
                                    % (path, module, name, used))
    return problems


def exits():
    problems = []
    for module in NEVER_EXIT:
        for path in sorted(glob.glob("src/lib/%s/*.[ch]" % module)):
            for n, line in enumerate(open(path), 1):
                if re.search(r"\b(qk_die|exit|_exit)\s*\(", line):
                    problems.append("%s:%d: module %s never exits: %s" % (path, n, module, line.strip()))
    return problems


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    headers = sorted(glob.glob("include/qk/*.h") + glob.glob("src/lib/*/*.h"))
    problems = include_cycles(headers)
    problems += layering(build_mk_lists("MODULE_HEADERS"), build_mk_lists("MODULE_USES"))
    problems += exits()
    for p in problems:
        print(p)
    print("module-check: %d headers, %d problems" % (len(headers), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
