#!/bin/bash
# End-to-end tests of qk-load as users run it: a real revision directory,
# --stats against the fixtures' truth files, and every kind of bad input
# (exit status 2, one line naming the file, no store written, an earlier
# store left untouched).
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

tmp=build/tests/tmp/e2e-load
rm -rf "$tmp" && mkdir -p "$tmp"

# --- a revision directory: sniffed-mini (2 layers, GQA group 2, head_dim 16)
mini="$tmp/mini"
cp -r tests/data/sniffed-mini "$mini"
chmod -R u+w "$mini"
cat > "$mini/qkreport.conf" <<'EOF'
id = sniffed-mini
n_layers = 2
n_q_heads = 4
n_kv_heads = 2
head_dim = 16
context_length = 131072
bucket_size = 8192
EOF
run bin/qk-load --quiet "$mini" -o "$tmp/mini.qks" --inventory "$tmp/mini.tsv"
expect_status 0 "load sniffed-mini"
run bin/qk-load --verify "$tmp/mini.qks"
expect_status 0 "verify the store"
expect_out "6 configs (6 bf16, 0 float32), 3 pairs, dim 16, $(stat -c %s "$tmp/mini.qks") bytes" \
    "store shape, encodings and size"
expect_file_line "$tmp/mini.tsv" 2 $'sniffed-mini\tsniffed-mini\textra\tother\t3\t3\t1200\t1200\t16\t' "inventory row"
store_bytes=$(awk -F'\t' 'NR == 2 {print $11}' "$tmp/mini.tsv")
expect_same "$store_bytes" "$(stat -c %s "$tmp/mini.qks")" "inventory store_bytes is the store's size"
parquet_bytes=$(awk -F'\t' 'NR == 2 {print $10}' "$tmp/mini.tsv")
if [ "$store_bytes" -lt "$parquet_bytes" ]; then ok; else
    bad "store ($store_bytes bytes) not smaller than its Parquet input ($parquet_bytes bytes)"; fi

# a damaged store: --verify and the stages (which check the checksum by
# default) refuse it with one line naming it
cp "$tmp/mini.qks" "$tmp/damaged.qks"
printf '\x5a' | dd of="$tmp/damaged.qks" bs=1 seek=$(( $(stat -c %s "$tmp/mini.qks") / 2 )) \
    conv=notrunc status=none
run bin/qk-load --verify "$tmp/damaged.qks"
expect_status 2 "damaged store: --verify fails"
expect_one_line_naming "$tmp/damaged.qks" "checksum mismatch" "damaged store: message"
run bin/qk-pca --quiet --threads 1 --output "$tmp/pca.tsv" --heads-output "$tmp/pca_heads.tsv" \
    "$tmp/damaged.qks"
