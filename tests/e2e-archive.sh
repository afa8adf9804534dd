#!/bin/bash
# End-to-end tests of qk-archive: byte-identical archives from the same files
# whatever their times, owners and mode bits; verify naming every altered,
# missing or extra file; extraction that reproduces the tree and refuses
# hostile archives (.., absolute paths, links, devices) without writing
# anything; damaged archives and usage errors.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

qa=bin/qk-archive
tmp=build/tests/tmp/archive
rm -rf "$tmp" && mkdir -p "$tmp"

# --- an input tree: nested folders, an empty file, a path longer than 100
# bytes, a name with a space and non-ASCII letters, 256 KiB of noise
src="$tmp/src"
long="figures/02_$(printf 'long%.0s' $(seq 30))"
mkdir -p "$src/results/study" "$src/figures/01_inventory" "$src/$long" "$src/report"
printf 'model,r_q0\nllama,0.93\n' > "$src/results/study/qk.csv"
seq 1 5000 > "$src/results/study/numbers.tsv"
: > "$src/results/empty.csv"
printf 'caf\xc3\xa9\n' > "$src/results/study/caf"$'\xc3\xa9'" table.csv"
python3 -c 'import random, sys; r = random.Random(7); sys.stdout.buffer.write(bytes(r.getrandbits(8) for _ in range(262144)))' \
    > "$src/figures/01_inventory/figure.png"
echo '<svg/>' > "$src/figures/01_inventory/figure.svg"
echo '# inventory' > "$src/figures/01_inventory/README.md"
echo 'deep' > "$src/$long/figure.svg"
echo '<html></html>' > "$src/report/index.html"
n_files=$(find "$src" -type f | wc -l)

create() { # output, root, extra arguments...
    local out=$1 root=$2
    shift 2
    run "$qa" create --output "$out" --root "$root" --suite-version test-1.0 \
        --param SEED=7 --param 'DATASETS=a b' --param DATA= "$@" results figures report
}

# --- usage errors: exit 1
run "$qa"
expect_status 1 "no command"
run "$qa" pack x
expect_status 1 "unknown command"
run "$qa" create results
expect_status 1 "create without --output"
run "$qa" create --output "$tmp/u.tar.gz"
expect_status 1 "create without PATH"
run "$qa" create --output "$tmp/u.tar.gz" --param NOVALUE results
expect_status 1 "--param without '='"
run "$qa" create --output "$tmp/u.tar.gz" --param 'A=1' --param 'A=2' results
expect_status 1 "--param given twice"
run "$qa" create --output "$tmp/u.tar.gz" --param $'A=x\ny' results
expect_status 1 "--param with a newline"
run "$qa" create --output "$tmp/u.tar.gz" /etc
expect_status 1 "absolute PATH"
run "$qa" create --output "$tmp/u.tar.gz" results/../..
expect_status 1 "PATH with .."
run "$qa" create --output "$tmp/u.tar.gz" --bogus results
expect_status 1 "unknown option"
run "$qa" verify
expect_status 1 "verify without FILE"
run "$qa" verify a b
expect_status 1 "verify with two FILEs"
run "$qa" extract a
expect_status 1 "extract without DIR"
expect_missing "$tmp/u.tar.gz" "no output after usage errors"
run "$qa" --help
expect_status 0 "--help"
expect_out "qk-archive verify [--quiet] FILE" "--help shows the commands"
run "$qa" verify --help
expect_status 0 "verify --help"
run "$qa" --version
expect_status 0 "--version"
expect_out "qk-archive " "--version prints the name"

# --- create, twice: the same bytes
create "$tmp/a.tar.gz" "$src"
expect_status 0 "create"
expect_out "$n_files files archived" "create summary"
expect_no_temporaries "$tmp" "create leaves no temporary"
create "$tmp/b.tar.gz" "$src"
if cmp -s "$tmp/a.tar.gz" "$tmp/b.tar.gz"; then ok; else bad "two runs give the same bytes"; fi
run "$qa" create --output "$tmp/c.tar.gz" --root "$src" --param 'DATA=' --suite-version test-1.0 \
    --param 'DATASETS=a b' --param SEED=7 report ./figures/ results//
