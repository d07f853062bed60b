/**
 * Writes cnpg-cluster.schema.json: the parts of CloudNativePG's Cluster CRD schema that cluster.yaml
 * uses, so the test can check the Cluster offline (no npm package ships the CRD). Every object keeps
 * the names of all its fields, so a misspelt field is caught; the fields cluster.yaml does not use keep
 * only a marker, which the test reports if cluster.yaml starts using one (run this again then).
 *
 *   node deploy/kubernetes/postgres/extract-cnpg-schema.ts <postgresql.cnpg.io_clusters.yaml> <CNPG version>
 *
 * The CRD is config/crd/bases/postgresql.cnpg.io_clusters.yaml in the cloudnative-pg repository (or
 * the operator's release manifest).
 */
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parse, parseAllDocuments } from "yaml"

type Schema = { [key: string]: unknown }

const KEPT = [
  "type",
  "required",
  "enum",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
  "minItems",
  "maxItems",
  "pattern",
  "format",
  "nullable",
  "x-kubernetes-int-or-string",
  "x-kubernetes-preserve-unknown-fields"
]

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The schema with only what validating `values` needs; unused fields become `{ "x-not-extracted": true }`. */
const trim = (schema: Schema, values: ReadonlyArray<unknown>): Schema => {
  const out: Schema = {}
  for (const key of KEPT) if (key in schema) out[key] = schema[key]
  if (Array.isArray(schema["anyOf"])) out["anyOf"] = (schema["anyOf"] as Array<Schema>).map((s) => trim(s, values))
  const objects = values.filter(isObject)
  if (isObject(schema["properties"])) {
    const properties: Record<string, Schema> = {}
    for (const [name, sub] of Object.entries(schema["properties"] as Record<string, Schema>)) {
      const used = objects.filter((o) => name in o).map((o) => o[name])
      properties[name] = used.length === 0 ? { "x-not-extracted": true } : trim(sub, used)
    }
    out["properties"] = properties
  }
  if (isObject(schema["additionalProperties"]))
    out["additionalProperties"] = trim(
      schema["additionalProperties"] as Schema,
      objects.flatMap((o) => Object.values(o))
    )
  if (isObject(schema["items"]))
    out["items"] = trim(
      schema["items"] as Schema,
      values.flatMap((v) => (Array.isArray(v) ? v : []))
    )
  return out
}

const [crdPath, version] = process.argv.slice(2)
if (crdPath === undefined || version === undefined) {
  console.error("usage: extract-cnpg-schema.ts <postgresql.cnpg.io_clusters.yaml> <CNPG version>")
  process.exit(2)
}
const here = import.meta.dirname
const crd = parse(readFileSync(crdPath, "utf8"))
const served = crd.spec.versions.find((v: { name: string }) => v.name === "v1")
const cluster = parseAllDocuments(readFileSync(join(here, "cluster.yaml"), "utf8"))
  .map((doc) => doc.toJS())
  .filter((doc) => doc?.kind === "Cluster")
const extract = {
  $comment:
    `Extracted by extract-cnpg-schema.ts from the CRD clusters.postgresql.cnpg.io (v1) of CloudNativePG ${version}, ` +
    "Apache License 2.0, for the fields cluster.yaml uses.",
  ...trim(served.schema.openAPIV3Schema, cluster)
}
writeFileSync(join(here, "cnpg-cluster.schema.json"), `${JSON.stringify(extract, null, 2)}\n`)