expect_status 2 "damaged store: qk-pca refuses it"
expect_missing "$tmp/pca.tsv" "damaged store: no qk-pca output"
# a damaged header: the checksum covers it, so a change to any field (the
# low bit of its first byte flipped) is refused, the model shape and the
# dataset id included
flip_bit() { # file, offset
    local byte
    byte=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "\\$(printf %03o $(( byte ^ 1 )))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
for field in header_size:12 n_configs:16 n_pairs:20 dim:24 n_layers:28 n_q_heads:32 \
             n_kv_heads:36 context_length:40 bucket_size:44 table_offset:48 file_size:56 \
             checksum:64 dataset_id:72 dataset_id_padding:100; do
    cp "$tmp/mini.qks" "$tmp/header.qks"
    flip_bit "$tmp/header.qks" "${field#*:}"
    if cmp -s "$tmp/mini.qks" "$tmp/header.qks"; then bad "header ${field%:*}: not changed"; fi
    run bin/qk-load --verify "$tmp/header.qks"
    expect_status 2 "header ${field%:*} changed: --verify fails"
    expect_one_line_naming "$tmp/header.qks" "store" "header ${field%:*} changed: message"
done
# another bucket size: the stages refuse the store instead of using it
cp "$tmp/mini.qks" "$tmp/header.qks"
printf '\x00\x10\x00\x00' | dd of="$tmp/header.qks" bs=1 seek=44 conv=notrunc status=none
run bin/qk-plasticity --quiet --out-dir "$tmp/plasticity" "$tmp/header.qks"
expect_status 2 "bucket_size changed: qk-plasticity refuses the store"
expect_one_line_naming "$tmp/header.qks" "checksum mismatch" "bucket_size changed: message"
expect_missing "$tmp/plasticity" "bucket_size changed: no qk-plasticity output"
# a store of an earlier format asks to be rebuilt
cp "$tmp/mini.qks" "$tmp/old.qks"
printf '\x02' | dd of="$tmp/old.qks" bs=1 seek=8 conv=notrunc status=none
run bin/qk-load --verify "$tmp/old.qks"
expect_status 2 "version 2 store"
expect_one_line_naming "$tmp/old.qks" \
    "store version 2, this program reads version 3 (rebuild the store: make load, or run qk-load again)" \
    "version 2 store: message"

# --stats reproduces every truth.json (integers exactly, sums to 1e-9)
for truth in tests/data/sniffed-mini/*/truth.json; do
    config=$(basename "$(dirname "$truth")")
    run bin/qk-load --stats "tests/data/sniffed-mini/$config/data.parquet"
    expect_status 0 "stats $config"
    expect_stats_match "$truth" "stats $config equal truth.json"
done
for truth in tests/data/parquet-variants/*.truth.json tests/data/parquet-encodings/*.truth.json; do
    file=${truth%.truth.json}.parquet
    run bin/qk-load --stats "$file"
    expect_status 0 "stats $(basename "$file")"
    expect_stats_match "$truth" "stats $(basename "$file") equal truth.json"
done
run bin/qk-load --stats "$mini"
expect_status 0 "stats of a whole directory"
expect_out_lines 6 "one line per config"

# --- bad inputs: each replaces l01h01q/data.parquet in a copy of the revision
before=$(sha256sum "$tmp/mini.qks")
bad_case() { # name, description; the file is prepared by the caller
    local name=$1 what=$2
    run bin/qk-load --quiet "$bad" -o "$tmp/mini.qks"
    expect_status 2 "$name: exit status"
    expect_one_line_naming "$bad/l01h01q/data.parquet" "$what" "$name: message"
    expect_same "$before" "$(sha256sum "$tmp/mini.qks")" "$name: earlier store untouched"
    expect_no_temporaries "$tmp" "$name: no temporary left"
}
new_bad() { rm -rf "$bad"; cp -r "$mini" "$bad"; }
bad="$tmp/bad"
good_file="$mini/l01h01q/data.parquet"
size=$(stat -c %s "$good_file")

new_bad; head -c $((size - 3)) "$good_file" > "$bad/l01h01q/data.parquet"
bad_case truncated "magic"
new_bad; head -c $((size / 2)) "$good_file" > "$bad/l01h01q/data.parquet"
bad_case half-file "magic"
new_bad; : > "$bad/l01h01q/data.parquet"
bad_case empty "empty"
new_bad; printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%064d\nsize %d\n' 0 "$size" \
    > "$bad/l01h01q/data.parquet"
bad_case lfs-pointer "git lfs pull"
new_bad; echo "this is not parquet" > "$bad/l01h01q/data.parquet"
bad_case not-parquet "Parquet"
new_bad; cp "$good_file" "$bad/l01h01q/data.parquet"
# corrupt the middle of the file (page data): a decoder error or a checksum-free
# garbage value must still never crash; exit 2 with a message, or 0 if the bytes
# happened to decode to valid values
printf '\xff\xff\xff\xff\xff\xff\xff\xff' | dd of="$bad/l01h01q/data.parquet" bs=1 seek=$((size / 3)) conv=notrunc status=none
run bin/qk-load --quiet "$bad" -o "$tmp/corrupt.qks"
expect_status_in "0 2" "corrupt page bytes: no crash"

# a partial download: query heads whose key file is missing are left out, in one warning
new_bad; rm -rf "$bad/l01h00k"
run bin/qk-load --quiet "$bad" -o "$tmp/partial.qks"
expect_status 0 "missing key file: the other heads are loaded"
# (the capture's _saver_state.json lists the key config: said too)
expect_error_lines "missing key file: one warning naming the first head left out" \
    "qk-load: warning: $bad: 5 of 6 captured configs present (_saver_state.json lists them; l01h00k missing)" \
    "qk-load: warning: $bad: 1 query head without its key file left out (l01h01q needs l01h00k)"
want=$(ls "$bad" | grep -E '^l[0-9]+h[0-9]+q$' | grep -vc '^l01')
expect_same "$(bin/qk-load --verify "$tmp/partial.qks" | grep -o '[0-9]* pairs.*ok$' | cut -d' ' -f1)" "$want" \
    "the partial store verifies and pairs the $want query heads that have their key file"
# no query head with its key file: an error, the store untouched
new_bad; rm -rf "$bad"/l*k
run bin/qk-load --quiet "$bad" -o "$tmp/mini.qks"
expect_status 2 "no key file at all: exit status"
expect_out_contains_err "no query config has its key file" "no key file at all: message"
expect_same "$before" "$(sha256sum "$tmp/mini.qks")" "no key file at all: store untouched"

# a config folder without its Parquet file (an interrupted download): left
# out in one warning, as a missing key file is
new_bad; rm "$bad/l01h01q/data.parquet"
run bin/qk-load --quiet "$bad" -o "$tmp/partial.qks"
expect_status 0 "config folder without Parquet: the other configs are loaded"
expect_error_lines "config folder without Parquet: one warning naming it" \
    "qk-load: warning: $bad: 1 config directory without a Parquet file left out (l01h01q)" \
    "qk-load: warning: $bad: 5 of 6 captured configs present (_saver_state.json lists them; l01h01q missing)"
run bin/qk-load --verify "$tmp/partial.qks"
expect_out "5 configs (5 bf16, 0 float32), 2 pairs" "config folder without Parquet: 5 configs, 2 pairs"
# a second Parquet file in a config folder (a stray copy) would count its
# rows twice: refused
new_bad; cp "$bad/l01h01q/data.parquet" "$bad/l01h01q/data (1).parquet"
run bin/qk-load --quiet "$bad" -o "$tmp/mini.qks"
expect_status 2 "two Parquet files in a config: exit status"
expect_one_line_naming "$bad" "l01h01q holds 2 Parquet files (data (1).parquet, data.parquet)" \
    "two Parquet files in a config: message"
expect_same "$before" "$(sha256sum "$tmp/mini.qks")" "two Parquet files in a config: store untouched"

# a folder of several datasets' folders: the one named by --dataset is
# loaded, whatever sorts first; none named is an error naming DIR and them
several="$tmp/several"
rm -rf "$several" && mkdir -p "$several"
cp -r "$mini" "$several/sniffed-mini"
cp -r "$mini" "$several/a-other"
rm -rf "$several/a-other/l01h01q"
run bin/qk-load --quiet --dataset sniffed-mini "$several" -o "$tmp/named.qks"
expect_status 0 "several dataset folders: the named one loads"
expect_same "$(bin/qk-load --verify "$tmp/named.qks" | grep -o 'checksum.*')" \
    "$(bin/qk-load --verify "$tmp/mini.qks" | grep -o 'checksum.*')" \
    "several dataset folders: the store of the named folder"
run bin/qk-load --quiet --dataset qwen3-8b "$several" -o "$tmp/other.qks"
expect_status 2 "several dataset folders, none named: exit status"
expect_one_line_naming "$several" "2 folders hold configs (a-other, sniffed-mini) and none is named 'qwen3-8b'" \
    "several dataset folders, none named: message naming them"
expect_missing "$tmp/other.qks" "several dataset folders, none named: no store"
# the only folder is another registry dataset's: refused, not loaded under the wrong name
rm -rf "$several"/* && cp -r "$mini" "$several/llama3.1-8b"
run bin/qk-load --quiet --dataset qwen3-8b "$several" -o "$tmp/other.qks"
expect_status 2 "another dataset's folder: exit status"
expect_one_line_naming "$several" "only folder with configs is llama3.1-8b (another dataset), not qwen3-8b" \
    "another dataset's folder: message"
expect_missing "$tmp/other.qks" "another dataset's folder: no store"
# the named folder without configs is no reason to take another
rm -rf "$several"/* && cp -r "$mini" "$several/a-other" && mkdir "$several/sniffed-mini"
run bin/qk-load --quiet --dataset sniffed-mini "$several" -o "$tmp/other.qks"
expect_status 2 "empty named folder: exit status"
expect_one_line_naming "$several" "its folder sniffed-mini holds no config directories" \
    "empty named folder: message"

# an inventory or source record that cannot be written or read: exit 2
# before any new store is in place
for bad_opt in "--inventory $tmp/no-such-dir/inv.tsv" "--source $tmp/no-such-record.txt"; do
    # shellcheck disable=SC2086
    run bin/qk-load --quiet $bad_opt "$mini" -o "$tmp/new.qks"
    expect_status 2 "${bad_opt%% *} unusable: exit status"
    expect_one_line_naming "${bad_opt#* }" "" "${bad_opt%% *} unusable: message"
    expect_missing "$tmp/new.qks" "${bad_opt%% *} unusable: no store"
    expect_no_temporaries "$tmp" "${bad_opt%% *} unusable: no temporary left"
done

# a value outside the model: head_dim mismatch from the conf
new_bad; sed -i 's/head_dim = 16/head_dim = 32/' "$bad/qkreport.conf"
run bin/qk-load --quiet "$bad" -o "$tmp/other.qks"
expect_status 2 "head_dim mismatch"
expect_out_contains_err "head_dim 32" "head_dim mismatch: message"
expect_missing "$tmp/other.qks" "head_dim mismatch: no store"

# positions beyond the context
new_bad; sed -i 's/context_length = 131072/context_length = 65536/' "$bad/qkreport.conf"
run bin/qk-load --quiet "$bad" -o "$tmp/other.qks"
expect_status 2 "position outside the context"
expect_out_contains_err "outside the context" "context: message"

# bucket inconsistent with the bucket size
new_bad; sed -i 's/bucket_size = 8192/bucket_size = 4096/' "$bad/qkreport.conf"
run bin/qk-load --quiet "$bad" -o "$tmp/other.qks"
expect_status 2 "bucket mismatch"
expect_out_contains_err "bucket" "bucket: message"

# a vector value that is not finite: a NaN written over the dictionary entry
# of the first vector's first value (2.21875, bytes 00 00 0e 40; the file's
# truth.json) in a file without compression, which loads as it is
new_bad; cp tests/data/parquet-variants/none.parquet "$bad/l01h01q/data.parquet"
run bin/qk-load --quiet "$bad" -o "$tmp/other.qks"
expect_status 0 "the file without compression loads as it is"
at=$(LC_ALL=C grep -obUaP '\x00\x00\x0e\x40' "$bad/l01h01q/data.parquet" | cut -d: -f1)
expect_same "$(echo "$at" | wc -w)" 1 "the first vector's first value is stored once"
printf '\x00\x00\xc0\x7f' | dd of="$bad/l01h01q/data.parquet" bs=1 seek="$at" conv=notrunc status=none
bad_case non-finite "row 0: non-finite vector value"

# unknown dataset without qkreport.conf
new_bad; rm "$bad/qkreport.conf"
run bin/qk-load --quiet "$bad" -o "$tmp/other.qks"
expect_status 2 "unknown dataset"
expect_out_contains_err "not in workflow/datasets.tsv" "unknown dataset: message"

# --- a partial download: the configs its capture lists (qk-synth's README
# lists all it wrote) against those present. A complete dataset: no
# warning, its inventory says all are present.
partial="$tmp/partial-synth"
rm -rf "$partial"
run bin/qk-synth --quiet --out "$partial" --dataset llama3.2-1b --heads 4 --examples 4
expect_status 0 "partial download: a synthetic dataset"
sp="$partial/llama3.2-1b"
n_listed=$(ls -d "$sp"/l*/ | wc -l)
run bin/qk-load --quiet --dataset llama3.2-1b "$sp" -o "$tmp/complete.qks" --inventory "$tmp/complete.tsv"
expect_status 0 "complete synthetic dataset: loaded"
expect_same "$(wc -c < "$e2e_err")" 0 "complete synthetic dataset: no warning"
expect_same "$(awk -F'\t' 'NR == 1 { print $15, $16 } NR == 2 { print $15, $16 }' "$tmp/complete.tsv")" \
    "$(printf 'configs_present configs_captured\n%s %s' "$n_listed" "$n_listed")" \
    "complete synthetic dataset: inventory configs_present = configs_captured = $n_listed"