expect_status 0 "create with the arguments in another order"
if cmp -s "$tmp/a.tar.gz" "$tmp/c.tar.gz"; then ok; else bad "order of --param and PATHs does not matter"; fi
LC_ALL=C.UTF-8 create "$tmp/d.tar.gz" "$src"
if cmp -s "$tmp/a.tar.gz" "$tmp/d.tar.gz"; then ok; else bad "the locale does not matter"; fi

# the same files with other mtimes, mode bits and (as root) owners
src2="$tmp/src2"
cp -r "$src" "$src2"
find "$src2" -exec touch -d '2001-02-03 04:05:06' {} +
chmod 600 "$src2/results/study/qk.csv"
chmod 755 "$src2/report/index.html"
chmod 700 "$src2/figures"
if [ "$(id -u)" -eq 0 ]; then chown -R 1234:5678 "$src2"; fi
create "$tmp/e.tar.gz" "$src2"
expect_status 0 "create from the copy"
if cmp -s "$tmp/a.tar.gz" "$tmp/e.tar.gz"; then ok; else bad "times, modes and owners do not matter"; fi

# --- the format: MANIFEST first, sorted entries, fixed metadata, gzip without a time
tar -tzf "$tmp/a.tar.gz" > "$tmp/names.txt"
expect_file_line "$tmp/names.txt" 1 "MANIFEST" "MANIFEST is the first entry"
if tail -n +2 "$tmp/names.txt" | LC_ALL=C sort -c 2>/dev/null; then ok; else bad "entries sorted bytewise"; fi
expect_same "$((n_files + 1))" "$(wc -l < "$tmp/names.txt")" "one entry per file, no directories"
bad_meta=$(tar -tvzf "$tmp/a.tar.gz" | grep -v '^-rw-r--r-- 0/0 .* 1970-01-01 00:00 ' | head -3)
expect_same "" "$bad_meta" "every entry: mode 0644, owner 0/0, mtime 0"
expect_same "00000000" "$(od -A n -t x1 -j 4 -N 4 "$tmp/a.tar.gz" | tr -d ' ')" "gzip header without a time"
if gzip -t "$tmp/a.tar.gz" 2>/dev/null; then ok; else bad "gzip -t accepts the archive"; fi
tar -xzOf "$tmp/a.tar.gz" MANIFEST > "$tmp/MANIFEST"
expect_file_line "$tmp/MANIFEST" 1 "qkreport-manifest 1" "manifest magic"
expect_file_line "$tmp/MANIFEST" 2 "suite-version test-1.0" "suite version"
expect_file_line "$tmp/MANIFEST" 3 "param DATA=" "parameters sorted (1)"
expect_file_line "$tmp/MANIFEST" 4 "param DATASETS=a b" "parameters sorted (2)"
expect_file_line "$tmp/MANIFEST" 5 "param SEED=7" "parameters sorted (3)"
expect_file_line "$tmp/MANIFEST" 6 "files $n_files" "file count"
want=$(sha256sum "$src/results/study/qk.csv" | cut -d' ' -f1)
if grep -qxF "$want $(stat -c %s "$src/results/study/qk.csv") results/study/qk.csv" "$tmp/MANIFEST"; then
    ok; else bad "manifest line: sha256 size path"; fi
run "$qa" list "$tmp/a.tar.gz"
expect_status 0 "list"
expect_out_lines "$((n_files + 1))" "list: one line per entry"

# --- verify
run "$qa" verify "$tmp/a.tar.gz"
expect_status 0 "verify a fresh archive"
expect_out "$n_files files verified" "verify summary"
expect_out_lines 1 "verify prints one line"
run "$qa" verify --quiet "$tmp/a.tar.gz"
expect_status 0 "verify --quiet a fresh archive"
expect_out_lines 0 "verify --quiet prints nothing"

# repack.py SRC DST ACTION ARG: re-packs SRC with one file flipped (one
# byte changed), grown, dropped or added (ARG: its path), or with its
# MANIFEST edited (ARG: "OLD=>NEW", a text replaced); a plain tar when DST
# ends in .tar
cat > "$tmp/repack.py" <<'PY'
import io, sys, tarfile
src, dst, action, path = sys.argv[1:5]
with tarfile.open(src, "r:gz") as t:
    members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
