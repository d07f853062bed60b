/**
 * The shipped model's forward pass (Universal Sentence Encoder lite: a two-layer transformer over
 * SentencePiece tokens, mean-pooled, a tanh layer, L2-normalised) written out as an ONNX graph from
 * the same weights, so ONNX Runtime can run it: about 3 ms for a short message on this machine's
 * CPUs against 14 ms through TensorFlow.js's graph executor, with the same vectors (components
 * within 1e-6). Built from the model package's weight files read as they are (`readGraphWeights`:
 * TensorFlow.js is not loaded), in a short-lived worker (`localModelBuilder.ts`, about 0.1–0.2 s), at
 * the first start only: the graph is then kept on disk (`localModelCache.ts`). Nothing is downloaded.
 * A change to this file is a new cache key (its source is hashed into it).
 */
import { open, readFile, stat } from "node:fs/promises"
import { createRequire } from "node:module"
import { join } from "node:path"
import type { onnx as OnnxProto } from "onnx-proto"
import onnxProto from "onnx-proto"

// A CommonJS package: its namespace comes through the default export.
const { onnx } = onnxProto

/** What is read of a weight (shaped as a TensorFlow.js tensor's `shape` and `dataSync`). */
interface Tensor {
  readonly shape: ReadonlyArray<number>
  readonly dataSync: () => Float32Array
}

/** The TensorFlow.js graph model's weights, by name, as its `GraphModel` holds them (`readGraphWeights`). */
export interface GraphWeights {
  readonly weights: { readonly [name: string]: ReadonlyArray<Tensor> | undefined }
}

/** What `readGraphWeights` reads of a TensorFlow.js model's `model.json`. */
interface WeightsManifest {
  readonly weightsManifest: ReadonlyArray<{
    readonly paths: ReadonlyArray<string>
    readonly weights: ReadonlyArray<{
      readonly name: string
      readonly shape: ReadonlyArray<number>
      readonly dtype: string
      readonly quantization?: unknown
    }>
  }>
}

/**
 * The weights of a TensorFlow.js graph model (`model.json` and its shards in `directory`) as its
 * `GraphModel` would hold them, read without TensorFlow.js: each group's shards end to end, its
 * weights one after another in them (float32 or int32; quantised weights are not read here).
 */
export const readGraphWeights = async (directory: string): Promise<GraphWeights> => {
  const manifest = JSON.parse(await readFile(join(directory, "model.json"), "utf8")) as WeightsManifest
  const weights: { [name: string]: ReadonlyArray<Tensor> } = {}
  for (const group of manifest.weightsManifest) {
    // Read straight into one buffer (no copy of each shard to join them).
    const files = group.paths.map((file) => join(directory, file))
    const sizes = await Promise.all(files.map((file) => stat(file).then((s) => s.size)))
    const bytes = new Uint8Array(sizes.reduce((sum, size) => sum + size, 0))
    let at = 0
    for (const [i, file] of files.entries()) {
      const handle = await open(file)
      try {
        for (let read = 0; read < sizes[i]!; ) {
          const { bytesRead } = await handle.read(bytes, at + read, sizes[i]! - read, read)
          if (bytesRead === 0) throw new Error(`${file} was cut short while read`)
          read += bytesRead
        }
      } finally {
        await handle.close()
      }
      at += sizes[i]!
    }
    let offset = 0
    for (const spec of group.weights) {
      if (spec.quantization !== undefined || (spec.dtype !== "float32" && spec.dtype !== "int32")) {
        throw new Error(
          `the weight ${spec.name} is ${spec.dtype}${spec.quantization === undefined ? "" : ", quantised"}`
        )
      }
      const size = spec.shape.reduce((product, dimension) => product * dimension, 1)
      if (offset + size * 4 > bytes.byteLength) throw new Error(`the weight files end before ${spec.name}`)
      // Little-endian on disk as in memory. The int32 weights (shapes and indices of the original
      // graph) are not the ONNX graph's: left out, so that asking for one fails.
      if (spec.dtype === "float32") {
        const data = new Float32Array(bytes.buffer, offset, size)
        weights[spec.name] = [{ shape: spec.shape, dataSync: () => data }]
      }
      offset += size * 4
    }
    if (offset !== bytes.byteLength) throw new Error("the weight files are longer than their manifest says")
  }
  return { weights }
}

/** The graph's own cap on tokens (`ClipToMaxLength`). */
export const MAX_TOKENS = 128

