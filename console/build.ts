/**
 * Builds the console into `console/dist/` (what the gateway serves at `/console`): the TypeScript
 * and CSS bundled and minified by esbuild, and the page that loads them.
 *   npm run build:console    (npm ci runs it too, through `prepare`)
 */
import { copyFile, mkdir, rm } from "node:fs/promises"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const out = here("./dist")

await rm(out, { recursive: true, force: true })
await mkdir(out, { recursive: true })
await build({
  entryPoints: { app: here("./src/main.tsx") },
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  outdir: out,
  logLevel: "warning"
})
await copyFile(here("./index.html"), `${out}/index.html`)
