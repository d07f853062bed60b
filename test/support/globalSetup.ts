import { chmod, mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import type { TestProject } from "vitest/node"
import { EmbeddedPostgres } from "../../src/db/EmbeddedPostgres.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the run's embedded PostgreSQL (its `postgres` database). */
    readonly pgAdminUrl: string
  }
}

export default async function setup(project: TestProject) {
  const dataDir = await mkdtemp(join(tmpdir(), "gateway-test-pg-"))
  await chmod(dataDir, 0o755) // the cluster is owned by the `postgres` user when tests run as root
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(EmbeddedPostgres.layer(dataDir), scope))
  project.provide("pgAdminUrl", Redacted.value(Context.get(context, EmbeddedPostgres).url))
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await rm(dataDir, { recursive: true, force: true })
  }
}
