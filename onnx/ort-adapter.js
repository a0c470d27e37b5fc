// lenscheck's adapter for ONNX Runtime (npm onnxruntime-node, CPU execution provider): started by
// `lenscheck verify --candidate onnxruntime[:fp16|:int8]` as `node ort-adapter.js REQUEST.json`.
// The request names the graph, the session options and every sentence's token ids. The adapter answers
// on stdout, one line per step, so that lenscheck can bound the time of each:
//   ready <onnxruntime version> <session creation ms>
//   done <sentence index> <run ms>
// and writes sentence i's trace to <out_dir>/<i>.safetensors: every graph output but last_hidden_state
// under its own name, the batch axis of 1 dropped, in the dtype ORT returned (F32 or F16), with the ids
// as I64 "input_ids". A plain request fetches last_hidden_state alone and writes nothing (timing).
// Any error goes to stderr and exits 1.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = { float32: 'F32', float16: 'F16' };

function writeSafetensors(file, tensors, metadata) {
  const header = { __metadata__: metadata };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.bytes.length] };
    offset += t.bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.writeFileSync(file, Buffer.concat([size, Buffer.from(json), ...tensors.map((t) => t.bytes)]));
}

async function main() {
  const request = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const options = {
    executionProviders: ['cpu'],
    intraOpNumThreads: request.intra_op_threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: request.graph_optimization,
  };
  if (request.optimized_model) options.optimizedModelFilePath = request.optimized_model;
  if (request.profile_prefix) {
    options.enableProfiling = true;
    options.profileFilePrefix = request.profile_prefix;
  }
  const started = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(request.model, options);
  const ms = (since) => Number(process.hrtime.bigint() - since) / 1e6;
  process.stdout.write(`ready ${ort.env.versions.node} ${ms(started).toFixed(3)}\n`);

  const fetches = request.plain ? ['last_hidden_state'] : session.outputNames.filter((n) => n !== 'last_hidden_state');
  for (let i = 0; i < request.sentences.length; ++i) {
    const ids = request.sentences[i];
    const dims = [1, ids.length];
    // The inputs the graph has of BertModel's three: a shipped graph may lack the mask or the token types.
    const inputs = {
      input_ids: () => new ort.Tensor('int64', BigInt64Array.from(ids, BigInt), dims),
      attention_mask: () => new ort.Tensor('int64', new BigInt64Array(ids.length).fill(1n), dims),
      token_type_ids: () => new ort.Tensor('int64', new BigInt64Array(ids.length), dims),
    };
    const feeds = {};
    for (const name of session.inputNames) {
      if (!(name in inputs)) throw new Error(`the graph has an input ${name}, not one of BertModel's`);
      feeds[name] = inputs[name]();
    }
    const run = process.hrtime.bigint();
    const results = await session.run(feeds, fetches);
    const run_ms = ms(run);
    if (!request.plain) {
      const tensors = [{ name: 'input_ids', dtype: 'I64', shape: [ids.length],
                         bytes: Buffer.from(BigInt64Array.from(ids, BigInt).buffer) }];
      for (const name of fetches) {
        const t = results[name];
        if (!(t.type in DTYPES)) throw new Error(`output ${name} has type ${t.type}, not float32 or float16`);
        if (t.dims[0] !== 1) throw new Error(`output ${name} has dims [${t.dims}], not a batch of 1`);
        tensors.push({ name, dtype: DTYPES[t.type], shape: t.dims.slice(1),
                       bytes: Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength) });
      }
      writeSafetensors(path.join(request.out_dir, `${i}.safetensors`), tensors,
                       { format: 'lenscheck-trace-1', producer: request.producer, precision: request.precision });
    }
    process.stdout.write(`done ${i} ${run_ms.toFixed(3)}\n`);
  }
  if (request.profile_prefix) process.stderr.write(`profile: ${session.endProfiling()}\n`);
  await session.release();
}

main().catch((e) => {
  process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