# the capture lists nothing (no README, no configs in its state): nothing said
cp -r "$sp" "$tmp/unlisted" && rm -rf "$tmp/unlisted/README.md" "$tmp/unlisted"/l0[26]*
run bin/qk-load --quiet --dataset llama3.2-1b "$tmp/unlisted" -o "$tmp/unlisted.qks" --inventory "$tmp/unlisted.tsv"
expect_status 0 "capture listing nothing: loaded"
expect_same "$(wc -c < "$e2e_err")" 0 "capture listing nothing: no warning"
expect_file_line "$tmp/unlisted.tsv" 2 "llama3.2-1b" "capture listing nothing: inventory row"
expect_same "$(awk -F'\t' 'NR == 2 { print $15, $16 }' "$tmp/unlisted.tsv")" "- -" \
    "capture listing nothing: inventory says '-'"
# two config folders (a query head and its key head) removed: one warning
# line naming the folder, the counts in the inventory
first_gone=$(ls "$sp" | grep -E '^l[0-9]+h[0-9]+k$' | sed -n 2p)
q_gone=$(ls "$sp" | grep -E "^${first_gone:0:3}h[0-9]+q$" | head -1)
rm -rf "${sp:?}/$first_gone" "${sp:?}/$q_gone"
run bin/qk-load --quiet --dataset llama3.2-1b "$sp" -o "$tmp/partial.qks" --inventory "$tmp/partial.tsv"
expect_status 0 "partial synthetic dataset: loaded"
expect_one_line_naming "$sp" \
    "warning: $sp: $((n_listed - 2)) of $n_listed captured configs present (README.md lists them; $first_gone, ... missing)" \
    "partial synthetic dataset: one warning line"
