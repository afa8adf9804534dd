#!/bin/bash
# Writes the seed corpus of every fuzz target under DIR/<target>/: small
# files from the library's writers (build/fuzz/make-seeds), the test
# fixtures, the registry, archives packed by bin/qk-archive (gzip'ed and
# plain), and the MANIFEST and conf texts they hold.
# Usage: tests/fuzz/seeds.sh DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$1
rm -rf "$out"
mkdir -p "$out"/{parquet,store,registry,conf,revision,manifest,archive,capture}

build/fuzz/make-seeds "$out"

# Parquet: the fixtures of an independent writer, except the large ones
# (the largest seed sets libFuzzer's input size limit).
for f in tests/data/parquet-variants/*.parquet tests/data/sniffed-mini/*/data.parquet; do
    [ "$(stat -c %s "$f")" -le 20000 ] || continue
    name=$(echo "${f#tests/data/}" | tr / -)
    cp "$f" "$out/parquet/$name"
done

# registry: the real one, and a short one with every kind of value
cp workflow/datasets.tsv "$out/registry/datasets.tsv"
{
    printf '# comment\n\n'
    printf 'id\tstudy\tfamily\tlabel\trevision\tn_layers\tn_q_heads\tn_kv_heads\thead_dim'
    printf '\trope_theta\trope_scaling\tmax_position_embeddings\tcontext_length\tbucket_size'
    printf '\tnope_layers\tcross_attention_layers\n'
    printf 'a\textra\tllama\tA\tmain\t4\t8\t2\t16\t500000\tllama3:32:1:4:8192\t131072\t4096\t256\t0,3\t-\n'
    printf 'b\textra\tqwen\tB\trev-b\t2\t4\t4\t8\t1e6\tnone\t2048\t2048\t64\t-\t1\r\n'
} > "$out/registry/short.tsv"

# capture metadata: the _saver_state.json and README.md qk-synth writes,
# and a Hugging Face snapshot's README
[ -d data/synth ] && for d in data/synth/qwen3-8b data/synth/smollm3-3b-stage1-step-40000; do
    [ -f "$d/_saver_state.json" ] && cp "$d/_saver_state.json" "$out/capture/$(basename "$d").json"
    [ -f "$d/README.md" ] && cp "$d/README.md" "$out/capture/$(basename "$d").md"
done
printf '{\n  "model_metadata": {\n    "dataset_branch": "x-\\"q\\"",\n    "source_dataset": "synthetic:qk-synth"\n  }\n}\n' \
    > "$out/capture/escaped.json"
printf '# sniffed-qk\n\n## Branching\n\nBranch `llama3.2-1b-longbench-pro-128k-plus` holds one model.\n' \
    > "$out/capture/readme.md"
# the capture tool's README and state, and a state with a list of configs
cp tests/data/capture-metadata/README.md "$out/capture/capture-readme.md"
cp tests/data/capture-metadata/_saver_state.json "$out/capture/capture-state.json"
cp tests/data/sniffed-mini/_saver_state.json "$out/capture/mini-state.json"

# qkreport.conf
cat > "$out/conf/full.conf" <<'EOF'
# a model the registry lacks
id = sniffed-mini
study = extra
family = llama
label = Mini
revision = main
n_layers = 2
n_q_heads = 4
n_kv_heads = 2
head_dim = 16
rope_theta = 500000
rope_scaling = llama3:32:1:4:8192
max_position_embeddings = 131072
context_length = 131072
bucket_size = 8192
nope_layers = 0,1
cross_attention_layers = -
EOF
printf 'head_dim=64\n  n_kv_heads =  1  \n' > "$out/conf/override.conf"

# revision: refs/main, then the entries of the snapshot (see fuzz_revision.c)
printf '0123abcd\nl00h00q\nl00h00k\nl00h03q\nl00h01k\nl01h05q\nl01h02k\n!l02h00q\nREADME.md\n' \
    > "$out/revision/cache"
printf '0123abcd\nl0h0q\nl00h00q\nl3h7k\nl10h100q\n' > "$out/revision/padding"
printf '0123abcd\nmodel/l00h00q\nmodel/l00h00k\n!other\n' > "$out/revision/legacy"

# archives: a small tree like make archive packs, and one with the names
# that need pax headers (long, non-ASCII)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/a/results/study" "$tree/a/figures/01" "$tree/a/report"
printf 'model,r\nllama,0.93\n' > "$tree/a/results/study/qk.csv"
: > "$tree/a/results/empty.csv"
printf '<svg/>\n' > "$tree/a/figures/01/figure.svg"
printf '<html></html>\n' > "$tree/a/report/index.html"
long="figures/$(printf 'long%.0s' $(seq 30))"
mkdir -p "$tree/b/$long" "$tree/b/results"
printf 'deep\n' > "$tree/b/$long/figure.svg"
printf 'caf\xc3\xa9\n' > "$tree/b/results/caf"$'\xc3\xa9'".csv"
bin/qk-archive create -o "$out/archive/small.tar.gz" -C "$tree/a" -p SEED=1 -p 'DATASETS=a b' \
    --suite-version seed results figures report > /dev/null
bin/qk-archive create -o "$out/archive/names.tar.gz" -C "$tree/b" results figures > /dev/null
for a in small names; do
    gzip -dc "$out/archive/$a.tar.gz" > "$out/archive/$a.tar"
    tar -xOf "$out/archive/$a.tar" MANIFEST > "$out/manifest/$a"
done
