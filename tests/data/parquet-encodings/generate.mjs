// Writes the files of this folder: one planted sniffed-qk table saved by
// two independent writers (arrow-rs through parquet-wasm, DuckDB) with the
// Parquet 2 encodings, DATA_PAGE_V2 and LZ4_RAW, plus truth.tsv (every
// value) and X.truth.json (the sums qk-load --stats prints). Every file is
// read back by DuckDB and parquet-wasm and compared with the planted values
// before the truth files are written. Not needed by the tests; to remake
// the files, in a scratch directory outside the tree:
//   npm install @duckdb/node-api@1.5.6-r.1 parquet-wasm@0.8.0 apache-arrow@21.2.0
//   node generate.mjs /path/to/tests/data/parquet-encodings
import fs from 'fs';
import * as arrow from 'apache-arrow';
import * as pw from 'parquet-wasm/node';
import { DuckDBInstance } from '@duckdb/node-api';

const out = process.argv[2];
const ROWS = 300, DIM = 16;

let seed = 0x5eed1234;
function rand32() { // mulberry32
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return (t ^ (t >>> 14)) >>> 0;
}

// Example ids span the whole int32 range, INT32_MAX next to INT32_MIN, so
// 64-bit deltas of neighbours need 33 bits.
const ids = [2147483647, -2147483648, 5, -1, 0, 1234567, -987654321];
while (ids.length < 20) ids.push(rand32() | 0);
const bucket = new Int32Array(ROWS), example = new Int32Array(ROWS),
      position = new Int32Array(ROWS), bits = new Uint32Array(ROWS * DIM);
const tokens = [];
const stems = ['Ġthe', 'Ġthere', 'Ġtherefore', '▁Hello', '▁Hel', '<|begin_of_text|>', 'über', '', 'ing'];
for (let r = 0, e = 0; r < ROWS; e++) {
  const n = Math.min(ROWS - r, 10 + rand32() % 11);
  const pos = new Set();
  while (pos.size < n) pos.add(rand32() % 131072);
  for (const p of [...pos].sort((a, b) => a - b)) {
    example[r] = ids[e % ids.length];
    position[r] = p;
    bucket[r] = p >> 13;
    tokens.push(r % 11 === 3 ? null : stems[rand32() % stems.length] + (r % 4 ? '' : String(r)));
    r++;
  }
}
for (let i = 0; i < bits.length; i++) {
  const exp = 117 + rand32() % 14; // about 2^-10 .. 2^3
  bits[i] = (rand32() & 0x80000000) | exp << 23 | (rand32() & 0x7fffff);
}
bits[5] = 0x80000000;  // -0.0
bits[6] = 0x00000001;  // the smallest subnormal
bits[7] = 0x3fffffff;  // every mantissa bit set
const vector = new Float32Array(bits.buffer);

function arrowTable() {
  const child = arrow.makeData({ type: new arrow.Float32(), length: ROWS * DIM, data: vector });
  const type = new arrow.FixedSizeList(DIM, new arrow.Field('item', new arrow.Float32(), true));
  return new arrow.Table({
    bucket: arrow.makeVector(bucket),
    example_id: arrow.makeVector(example),
    position: arrow.makeVector(position),
    vector: arrow.makeVector(arrow.makeData({ type, length: ROWS, child, nullCount: 0 })),
    sliding_window: arrow.vectorFromArray(new Array(ROWS).fill(null), new arrow.Null()),
    token_str: arrow.vectorFromArray(tokens, new arrow.Utf8()),
  });
}

function writeArrow(name, configure) {
  const b = configure(new pw.WriterPropertiesBuilder().setWriterVersion(pw.WriterVersion.V2)
    .setColumnEncoding('bucket', pw.Encoding.DELTA_BINARY_PACKED)
    .setColumnEncoding('example_id', pw.Encoding.DELTA_BINARY_PACKED)
    .setColumnEncoding('position', pw.Encoding.DELTA_BINARY_PACKED)
    .setColumnEncoding('sliding_window', pw.Encoding.PLAIN)
    .setEncoding(pw.Encoding.BYTE_STREAM_SPLIT)); // the vector
  const table = pw.Table.fromIPCStream(arrow.tableToIPC(arrowTable(), 'stream'));
  fs.writeFileSync(`${out}/${name}.parquet`, pw.writeParquet(table, b.build()));
}

writeArrow('arrow-v2-delta-lz4raw', b => b.setCompression(pw.Compression.LZ4_RAW)
  .setDictionaryEnabled(false).setColumnEncoding('token_str', pw.Encoding.DELTA_BYTE_ARRAY)
  .setMaxRowGroupSize(128).setWriteBatchSize(32).setDataPageSizeLimit(1024));