const STACK = "module_apply_default/Encoder_en/KonaTransformer/Encode/TransformerStack/"
const ENCODER = "module/Encoder_en/KonaTransformer/Encode/"
const APPLIED = "module_apply_default/Encoder_en/KonaTransformer/Encode/"

const FLOAT = onnx.TensorProto.DataType.FLOAT
const INT64 = onnx.TensorProto.DataType.INT64

/** The ONNX model (serialised) computing `embedding` [1, 512] from `ids` (int64 [T]) and `positions` (float [T, 1]). */
export const onnxModelOf = (graph: GraphWeights): Uint8Array => {
  const weight = (name: string): Tensor => {
    const tensors = graph.weights[name]
    if (tensors?.[0] === undefined) throw new Error(`the local model has no weight ${name}`)
    return tensors[0]
  }
  const initializers: Array<OnnxProto.ITensorProto> = []
  const nodes: Array<OnnxProto.INodeProto> = []
  let counter = 0

  const constant = (name: string, tensor: Tensor, dims: ReadonlyArray<number> = tensor.shape) => {
    const data = tensor.dataSync()
    initializers.push({
      name,
      dims: [...dims],
      dataType: FLOAT,
      // A view: encoding copies it (into the one buffer of the model).
      rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    })
    return name
  }
  const shape = (name: string, values: ReadonlyArray<number>) => {
    initializers.push({ name, dims: [values.length], dataType: INT64, int64Data: [...values] })
    return name
  }
  const attribute = (name: string, value: number | ReadonlyArray<number>): OnnxProto.IAttributeProto =>
    Array.isArray(value)
      ? { name, type: onnx.AttributeProto.AttributeType.INTS, ints: [...value] }
      : Number.isInteger(value)
        ? { name, type: onnx.AttributeProto.AttributeType.INT, i: value as number }
        : { name, type: onnx.AttributeProto.AttributeType.FLOAT, f: value as number }
  const op = (
    type: string,
    inputs: ReadonlyArray<string>,
    attributes: Record<string, number | ReadonlyArray<number>> = {},
    outputs = 1
  ) => {
    const names = Array.from({ length: outputs }, () => `${type}_${counter++}`)
    nodes.push({
      opType: type,
      name: names[0]!,
      input: [...inputs],
      output: names,
      attribute: Object.entries(attributes).map(([name, value]) => attribute(name, value))
    })
    return names
  }
  const one = (
    type: string,
    inputs: ReadonlyArray<string>,
    attributes: Record<string, number | ReadonlyArray<number>> = {}
  ) => op(type, inputs, attributes)[0]!

  const epsilon = weight(`${STACK}Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x`).dataSync()[0]!
  const layerNorm = (x: string, layer: number, ffn: boolean) => {
    const base = `${APPLIED}Layer_${layer}/TransformerLayer/${ffn ? "FFN/" : ""}layer_prepostprocess/layer_norm/`
    const tag = `ln${layer}${ffn ? "f" : "a"}`
    return one(
      "LayerNormalization",
      [
        x,
        constant(`${tag}_scale`, weight(`${base}layer_norm_scale/ConcatPartitions/concat`)),
        constant(`${tag}_bias`, weight(`${base}layer_norm_bias/ConcatPartitions/concat`))
      ],
      { axis: -1, epsilon }
    )
  }
  const dense = (x: string, kernel: Tensor, bias: Tensor, name: string, dims?: ReadonlyArray<number>) =>
    one("Add", [one("MatMul", [x, constant(`${name}_kernel`, kernel, dims)]), constant(`${name}_bias`, bias)])

  const attention = (x: string, layer: number, width: number, heads: number) => {
    const base = `Layer_${layer}/TransformerLayer/MultiheadAttention/`
    const qkv = dense(
      x,
      weight(`${ENCODER}${base}qkv_transform_single/kernel/part_0`),
      weight(`${APPLIED}${base}qkv_transform_single/bias/ConcatPartitions/concat`),
      `qkv${layer}`,
      [width, 3 * width]
    )
    const [q, k, v] = op("Split", [qkv, shape(`split${layer}`, [width, width, width])], { axis: 1 }, 3) as [
      string,
      string,
      string
    ]
    const byHead = shape(`heads${layer}`, [-1, heads, width / heads])
    const scale = constant(`scale${layer}`, weight(`${STACK}${base}mul/y`), [])
    const queries = one("Transpose", [one("Reshape", [one("Mul", [q, scale]), byHead])], { perm: [1, 0, 2] })
    const keys = one("Transpose", [one("Reshape", [k, byHead])], { perm: [1, 2, 0] })
    const values = one("Transpose", [one("Reshape", [v, byHead])], { perm: [1, 0, 2] })
    const weights = one("Softmax", [one("MatMul", [queries, keys])], { axis: -1 })
    const context = one("Reshape", [
      one("Transpose", [one("MatMul", [weights, values])], { perm: [1, 0, 2] }),
      shape(`merge${layer}`, [-1, width])
    ])
    return dense(
      context,
      weight(`${ENCODER}${base}output_transform_single/kernel/part_0`),
      weight(`${APPLIED}${base}output_transform_single/bias/ConcatPartitions/concat`),
      `out${layer}`,
      [width, 512]
    )
  }
  const feedForward = (x: string, layer: number) => {
    const base = `Layer_${layer}/TransformerLayer/FFN/`
    const hidden = one("Relu", [
      dense(
        layerNorm(x, layer, true),
        weight(`${STACK}${base}conv1/Tensordot/Reshape_1`),
        weight(`${APPLIED}${base}conv1/bias/ConcatPartitions/concat`),
        `ffn1_${layer}`
      )
    ])
    return dense(
      hidden,
      weight(`${STACK}${base}conv2/Tensordot/Reshape_1`),
      weight(`${APPLIED}${base}conv2/bias/ConcatPartitions/concat`),
      `ffn2_${layer}`
    )
  }

  // Token embeddings plus the timing signal; the original graph adds the embeddings twice.
  const embedded = one("Gather", [constant("embeddings", weight("module/Embeddings_en")), "ids"], { axis: 0 })
  const scaled = one("Mul", [
    "positions",
    constant("inverse_timescales", weight(`${STACK}Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`))
  ])
  const timing = one("Concat", [one("Sin", [scaled]), one("Cos", [scaled])], { axis: 1 })
  const x = one("Add", [embedded, one("Add", [embedded, timing])])
  // Layer 0 is 256 wide and widens to 512 (its residual goes through a dense layer); layer 1 is 512.
  const residual = dense(
    x,
    weight(`${APPLIED}Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat`),
    weight(`${APPLIED}Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat`),
    "residual0"
  )
  let h = one("Add", [attention(layerNorm(x, 0, false), 0, 256, 4), residual])
  h = one("Add", [feedForward(h, 0), h])
  h = one("Add", [attention(layerNorm(h, 1, false), 1, 512, 4), h])
  h = one("Add", [feedForward(h, 1), h])
  const pooled = one("ReduceMean", [h], { axes: [0], keepdims: 1 })
  const y = one("Tanh", [
    dense(
      pooled,
      weight("module/Encoder_en/hidden_layers/tanh_layer_0/weights"),
      weight("module/Encoder_en/hidden_layers/tanh_layer_0/bias"),
      "tanh"
    )
  ])
  const norm = one("Sqrt", [
    one("Max", [
      one("ReduceSumSquare", [y], { axes: [1], keepdims: 1 }),
      constant("l2_epsilon", weight("module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y"), [])
    ])
  ])
  nodes.push({ opType: "Div", name: "embedding", input: [y, norm], output: ["embedding"] })

  const model: OnnxProto.IModelProto = {
    irVersion: 8,
    opsetImport: [{ domain: "", version: 17 }],
    producerName: "profile-memory-gateway",
    graph: {
      name: "universal_sentence_encoder_lite",
      node: nodes,
      initializer: initializers,
      input: [
        { name: "ids", type: { tensorType: { elemType: INT64, shape: { dim: [{ dimParam: "T" }] } } } },
        {
          name: "positions",
          type: { tensorType: { elemType: FLOAT, shape: { dim: [{ dimParam: "T" }, { dimValue: 1 }] } } }
        }
      ],
      output: [
        {
          name: "embedding",
          type: { tensorType: { elemType: FLOAT, shape: { dim: [{ dimValue: 1 }, { dimValue: 512 }] } } }
        }
      ]
    }
  }
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(model)).finish()
}

type OnnxRuntime = typeof import("onnxruntime-node")

/** ONNX Runtime, or why it cannot run here (a platform without its binaries): then TensorFlow.js runs the model. */
export const loadOnnxRuntime = (): OnnxRuntime | string => {
  try {
    return createRequire(import.meta.url)("onnxruntime-node") as OnnxRuntime
  } catch (error) {
    return String(error)
  }
}
