/**
 * The local model's ONNX graph kept on disk after its first build, so that a model thread loads it
 * with ONNX Runtime (from the file: the least memory) and never reads the weights itself.
 *
 * A file is named by its key (the model package's version and a hash of the graph builder's own
 * source: any change to either is a new key) and the sha256 of its bytes:
 * `universal-sentence-encoder-lite@<version>.<key>.<sha256>.onnx`. It is written to a temporary file
 * renamed into place (never seen half-written), and read only if its bytes have that hash: a file
 * that does not (cut short, changed) is deleted and the graph built again. Every failure here (no
 * directory may be written, a full disk) only means building the graph in memory, as without a cache.
 */
import { createHash, randomUUID } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, readdir, readFile, rename, stat, unlink, writeFile } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import { threadId } from "node:worker_threads"

/** The files' directory under each candidate place: every file in it is one of these graphs. */
const SUBDIRECTORY = "local-embedding-model"
const SUFFIX = ".onnx"
/** A temporary file this old is what a crash mid-write left: deleted. */
const ABANDONED_MS = 60 * 60 * 1000

/**
 * Where the graph may be kept, in order: beside the model package (`node_modules/.cache`, gone with a
 * new install), then `dataDir` when it exists (the Docker image's only writable place, `/data`; not
 * created for this: with `DATABASE_URL` set it may be a default no one meant).
 */
export const graphCacheDirectories = async (
  modelPackageDirectory: string,
  dataDir: string | undefined
): Promise<ReadonlyArray<string>> => {
  const directories: Array<string> = []
  for (let dir = modelPackageDirectory; dirname(dir) !== dir; dir = dirname(dir)) {
    if (basename(dir) === "node_modules") {
      directories.push(join(dir, ".cache", "profile-memory-gateway", SUBDIRECTORY))
      break
    }
  }
  if (
    dataDir !== undefined &&
    (await stat(dataDir).then(
      (s) => s.isDirectory(),
      () => false
    ))
  ) {
    directories.push(join(dataDir, SUBDIRECTORY))
  }
  return directories
}

/** The file names' prefix for this model version and this graph builder. */
export const graphFilePrefix = async (modelVersion: string, builderFile: URL): Promise<string> => {
  const builder = createHash("sha256")
    .update(await readFile(builderFile))
    .digest("hex")
    .slice(0, 16)
  return `universal-sentence-encoder-lite@${modelVersion}.${builder}.`
}

const sha256OfFile = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash("sha256")
    createReadStream(file)
      .on("data", (chunk) => hash.update(chunk))
      .on("end", () => resolve(hash.digest("hex")))
      .on("error", reject)
  })

const ignore = () => undefined

/** The first file of `prefix` whose bytes are what its name says (those that are not are deleted). */
export const findCachedGraph = async (
  directories: ReadonlyArray<string>,
  prefix: string
): Promise<string | undefined> => {
  for (const directory of directories) {
    const names = await readdir(directory).catch((): ReadonlyArray<string> => [])
    for (const name of names) {
      if (!name.startsWith(prefix) || !name.endsWith(SUFFIX)) continue
      const expected = name.slice(prefix.length, -SUFFIX.length)
      if (!/^[0-9a-f]{64}$/.test(expected)) continue
      const file = join(directory, name)
      const actual = await sha256OfFile(file).catch(ignore)
      if (actual === expected) return file
      await unlink(file).catch(ignore)
    }
  }
  return undefined
}

/** Deletes a cached graph that ONNX Runtime could not load after all (so the next start builds it again). */
export const discardCachedGraph = (file: string): Promise<void> => unlink(file).catch(ignore)

/**
 * Keeps `bytes` in the first directory that takes them; their file, or undefined when none does.
 * Other keys' graphs there (an earlier version's) and abandoned temporary files are deleted.
 */
export const writeCachedGraph = async (
  directories: ReadonlyArray<string>,
  prefix: string,
  bytes: Uint8Array
): Promise<string | undefined> => {
  const file = `${prefix}${createHash("sha256").update(bytes).digest("hex")}${SUFFIX}`
  for (const directory of directories) {
    const temporary = join(directory, `.${randomUUID()}.${process.pid}-${threadId}.tmp`)
    try {
      await mkdir(directory, { recursive: true })
      await writeFile(temporary, bytes, { flag: "wx", mode: 0o644 })
      await rename(temporary, join(directory, file))
    } catch {
      await unlink(temporary).catch(ignore)
      continue
    }
    for (const name of await readdir(directory).catch((): ReadonlyArray<string> => [])) {
      const path = join(directory, name)
      if (name.endsWith(SUFFIX) && name !== file && !name.startsWith(prefix)) await unlink(path).catch(ignore)
      if (name.endsWith(".tmp")) {
        const modified = await stat(path).then((s) => s.mtimeMs, ignore)
        if (modified !== undefined && Date.now() - modified > ABANDONED_MS) await unlink(path).catch(ignore)
      }
    }
    return join(directory, file)
  }
  return undefined
}