out = []
for m, data in members:
    if m.name == path:
        if action == "flip":
            b = bytearray(data); b[len(b) // 2] ^= 0x01; data = bytes(b)
        elif action == "grow":
            data += b"!"
        elif action == "drop":
            continue
    if m.name == "MANIFEST" and action == "manifest":
        old, new = path.split("=>")
        assert old.encode() in data
        data = data.replace(old.encode(), new.encode(), 1)
    out.append((m, data))
if action == "add":
    out.append((tarfile.TarInfo(path), b"not in the manifest\n"))
with tarfile.open(dst, "w" if dst.endswith(".tar") else "w:gz", format=tarfile.PAX_FORMAT) as t:
    for m, data in out:
        m.size = len(data)
        t.addfile(m, io.BytesIO(data))
PY
e="qk-archive: error: $tmp/t.tar.gz"
# (each expected line names its member in full, between "FILE: " and ": ")
tampered() { # action, arg, name, expected line prefixes...
    python3 "$tmp/repack.py" "$tmp/a.tar.gz" "$tmp/t.tar.gz" "$1" "$2"
    local name=$3
    shift 3
    run "$qa" verify "$tmp/t.tar.gz"
    expect_status 2 "$name: exit status"
    expect_error_lines "$name: the members named" "$@"
    expect_same "$(cat "$e2e_out")" "" "$name: no 'verified' line"
}
want_sum=$(sha256sum "$src/results/study/numbers.tsv" | cut -d' ' -f1)
tampered flip results/study/numbers.tsv "one byte changed" \
    "$e: results/study/numbers.tsv: content differs from MANIFEST (sha256 "
if grep -qF "MANIFEST says $want_sum)" "$e2e_err"; then ok; else bad "the digest MANIFEST holds"; fi
tampered flip figures/01_inventory/figure.png "one byte of a figure changed" \
    "$e: figures/01_inventory/figure.png: content differs from MANIFEST"
tampered grow report/index.html "a member of another size" \
    "$e: report/index.html: size differs from MANIFEST (15 bytes, MANIFEST says 14)"
tampered drop figures/01_inventory/README.md "a missing member" \
    "$e: figures/01_inventory/README.md: listed in MANIFEST but missing from the archive"
tampered drop results/study/qk.csv "the last member missing" \
    "$e: results/study/qk.csv: listed in MANIFEST but missing from the archive"
tampered add results/extra.csv "an extra member" \
    "$e: results/extra.csv: not listed in MANIFEST (extra file)"
# an altered MANIFEST: each member it no longer describes is named
tampered manifest "$want_sum=>${want_sum:0:63}0" "MANIFEST with another digest" \
    "$e: results/study/numbers.tsv: content differs from MANIFEST"
tampered manifest " 14 report/index.html=> 41 report/index.html" "MANIFEST with another size" \
    "$e: report/index.html: size differs from MANIFEST (14 bytes, MANIFEST says 41)"
tampered manifest " report/index.html=> report/index.htm" "MANIFEST with a renamed file" \
    "$e: report/index.html: not listed in MANIFEST (extra file)" \
    "$e: report/index.htm: listed in MANIFEST but missing from the archive"
tampered manifest "files $n_files=>files $((n_files + 1))" "MANIFEST with a wrong count" \
    "$e: MANIFEST: line 6: 'files $((n_files + 1))' but $n_files lines follow"
tampered manifest "param SEED=7=>param SEED=7
param SEED=8" "MANIFEST with a repeated parameter" \
    "$e: MANIFEST: line 6: parameters not sorted by key or repeated"
python3 "$tmp/repack.py" "$tmp/a.tar.gz" "$tmp/t.tar.gz" flip results/study/qk.csv
run "$qa" extract "$tmp/t.tar.gz" "$tmp/t-out"
expect_status 2 "extract refuses a tampered archive"
expect_error_lines "extract names the altered member" \
    "$e: results/study/qk.csv: content differs from MANIFEST"
expect_missing "$tmp/t-out" "nothing extracted from a tampered archive"
# a folder on disk where a member goes: refused before anything is written
mkdir -p "$tmp/busy/results/study/qk.csv"
run "$qa" extract "$tmp/a.tar.gz" "$tmp/busy"
expect_status 2 "extract over a folder where a member goes"
expect_error_lines "extract names the member in the way" \
    "qk-archive: error: $tmp/a.tar.gz: results/study/qk.csv: refusing to extract: $tmp/busy/results/study/qk.csv is a directory"
expect_same "" "$(find "$tmp/busy" -type f)" "nothing extracted over a folder in the way"

# --- damaged archives: exit 2, one line naming the member where the damage is
# (the random figure.png fills most of the .tar.gz: half of it cuts that member)
size=$(stat -c %s "$tmp/a.tar.gz")
head -c $((size / 2)) "$tmp/a.tar.gz" > "$tmp/half.tar.gz"
run "$qa" verify "$tmp/half.tar.gz"
expect_status 2 "truncated archive: exit status"
expect_error_lines "truncated archive: the member cut" \
    "qk-archive: error: $tmp/half.tar.gz: figures/01_inventory/figure.png: damaged or truncated archive inside this member (the gzip data ends early); $((n_files - 2)) more files of MANIFEST not reached"
head -c 100 "$tmp/a.tar.gz" > "$tmp/head.tar.gz"
run "$qa" verify "$tmp/head.tar.gz"
expect_status 2 "archive cut in its first member: exit status"
expect_error_lines "archive cut in its first member: MANIFEST named" \
    "qk-archive: error: $tmp/head.tar.gz: MANIFEST: damaged or truncated archive at the first member (the gzip data ends early)"
head -c $((size - 4)) "$tmp/a.tar.gz" > "$tmp/short.tar.gz"
run "$qa" verify "$tmp/short.tar.gz"
expect_status 2 "archive without its gzip trailer: exit status"
expect_error_lines "archive without its gzip trailer: every member intact" \
    "qk-archive: error: $tmp/short.tar.gz: damaged archive after its last member (the gzip data ends early)"
{ cat "$tmp/a.tar.gz"; echo junk; } > "$tmp/junk.tar.gz"
run "$qa" verify "$tmp/junk.tar.gz"
expect_status 2 "bytes after the gzip data: exit status"
expect_error_lines "bytes after the gzip data: one line" \
    "qk-archive: error: $tmp/junk.tar.gz: damaged archive after its last member (5 bytes of something else after the gzip data)"
run "$qa" extract "$tmp/half.tar.gz" "$tmp/half-out"
expect_status 2 "extract of a truncated archive"
expect_error_lines "extract of a truncated archive names the member" \
    "qk-archive: error: $tmp/half.tar.gz: figures/01_inventory/figure.png: damaged or truncated archive inside this member"
expect_missing "$tmp/half-out" "nothing extracted from a truncated archive"
# the plain tar inside: cut at known offsets, a header edited
gzip -dc "$tmp/a.tar.gz" > "$tmp/a.tar"
run "$qa" verify "$tmp/a.tar"
expect_status 0 "a plain tar verifies"
offsets() { # member: the offsets of its header and its data in a.tar
    python3 -c 'import sys, tarfile
m = tarfile.open(sys.argv[1]).getmember(sys.argv[2]); print(m.offset, m.offset_data)' "$tmp/a.tar" "$1"
}
read -r head_at data_at < <(offsets results/study/numbers.tsv)
head -c $((data_at + 1000)) "$tmp/a.tar" > "$tmp/cut.tar"
run "$qa" verify "$tmp/cut.tar"
expect_status 2 "tar cut inside a member: exit status"
expect_error_lines "tar cut inside a member: the member named" \
    "qk-archive: error: $tmp/cut.tar: results/study/numbers.tsv: damaged or truncated archive inside this member (Truncated tar archive); 1 more file of MANIFEST not reached"
head -c $((head_at + 100)) "$tmp/a.tar" > "$tmp/cut.tar"
run "$qa" verify "$tmp/cut.tar"
expect_status 2 "tar cut inside a header: exit status"
expect_error_lines "tar cut inside a header: the member named" \
    "qk-archive: error: $tmp/cut.tar: results/study/numbers.tsv: damaged or truncated archive where this member should start, after 'results/study/café table.csv'"
read -r head_at data_at < <(offsets report/index.html)
python3 - "$tmp/a.tar" "$tmp/bad-header.tar" "$head_at" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
h = int(sys.argv[3])
data[h + 5] ^= 1   # a byte of the name: the header checksum no longer matches
open(sys.argv[2], "wb").write(data)
PY
run "$qa" verify "$tmp/bad-header.tar"
expect_status 2 "a damaged header: exit status"
expect_error_lines "a damaged header: the member named" \
    "qk-archive: error: $tmp/bad-header.tar: report/index.html: damaged or truncated archive where this member should start"
python3 - "$tmp/a.tar" "$tmp/resized.tar" "$head_at" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
h = int(sys.argv[3])
data[h + 124:h + 136] = b"%011o\0" % 600    # size 14 -> 600, checksum fixed
data[h + 148:h + 156] = b" " * 8
data[h + 148:h + 156] = b"%06o\0 " % sum(data[h:h + 512])
open(sys.argv[2], "wb").write(data)
PY
run "$qa" verify "$tmp/resized.tar"
expect_status 2 "a member's header size changed: exit status"
expect_error_lines "a member's header size changed: it and the member it swallows named" \
    "qk-archive: error: $tmp/resized.tar: report/index.html: size differs from MANIFEST (600 bytes, MANIFEST says 14)" \
    "qk-archive: error: $tmp/resized.tar: results/empty.csv: listed in MANIFEST but missing from the archive"
echo "not an archive" > "$tmp/text.tar.gz"
run "$qa" verify "$tmp/text.tar.gz"
expect_status 2 "not an archive: exit status"
expect_one_line_naming "$tmp/text.tar.gz" "not a readable tar.gz archive" "not an archive: one line"
run "$qa" verify "$tmp/absent.tar.gz"
expect_status 2 "missing archive"
expect_one_line_naming "$tmp/absent.tar.gz" "cannot open" "missing archive: one line"
tar -czf "$tmp/plain.tar.gz" -C "$src" results
run "$qa" verify "$tmp/plain.tar.gz"
expect_status 2 "archive without MANIFEST"
expect_one_line_naming "$tmp/plain.tar.gz" "not MANIFEST" "archive without MANIFEST: one line"

# --- extract a good archive: the same files, and MANIFEST
run "$qa" extract "$tmp/a.tar.gz" "$tmp/out"
expect_status 0 "extract"
expect_out "$n_files files extracted" "extract summary"
for d in results figures report; do
    if diff -r "$src/$d" "$tmp/out/$d" > /dev/null; then ok; else bad "extracted $d equals the input"; fi
done
if cmp -s "$tmp/MANIFEST" "$tmp/out/MANIFEST"; then ok; else bad "MANIFEST extracted"; fi
run "$qa" extract "$tmp/a.tar.gz" "$tmp/out"
expect_status 0 "extract again over the same files"

# --- hostile archives: a valid MANIFEST, then one entry that must never be written
jail="$tmp/jail"
mkdir -p "$jail/inside"
cat > "$tmp/hostile.py" <<'PY'
import io, sys, tarfile
good, dst, kind = sys.argv[1:4]
with tarfile.open(good, "r:gz") as t:
    m = t.getmember("MANIFEST")
    manifest = t.extractfile(m).read()
entries = {
    "dotdot": ("../evil", tarfile.REGTYPE, ""),
    "nested-dotdot": ("results/../../evil", tarfile.REGTYPE, ""),
    "absolute": ("/abs/path", tarfile.REGTYPE, ""),
    "symlink": ("results/link", tarfile.SYMTYPE, "../../outside"),
    "hardlink": ("results/hard", tarfile.LNKTYPE, "/etc/passwd"),
    "device": ("results/null", tarfile.CHRTYPE, ""),
    "directory": ("results", tarfile.DIRTYPE, ""),
}
name, kind_type, target = entries[kind]
with tarfile.open(dst, "w:gz", format=tarfile.PAX_FORMAT) as t:
    t.addfile(m, io.BytesIO(manifest))
    e = tarfile.TarInfo(name)
    e.type = kind_type
    e.linkname = target
    data = b"evil\n" if kind_type == tarfile.REGTYPE else b""
    e.size = len(data)
    t.addfile(e, io.BytesIO(data))
PY
snapshot() { find "$jail" -printf '%p %s %T@\n' | sort; }
hostile() { # kind, entry name, expected text
    python3 "$tmp/hostile.py" "$tmp/a.tar.gz" "$tmp/h-$1.tar.gz" "$1"
    local before
    before=$(snapshot)
    run "$qa" extract "$tmp/h-$1.tar.gz" "$jail/inside/dest"
    expect_status 2 "hostile $1: exit status"
    expect_one_line_naming "$tmp/h-$1.tar.gz: $2: " "$3" "hostile $1: one line naming the entry"
    expect_same "$before" "$(snapshot)" "hostile $1: nothing written"
    run "$qa" verify "$tmp/h-$1.tar.gz"
    expect_status 2 "hostile $1: verify fails too"
    # the entry named first, then every file of MANIFEST, none of them in the archive
    if [[ "$(head -1 "$e2e_err")" == "qk-archive: error: $tmp/h-$1.tar.gz: $2: $3"* ]]; then ok; else
        bad "hostile $1: verify names the entry '$2' first"; fi
    expect_same "$(tail -n +2 "$e2e_err" | sed "s|^qk-archive: error: $tmp/h-$1.tar.gz: ||; s|: listed in MANIFEST but missing from the archive$||")" \
        "$(tail -n +7 "$tmp/MANIFEST" | cut -d' ' -f3-)" "hostile $1: verify names every file of MANIFEST as missing"
}
hostile dotdot "../evil" "'..' component"
hostile nested-dotdot "results/../../evil" "'..' component"
hostile absolute "/abs/path" "absolute path"
hostile symlink "results/link" "symbolic link"
hostile hardlink "results/hard" "hard link"
hostile device "results/null" "device"
hostile directory "results/" "directory entry"
expect_missing /abs/path "no file at the absolute path"

# the second guard: a link already inside DIR is not followed
mkdir -p "$jail/linked" "$jail/outside"
ln -s ../outside "$jail/linked/results"
run "$qa" extract "$tmp/a.tar.gz" "$jail/linked"
expect_status 2 "extract through a symbolic link in DIR: exit status"
expect_same "" "$(ls -A "$jail/outside")" "nothing written through the link"

# --- inputs create refuses: exit 2, one line, no output
bad_input() { # name, path, expected text
    run "$qa" create --output "$tmp/bad.tar.gz" --root "$tmp/badsrc" results
    expect_status 2 "$1: exit status"
    expect_one_line_naming "$2" "$3" "$1: one line naming the file"
    expect_missing "$tmp/bad.tar.gz" "$1: no archive written"
    expect_no_temporaries "$tmp" "$1: no temporary left"
}
rm -rf "$tmp/badsrc" && cp -r "$src" "$tmp/badsrc"
ln -s study/qk.csv "$tmp/badsrc/results/link.csv"
bad_input "symbolic link" "$tmp/badsrc/results/link.csv" "symbolic link"
rm "$tmp/badsrc/results/link.csv"
mkfifo "$tmp/badsrc/results/fifo"
bad_input "fifo" "$tmp/badsrc/results/fifo" "not a regular file"
rm "$tmp/badsrc/results/fifo"
run "$qa" create --output "$tmp/bad.tar.gz" --root "$tmp/badsrc" results/absent
expect_status 2 "missing input"
expect_one_line_naming "$tmp/badsrc/results/absent" "cannot stat" "missing input: one line"
printf 'x\n' > "$tmp/badsrc/MANIFEST"
run "$qa" create --output "$tmp/bad.tar.gz" --root "$tmp/badsrc" .
expect_status 2 "a file named MANIFEST"
expect_one_line_naming "$tmp/badsrc/MANIFEST" "reserved" "a file named MANIFEST: one line"

# an earlier archive inside the packed tree is not packed again
rm -f "$tmp/badsrc/MANIFEST"
run "$qa" create --output "$tmp/badsrc/results/self.tar.gz" --root "$tmp/badsrc" results
cp "$tmp/badsrc/results/self.tar.gz" "$tmp/self1.tar.gz"
run "$qa" create --output "$tmp/badsrc/results/self.tar.gz" --root "$tmp/badsrc" results
expect_status 0 "create over an archive inside the input"
if cmp -s "$tmp/self1.tar.gz" "$tmp/badsrc/results/self.tar.gz"; then ok; else
    bad "the output is never packed into itself"; fi

finish