expect_same "$(awk -F'\t' 'NR == 2 { print $5, $15, $16 }' "$tmp/partial.tsv")" \
    "$(( (n_listed - 2) / 2 )) $((n_listed - 2)) $n_listed" \
    "partial synthetic dataset: inventory configs_present, configs_captured"
# the report's inventory section and the figure READMEs say so; for the
# complete dataset they say nothing of it
partial_text="llama3.2-1b ($((n_listed - 2)) of $n_listed captured configs present)"
sed -n '/<section id="inventory">/,/<\/section>/p' templates/report.html.in > "$tmp/inventory.html.in"
readme_args=(--set figure_title=T --set figure_description=D --set figure_id=inventory/01
             --set rebuild_args= --set suite_version=V --table numbers="$tmp/empty.tsv"
             --table inputs="$tmp/empty.tsv" --table parameters="$tmp/empty.tsv")
printf 'key\tvalue\n' > "$tmp/empty.tsv"
for inv in complete partial; do
    run bin/qk-summary --section inventory --input inventory="$tmp/$inv.tsv" \
        --output "$tmp/$inv.numbers"
    expect_status 0 "$inv: inventory numbers"
    run bin/qk-report --template "$tmp/inventory.html.in" --output "$tmp/$inv.html" \
        --values "$tmp/$inv.numbers" --set figure.inventory.01=1
    expect_status 0 "$inv: the report's inventory section"
    awk -f workflow/provenance.awk "$tmp/$inv.tsv" > "$tmp/$inv-source.tsv"
    run bin/qk-report --markdown --template templates/figure-README.md.in \
        --output "$tmp/$inv-README.md" --values "$tmp/$inv-source.tsv" \
        --table stores="$tmp/$inv.tsv" "${readme_args[@]}"
    expect_status 0 "$inv: a figure README"
