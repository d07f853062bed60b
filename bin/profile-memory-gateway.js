#!/usr/bin/env node
// The CLI's executable: the sources in a checkout (Node >= 22.18 runs TypeScript as is), the build in
// the published package (which ships dist/ and not src/).
import { existsSync } from "node:fs"

const sources = new URL("../src/cli/main.ts", import.meta.url)
await import(existsSync(sources) ? sources.href : new URL("../dist/cli/main.js", import.meta.url).href)