writeArrow('arrow-v2-dict-zstd', b => b.setCompression(pw.Compression.ZSTD)
  .setDictionaryEnabled(true).setDictionaryPageSizeLimit(256)
  .setColumnEncoding('token_str', pw.Encoding.DELTA_LENGTH_BYTE_ARRAY)
  .setWriteBatchSize(48).setDataPageSizeLimit(1024));
writeArrow('arrow-v2-none', b => b.setCompression(pw.Compression.UNCOMPRESSED)
  .setDictionaryEnabled(false).setColumnEncoding('token_str', pw.Encoding.DELTA_BYTE_ARRAY)
  .setWriteBatchSize(100).setDataPageSizeLimit(2048));

const db = await (await DuckDBInstance.create(':memory:')).connect();
const rows = async sql => (await db.runAndReadAll(sql)).getRows();
await rows(`create table t as select * from read_parquet('${out}/arrow-v2-none.parquet')`);
await rows(`copy t to '${out}/duckdb-v2-lz4raw.parquet' (format parquet, parquet_version v2,
  compression lz4_raw, dictionary_size_limit 1, row_group_size 100)`);
await rows(`copy t to '${out}/duckdb-v2-zstd.parquet' (format parquet, parquet_version v2, compression zstd)`);

function check(file, got, reader) {
  if (got.length !== ROWS) throw new Error(`${file} (${reader}): ${got.length} rows`);
  const f = new Float32Array(1), u = new Uint32Array(f.buffer);
  got.forEach((g, r) => {
    const [b, e, p, t, v] = g;
    if (b !== bucket[r] || e !== example[r] || p !== position[r] || t !== tokens[r])
      throw new Error(`${file} (${reader}): row ${r} differs`);
    for (let k = 0; k < DIM; k++) {
      f[0] = v[k];
      if (u[0] !== bits[r * DIM + k]) throw new Error(`${file} (${reader}): vector ${r},${k}`);
    }
  });
}

const names = fs.readdirSync(out).filter(n => n.endsWith('.parquet')).map(n => n.slice(0, -8));
for (const name of names) {
  const file = `${out}/${name}.parquet`;
  const viaDuck = await rows(`select bucket, example_id, position, token_str, vector from read_parquet('${file}')`);
  check(file, viaDuck.map(r => [r[0], r[1], r[2], r[3], r[4].items]), 'duckdb');
  let t;
  try {
    t = arrow.tableFromIPC(pw.readParquet(fs.readFileSync(file)).intoIPCStream());
  } catch (e) { // arrow-rs rejects DuckDB's 64-bit deltas of INT32 columns
    if (!name.startsWith('duckdb')) throw e;
    console.log(`${name}: parquet-wasm cannot read it (${e.message}); checked with DuckDB only`);
    continue;
  }
  const viaArrow = [...Array(ROWS).keys()].map(r => ['bucket', 'example_id', 'position', 'token_str', 'vector']
    .map(c => { const x = t.getChild(c).get(r); return c === 'vector' ? [...x] : x; }));
  check(file, viaArrow, 'parquet-wasm');
}

// truth.tsv: every value; vector elements as the hex bits of the float.
const lines = ['# bucket\texample_id\tposition\ttoken_str (\\N: null)\tvector (float32 bits, hex)'];
for (let r = 0; r < ROWS; r++) {
  const v = [...bits.subarray(r * DIM, (r + 1) * DIM)].map(x => x.toString(16).padStart(8, '0'));
  lines.push([bucket[r], example[r], position[r], tokens[r] ?? '\\N', v.join(',')].join('\t'));
}
fs.writeFileSync(`${out}/truth.tsv`, lines.join('\n') + '\n');

// X.truth.json: the sums in row order, as qk_pq_table_stats takes them.
let positionSum = 0, exampleSum = 0, sum = 0, absSum = 0;
for (let r = 0; r < ROWS; r++) { positionSum += position[r]; exampleSum += example[r]; }
for (const x of vector) { sum += x; absSum += Math.abs(x); }
const first = [...vector.subarray(0, DIM)], last = [...vector.subarray((ROWS - 1) * DIM)];
for (const name of names)
  fs.writeFileSync(`${out}/${name}.truth.json`, JSON.stringify({
    rows: ROWS, dim: DIM, variant: name, position_sum: positionSum, example_id_sum: exampleSum,
    vector_sum: sum, vector_abs_sum: absSum, first_position: position[0],
    last_position: position[ROWS - 1], first_vector: first, last_vector: last }) + '\n');
console.log(`${names.length} files checked`);