done
expect_same "$(grep -c 'Partial download' "$tmp/complete.html" "$tmp/complete-README.md" | cut -d: -f2 | tr '\n' ' ')" \
    "0 0 " "complete synthetic dataset: no partial-download sentence in the report or a README"
# (a number's hover text, its title attribute, left out)
if sed 's/ title="[^"]*"//g' "$tmp/partial.html" |
       grep -qF "Partial download: <span data-qk=\"inventory.partial\">$partial_text</span>." &&
   grep -qF "Its capture lists configs that are not in the data" "$tmp/partial.html"; then ok; else
    bad "partial synthetic dataset: the report's sentence"; fi
if grep -qF "from $(awk -F'\t' '$1 == "data_source" { print $2 }' "$tmp/partial-source.tsv"). Partial download: $partial_text. Rebuild with" \
    "$tmp/partial-README.md"; then ok; else bad "partial synthetic dataset: the figure README's sentence"; fi

# a disk without room: qk-load and qk-synth stop before the disk fills
# (--min-free: more to keep free than the disk has), with one line naming
# the file and nothing earlier lost
before=$(sha256sum "$tmp/mini.qks")
run bin/qk-load --quiet --min-free 1000000000 "$mini" -o "$tmp/mini.qks"
expect_status 2 "no room for the store: exit status"
expect_one_line_naming "$tmp/mini.qks" "not enough disk space" "no room for the store: message"
expect_same "$before" "$(sha256sum "$tmp/mini.qks")" "no room for the store: store untouched"
expect_no_temporaries "$tmp" "no room for the store: no temporary left"
run bin/qk-synth --quiet --out "$tmp/synth" --dataset llama3.2-1b --heads 1 --examples 4
expect_status 0 "a small synthetic dataset"
synth_before=$(cd "$tmp/synth" && find . -type f | sort | xargs sha256sum)
run bin/qk-synth --quiet --min-free 1000000000 --out "$tmp/synth" --dataset llama3.2-1b --heads 1 \
    --examples 4 --seed 5
expect_status 2 "no room for the synthetic data: exit status"
expect_one_line_naming "$tmp/synth/llama3.2-1b" "not enough disk space" \
    "no room for the synthetic data: message"
expect_same "$synth_before" "$(cd "$tmp/synth" && find . -type f | sort | xargs sha256sum)" \
    "no room for the synthetic data: the dataset untouched"
expect_same "llama3.2-1b" "$(ls -A "$tmp/synth")" "no room for the synthetic data: no temporary left"
run bin/qk-load --min-free -1 "$mini" -o "$tmp/other.qks"
expect_status 1 "--min-free below 0"
run bin/qk-load --source-record "$tmp/record.txt" --synthetic "seed=1 scale=demo" "$mini"
expect_status 1 "--synthetic without its mode"
expect_missing "$tmp/record.txt" "--synthetic without its mode: no record"

# usage errors exit 1
run bin/qk-load
expect_status 1 "no arguments"
run bin/qk-load --no-such-option x
expect_status 1 "unknown option"

finish
