/**
 * The local model's vectors for the benchmark texts, computed in this process and kept in
 * node_modules/.cache (keyed by the model's id and the text) so refitting takes seconds.
 */
import { createHash } from "node:crypto"
import { mkdir, readFile, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { loadLocalModel, localModelId } from "../../src/embedding/localModel.ts"
import { normalize } from "../../src/embedding/vectors.ts"
import { root } from "../processes.ts"

const BATCH = 64
const cacheFile = join(root, "node_modules/.cache/gateway-ranking", `${localModelId().replace(/[^\w.@-]+/g, "_")}.json`)

const keyOf = (text: string) => createHash("sha1").update(text).digest("base64")

/** Unit vectors of the texts, by text. */
export const embedTexts = async (
  texts: ReadonlyArray<string>,
  log: (line: string) => void
): Promise<ReadonlyMap<string, Float32Array>> => {
  let cache: Record<string, string> = {}
  try {
    cache = JSON.parse(await readFile(cacheFile, "utf8")) as Record<string, string>
  } catch {
    // No cache yet.
  }
  const missing = [...new Set(texts)].filter((text) => cache[keyOf(text)] === undefined)
  if (missing.length > 0) {
    log(`  embedding ${missing.length} texts with the local model (cached for the next run)`)
    const quiet = console.log
    console.log = console.info = console.warn = () => {}
    const model = await loadLocalModel()
    console.log = console.info = console.warn = quiet
    for (let from = 0; from < missing.length; from += BATCH) {
      const batch = missing.slice(from, from + BATCH)
      const data = await model.embed(batch)
      batch.forEach((text, i) => {
        const vector = normalize(data.subarray(i * model.dimensions, (i + 1) * model.dimensions))
        cache[keyOf(text)] = Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString("base64")
      })
    }
    await mkdir(join(cacheFile, ".."), { recursive: true })
    await writeFile(cacheFile, JSON.stringify(cache))
  }
  const vectors = new Map<string, Float32Array>()
  for (const text of texts) {
    const bytes = Buffer.from(cache[keyOf(text)]!, "base64")
    vectors.set(text, new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)))
  }
  return vectors
}
