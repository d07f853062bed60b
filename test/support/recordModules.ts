/**
 * `node --import ./test/support/recordModules.ts …`: as the process exits, writes the URL of every
 * module it loaded (ES modules and CommonJS alike, dynamic imports included) to the file that
 * `RECORD_MODULES_TO` names, one a line.
 */
import { writeFileSync } from "node:fs"
import { registerHooks } from "node:module"

const loaded: Array<string> = []
registerHooks({
  load: (url, context, nextLoad) => {
    loaded.push(url)
    return nextLoad(url, context)
  }
})
process.on("exit", () => writeFileSync(process.env["RECORD_MODULES_TO"]!, loaded.join("\n")))
