/**
 * deploy/kubernetes: every manifest, as written and as each overlay renders it, against the Kubernetes
 * schemas, and the cross-references an operator would trip on (selectors, probes, the drain, secrets,
 * configuration variables, database connections).
 *
 * The overlays are rendered here, without the kustomize binary: a kustomization may only use
 * `resources`, `namespace`, `images` and `patches` (RFC 6902 JSON patches with a target), and the
 * renderer refuses anything else. Where `kubectl` is installed, its own `kubectl kustomize` must agree.
 *
 * Schemas: `kubernetes-models` checks each object with the API's OpenAPI schema (types, formats,
 * required fields) but lets unknown fields through, as JSON schema does; the API server refuses them
 * (kubectl's default field validation is strict). So each object is also type-checked by TypeScript
 * against the same package's interfaces, whose excess-property check finds a misspelt field at any
 * depth. The CloudNativePG Cluster is a custom resource with no npm package: it is checked against the
 * extract of its CRD's schema in deploy/kubernetes/postgres/cnpg-cluster.schema.json (CEL rules aside).
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative, resolve } from "node:path"
import { ConfigProvider, Effect, Exit, Option } from "effect"
import { IpNetwork } from "effect/net"
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment"
import { Deployment } from "kubernetes-models/apps/v1/Deployment"
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler"
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler"
import type { IIngress } from "kubernetes-models/networking.k8s.io/v1/Ingress"
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress"
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget"
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget"
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap"
import { ConfigMap } from "kubernetes-models/v1/ConfigMap"
import type { IContainer } from "kubernetes-models/v1/Container"
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim"
import type { ISecret } from "kubernetes-models/v1/Secret"
import { Secret } from "kubernetes-models/v1/Secret"
import type { IService } from "kubernetes-models/v1/Service"
import { Service } from "kubernetes-models/v1/Service"
import ts from "typescript"
import { describe, expect, it } from "vitest"
import { parse, parseAllDocuments } from "yaml"
import { appConfigFromEnv } from "../src/app/AppConfig.ts"
import { serverFromEnv } from "../src/http/ServerConfig.ts"

const ROOT = resolve(import.meta.dirname, "..")
const KUBE = join(ROOT, "deploy/kubernetes")

type Manifest = Record<string, unknown>

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const clone = <A>(value: A): A => structuredClone(value)

const label = (m: Manifest) => `${String(m["kind"])}/${String((m["metadata"] as Manifest | undefined)?.["name"])}`

const loadYaml = (file: string): Array<Manifest> =>
  parseAllDocuments(readFileSync(file, "utf8")).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${relative(ROOT, file)}: ${doc.errors[0]!.message}`)
    const value: unknown = doc.toJS()
    if (value === null || value === undefined) return []
    if (!isObject(value)) throw new Error(`${relative(ROOT, file)}: a document is not an object`)
    return [value]
  })

// --- RFC 6902 ---------------------------------------------------------------------------------------

interface JsonPatchOp {
  readonly op: string
  readonly path: string
  readonly value?: unknown
}

const pointer = (path: string): Array<string> => {
  if (!path.startsWith("/")) throw new Error(`JSON pointer "${path}" must start with /`)
  return path
    .slice(1)
    .split("/")
    .map((token) => token.replaceAll("~1", "/").replaceAll("~0", "~"))
}

const applyJsonPatch = (document: Manifest, ops: ReadonlyArray<JsonPatchOp>): Manifest => {
  const result = clone(document)
  for (const op of ops) {
    const tokens = pointer(op.path)
    const last = tokens.pop()!
    let parent: unknown = result
    for (const token of tokens) {
      const next: unknown = Array.isArray(parent) ? parent[Number(token)] : isObject(parent) ? parent[token] : undefined
      if (next === undefined) throw new Error(`${op.op} ${op.path}: ${token} does not exist`)
      parent = next
    }
    const where = `${op.op} ${op.path}`
    if (Array.isArray(parent)) {
      const index = last === "-" ? parent.length : Number(last)
      if (!Number.isInteger(index) || index < 0 || index > parent.length) throw new Error(`${where}: no such index`)
      if (op.op === "add") parent.splice(index, 0, clone(op.value))
      else if (index >= parent.length) throw new Error(`${where}: no such index`)
      else if (op.op === "remove") parent.splice(index, 1)
      else if (op.op === "replace") parent[index] = clone(op.value)
      else if (op.op === "test") {
        if (JSON.stringify(parent[index]) !== JSON.stringify(op.value)) throw new Error(`${where}: test failed`)
      } else throw new Error(`${where}: operation not supported here`)
    } else if (isObject(parent)) {
      if (op.op === "add") parent[last] = clone(op.value)
      else if (!(last in parent)) throw new Error(`${where}: no such member`)
      else if (op.op === "remove") delete parent[last]
      else if (op.op === "replace") parent[last] = clone(op.value)
      else if (op.op === "test") {
        if (JSON.stringify(parent[last]) !== JSON.stringify(op.value)) throw new Error(`${where}: test failed`)
      } else throw new Error(`${where}: operation not supported here`)
    } else throw new Error(`${where}: the parent is not a container`)
  }
  return result
}

// --- A kustomize subset -----------------------------------------------------------------------------

const KUSTOMIZATION_FIELDS = new Set(["apiVersion", "kind", "resources", "namespace", "images", "patches"])
/** Kinds without a namespace, which kustomize's `namespace` leaves alone. */
const CLUSTER_SCOPED = new Set(["Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition"])

interface ImageRule {
  readonly name: string
  readonly newName?: string
  readonly newTag?: string
  readonly digest?: string
}

const setImages = (node: unknown, rules: ReadonlyArray<ImageRule>): void => {
  if (Array.isArray(node)) for (const item of node) setImages(item, rules)
  if (!isObject(node)) return
  for (const [key, value] of Object.entries(node)) {
    if ((key === "containers" || key === "initContainers") && Array.isArray(value)) {
      for (const container of value) {
        if (!isObject(container) || typeof container["image"] !== "string") continue
        const match = /^([^:@]+(?::\d+\/[^:@]+)?)(?::([^@]+))?(?:@(.+))?$/.exec(container["image"])
        const rule = rules.find((r) => r.name === match?.[1])
        if (match === null || rule === undefined) continue
        const name = rule.newName ?? match[1]
        container["image"] =
          rule.digest !== undefined
            ? `${name}@${rule.digest}`
            : `${name}${rule.newTag !== undefined ? `:${rule.newTag}` : match[2] !== undefined ? `:${match[2]}` : ""}`
      }
    } else setImages(value, rules)
  }
}

const render = (dir: string): Array<Manifest> => {
  const file = join(dir, "kustomization.yaml")
  const kustomization: unknown = parse(readFileSync(file, "utf8"))
  if (!isObject(kustomization)) throw new Error(`${relative(ROOT, file)} is not an object`)
  for (const key of Object.keys(kustomization))
    if (!KUSTOMIZATION_FIELDS.has(key)) throw new Error(`${relative(ROOT, file)}: "${key}" is not supported here`)
  let manifests: Array<Manifest> = []
  for (const entry of (kustomization["resources"] ?? []) as Array<string>) {
    const path = resolve(dir, entry)
    manifests.push(...(statSync(path).isDirectory() ? render(path) : loadYaml(path)))
  }
  for (const patch of (kustomization["patches"] ?? []) as Array<Record<string, unknown>>) {
    const target = patch["target"] as Record<string, string> | undefined
    if (target === undefined || typeof patch["patch"] !== "string" || Object.keys(patch).length !== 2)
      throw new Error(`${relative(ROOT, file)}: each patch needs a target and an inline JSON patch, nothing else`)
    const ops = parse(patch["patch"]) as Array<JsonPatchOp>
    let matched = 0
    manifests = manifests.map((m) => {
      const metadata = m["metadata"] as Manifest
      const [group, version] = String(m["apiVersion"]).includes("/")
        ? String(m["apiVersion"]).split("/")
        : ["", String(m["apiVersion"])]
      const matches =
        (target["kind"] === undefined || target["kind"] === m["kind"]) &&
        (target["name"] === undefined || target["name"] === metadata["name"]) &&
        (target["group"] === undefined || target["group"] === group) &&
        (target["version"] === undefined || target["version"] === version)
      if (!matches) return m
      matched++
      return applyJsonPatch(m, ops)
    })
    if (matched === 0) throw new Error(`${relative(ROOT, file)}: a patch's target matches nothing`)
  }
  if (kustomization["images"] !== undefined) setImages(manifests, kustomization["images"] as Array<ImageRule>)
  const namespace = kustomization["namespace"]
  if (typeof namespace === "string")
    for (const m of manifests)
      if (!CLUSTER_SCOPED.has(String(m["kind"]))) (m["metadata"] as Manifest)["namespace"] = namespace
  return manifests
}

/** Every kustomization under deploy/kubernetes, by its folder. */
const kustomizations = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (!entry.isDirectory()) return []
    const path = join(dir, entry.name)
    return [...(existsSync(join(path, "kustomization.yaml")) ? [path] : []), ...kustomizations(path)]
  })

// --- Schemas ----------------------------------------------------------------------------------------

interface Kind {
  readonly model: new (data: never) => { validate(): void }
  /** The module and interface TypeScript checks the object against. */
  readonly module: string
  readonly type: string
}

const KINDS: Record<string, Kind> = {
  "v1/ConfigMap": { model: ConfigMap, module: "kubernetes-models/v1/ConfigMap", type: "IConfigMap" },
  "v1/Secret": { model: Secret, module: "kubernetes-models/v1/Secret", type: "ISecret" },
  "v1/Service": { model: Service, module: "kubernetes-models/v1/Service", type: "IService" },
  "v1/PersistentVolumeClaim": {
    model: PersistentVolumeClaim,
    module: "kubernetes-models/v1/PersistentVolumeClaim",
    type: "IPersistentVolumeClaim"
  },
  "apps/v1/Deployment": { model: Deployment, module: "kubernetes-models/apps/v1/Deployment", type: "IDeployment" },
  "policy/v1/PodDisruptionBudget": {
    model: PodDisruptionBudget,
    module: "kubernetes-models/policy/v1/PodDisruptionBudget",
    type: "IPodDisruptionBudget"
  },
  "networking.k8s.io/v1/Ingress": {
    model: Ingress,
    module: "kubernetes-models/networking.k8s.io/v1/Ingress",
    type: "IIngress"
  },
  "autoscaling/v2/HorizontalPodAutoscaler": {
    model: HorizontalPodAutoscaler,
    module: "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler",
    type: "IHorizontalPodAutoscaler"
  }
}

const CNPG_CLUSTER = "postgresql.cnpg.io/v1/Cluster"

type OpenApiSchema = Record<string, unknown>

/** The parts of OpenAPI v3 (as CRDs use it) that the extract of CloudNativePG's schema holds. */
const openApiProblems = (schema: OpenApiSchema, value: unknown, at: string): Array<string> => {
  if (schema["x-not-extracted"] === true)
    return [`${at}: not in the schema extract (run deploy/kubernetes/postgres/extract-cnpg-schema.ts on the CRD again)`]
  if (Array.isArray(schema["anyOf"])) {
    const fits = (schema["anyOf"] as Array<OpenApiSchema>).some((s) => openApiProblems(s, value, at).length === 0)
    if (!fits) return [`${at}: matches none of the schema's alternatives`]
  }
  const problems: Array<string> = []
  const type = schema["type"]
  const typeOk =
    type === undefined ||
    (type === "object" && isObject(value)) ||
    (type === "array" && Array.isArray(value)) ||
    (type === "string" && typeof value === "string") ||
    (type === "integer" && Number.isInteger(value)) ||
    (type === "number" && typeof value === "number") ||
    (type === "boolean" && typeof value === "boolean")
  if (!typeOk) return [`${at}: must be ${String(type)}, is ${JSON.stringify(value)}`]
  if (Array.isArray(schema["enum"]) && !schema["enum"].includes(value))
    problems.push(`${at}: must be one of ${JSON.stringify(schema["enum"])}`)
  if (typeof value === "number") {
    if (typeof schema["minimum"] === "number" && value < schema["minimum"])
      problems.push(`${at}: below the minimum ${schema["minimum"]}`)
    if (typeof schema["maximum"] === "number" && value > schema["maximum"])
      problems.push(`${at}: above the maximum ${schema["maximum"]}`)
  }
  if (typeof value === "string" && typeof schema["pattern"] === "string" && !new RegExp(schema["pattern"]).test(value))
    problems.push(`${at}: does not match ${schema["pattern"]}`)
  if (isObject(value)) {
    for (const name of (schema["required"] ?? []) as Array<string>)
      if (!(name in value)) problems.push(`${at}: ${name} is required`)
    const properties = schema["properties"] as Record<string, OpenApiSchema> | undefined
    const additional = schema["additionalProperties"]
    for (const [name, item] of Object.entries(value)) {
      const sub = properties?.[name] ?? (isObject(additional) ? additional : undefined)
      if (sub !== undefined) problems.push(...openApiProblems(sub, item, `${at}.${name}`))
      else if (properties !== undefined && schema["x-kubernetes-preserve-unknown-fields"] !== true)
        problems.push(`${at}: unknown field ${name}`)
    }
  }
  if (Array.isArray(value) && isObject(schema["items"]))
    value.forEach((item, i) => {
      problems.push(...openApiProblems(schema["items"] as OpenApiSchema, item, `${at}[${i}]`))
    })
  return problems
}

const cnpgSchema = JSON.parse(readFileSync(join(KUBE, "postgres/cnpg-cluster.schema.json"), "utf8")) as OpenApiSchema

/**
 * Each manifest through TypeScript: `const m: IDeployment = {…}` fails on a field the type does not
 * have (at any depth: object literals get the excess-property check) and on a value of the wrong type.
 */
const typeScriptProblems = (manifests: ReadonlyArray<Manifest>): Array<string> => {
  const files = new Map<string, { source: string; manifest: Manifest }>()
  manifests.forEach((m, i) => {
    const kind = KINDS[`${String(m["apiVersion"])}/${String(m["kind"])}`]
    if (kind === undefined) return
    files.set(join(ROOT, `test/.deploy-kubernetes-check/manifest${i}.ts`), {
      source: `import type { ${kind.type} } from "${kind.module}"\nexport const manifest: ${kind.type} = ${JSON.stringify(m, null, 1)}\n`,
      manifest: m
    })
  })
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    types: []
  }
  const host = ts.createCompilerHost(options)
  const { getSourceFile, fileExists, readFile } = host
  host.getSourceFile = (name, language, ...rest) => {
    const file = files.get(name)
    return file === undefined
      ? getSourceFile(name, language, ...rest)
      : ts.createSourceFile(name, file.source, language)
  }
  host.fileExists = (name) => files.has(name) || fileExists(name)
  host.readFile = (name) => files.get(name)?.source ?? readFile(name)
  const program = ts.createProgram({ rootNames: [...files.keys()], options, host })
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const file = diagnostic.file === undefined ? undefined : files.get(diagnostic.file.fileName)
    const where = file === undefined ? "typescript" : label(file.manifest)
    return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`
  })
}

/** Every problem the schemas find in these manifests (none: valid). */
const schemaProblems = (manifests: ReadonlyArray<Manifest>): Array<string> => {
  const problems: Array<string> = []
  for (const m of manifests) {
    const key = `${String(m["apiVersion"])}/${String(m["kind"])}`
    if (key === CNPG_CLUSTER) {
      problems.push(...openApiProblems(cnpgSchema, m, label(m)))
      continue
    }
    const kind = KINDS[key]
    if (kind === undefined) {
      problems.push(`${label(m)}: no schema for ${key}`)
      continue
    }
    try {
      new kind.model(clone(m) as never).validate()
    } catch (error) {
      problems.push(`${label(m)}: ${String(error)}`)
    }
  }
  return [...problems, ...typeScriptProblems(manifests)]
}

// --- What the manifests must agree with -------------------------------------------------------------

/** The Dockerfile's ENV (the container's environment before the manifests' own), EXPOSE and USER. */
const dockerfile = (() => {
  const text = readFileSync(join(ROOT, "Dockerfile"), "utf8").replace(/\\\n/g, " ")
  const finalStage = text.slice(text.lastIndexOf("\nFROM "))
  const env: Record<string, string> = {}
  for (const [, pairs] of finalStage.matchAll(/^ENV\s+(.+)$/gm))
    for (const [, name, value] of pairs!.matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)) env[name!] = value!
  return {
    env,
    expose: Number(/^EXPOSE\s+(\d+)/m.exec(finalStage)?.[1]),
    user: /^USER\s+(\S+)/m.exec(finalStage)?.[1]
  }
})()
/** The uid of the `node` user of the official Node.js images. */
const NODE_UID = 1000

const readmePerformance = readFileSync(join(ROOT, "README.md"), "utf8")
/** README "Performance", M1: resident memory after warm-up, the local embedding model loaded. */
const warmRssMiB = Number(/Resident memory after warm-up[^|]*\|\s*([\d.,]+)\s*MiB/.exec(readmePerformance)?.[1])

/** The margin main.ts gives a shutdown beyond the drain and the worker's grace before it exits by itself. */
const shutdownMarginMs = (() => {
  const search = (dir: string): number | undefined => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) {
        const found = search(path)
        if (found !== undefined) return found
      } else if (entry.name.endsWith(".ts")) {
        const match = /SHUTDOWN_MARGIN_MS\s*=\s*([\d_]+)/.exec(readFileSync(path, "utf8"))
        if (match !== null) return Number(match[1]!.replaceAll("_", ""))
      }
    }
    return undefined
  }
  return search(join(ROOT, "src"))
})()

/** Every variable the gateway's configuration reads (src/app/AppConfig.ts and its sections). */
const configVariables = (() => {
  const names = new Set<string>()
  // With an OTLP endpoint the tracing section reads its other OTEL_* variables too.
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }
  const source = ConfigProvider.fromEnv({ env })
  const recording = ConfigProvider.make((path) => {
    names.add(path.join("_"))
    return source.load(path)
  })
  Effect.runSync(appConfigFromEnv.parse(recording))
  return names
})()

/** The gateway's configuration as a container with this environment would parse it (or its error). */
const parseConfig = (env: Record<string, string>) =>
  Effect.runSyncExit(appConfigFromEnv.parse(ConfigProvider.fromEnv({ env })))

const exampleSecret = loadYaml(join(KUBE, "secret.example.yaml"))[0] as unknown as ISecret
const exampleSecretKeys = new Set(Object.keys({ ...exampleSecret.data, ...exampleSecret.stringData }))
const cnpgCluster = loadYaml(join(KUBE, "postgres/cluster.yaml"))[0]!
/** The keys of the Secret CloudNativePG writes for the application user (`<cluster>-app`, pkg/specs/secrets.go). */
const CNPG_APP_SECRET_KEYS = new Set([
  "username",
  "user",
  "password",
  "dbname",
  "host",
  "port",
  "uri",
  "jdbc-uri",
  "pgpass",
  "fqdn-uri",
  "fqdn-jdbc-uri"
])
const cnpgAppSecret = `${String((cnpgCluster["metadata"] as Manifest)["name"])}-app`
/** What the test puts in place of each secret when it parses the configuration. */
const sampleSecretValue = (secret: string, key: string) =>
  secret === cnpgAppSecret && key === "uri"
    ? "postgresql://app:secret@profile-memory-db-rw.profile-memory:5432/app"
    : `sample-${key.toLowerCase()}`

const ofKind = <A>(manifests: ReadonlyArray<Manifest>, kind: string): Array<A> =>
  manifests.filter((m) => m["kind"] === kind) as Array<A>

const matchesLabels = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  selector !== undefined &&
  Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([key, value]) => labels?.[key] === value)

const sameLabels = (a: Record<string, string> | undefined, b: Record<string, string> | undefined) =>
  JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort())

const cpuCores = (quantity: string | number | undefined) =>
  quantity === undefined
    ? Number.NaN
    : String(quantity).endsWith("m")
      ? Number(String(quantity).slice(0, -1)) / 1000
      : Number(quantity)

/**
 * The widest network TRUSTED_PROXIES may name: one node's pod range by kubeadm's defaults (a /24, a /64),
 * enough for an IP pool reserved for the ingress controller; a cluster's pod CIDR or a private range is
 * wider.
 */
const MAX_TRUSTED_PREFIX = { ipv4: 24, ipv6: 64 } as const
/** The documentation ranges (RFC 5737, RFC 3849): no real client or proxy has these addresses. */
const DOCUMENTATION_NETWORKS = ["192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"].map(
  IpNetwork.fromStringUnsafe
)

/**
 * TRUSTED_PROXIES as a rendering sets it (the image, the ConfigMap, or the Deployment's env), parsed by
 * the gateway's own configuration; undefined when nothing sets it.
 */
const trustedProxies = (manifests: ReadonlyArray<Manifest>) => {
  const container = ofKind<IDeployment>(manifests, "Deployment")[0]!.spec!.template.spec!.containers[0]!
  const values = [
    dockerfile.env["TRUSTED_PROXIES"],
    ...ofKind<IConfigMap>(manifests, "ConfigMap").map((c) => c.data?.["TRUSTED_PROXIES"]),
    ...(container.env ?? []).filter((e) => e.name === "TRUSTED_PROXIES").map((e) => e.value)
  ].filter((value) => value !== undefined)
  if (values.length === 0) return undefined
  const env = { TRUSTED_PROXIES: values.at(-1)! }
  return Effect.runSync(serverFromEnv.parse(ConfigProvider.fromEnv({ env }))).trustedProxies
}

const MEBI = { Ki: 1 / 1024, Mi: 1, Gi: 1024 } as const
const memoryMiB = (quantity: string | number | undefined) => {
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi)$/.exec(String(quantity))
  return match === null ? Number.NaN : Number(match[1]) * MEBI[match[2] as keyof typeof MEBI]
}

/**
 * The cross-references of one rendering (an overlay, or the base): none may be broken. Returns what
 * is wrong, in words an operator would understand.
 */
const crossReferenceProblems = (
  manifests: ReadonlyArray<Manifest>,
  options: { readonly singleReplica: boolean } = { singleReplica: false }
): Array<string> => {
  const problems: Array<string> = []
  const problem = (text: string) => problems.push(text)
  const deployments = ofKind<IDeployment>(manifests, "Deployment")
  if (deployments.length !== 1) return [`expected one Deployment, found ${deployments.length}`]
  const deployment = deployments[0]!
  const spec = deployment.spec!
  const pod = spec.template.spec!
  const podLabels = spec.template.metadata?.labels
  const containers = pod.containers
  if (containers.length !== 1) return [`expected one container, found ${containers.length}`]
  const container: IContainer = containers[0]!

  if (!matchesLabels(spec.selector.matchLabels, podLabels))
    problem("the Deployment's selector does not match its pod labels")

  // The container's environment: the image's, then envFrom, then env (which wins).
  const env: Record<string, string> = { ...dockerfile.env }
  const setByManifests = new Map<string, string>()
  const configMaps = ofKind<IConfigMap>(manifests, "ConfigMap")
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef === undefined) {
      problem("envFrom takes only ConfigMaps here (secrets are named key by key)")
      continue
    }
    const configMap = configMaps.find((c) => c.metadata?.name === source.configMapRef?.name)
    if (configMap === undefined) {
      problem(`envFrom names ConfigMap ${source.configMapRef.name}, which is not in the manifests`)
      continue
    }
    for (const [name, value] of Object.entries(configMap.data ?? {})) {
      env[name] = value
      setByManifests.set(name, `ConfigMap ${configMap.metadata?.name}`)
    }
  }
  for (const variable of container.env ?? []) {
    setByManifests.set(variable.name, "the Deployment's env")
    const ref = variable.valueFrom?.secretKeyRef
    if (variable.value !== undefined) env[variable.name] = variable.value
    else if (ref !== undefined) {
      const known =
        ref.name === exampleSecret.metadata?.name
          ? exampleSecretKeys
          : ref.name === cnpgAppSecret
            ? CNPG_APP_SECRET_KEYS
            : undefined
      if (known === undefined)
        problem(`${variable.name} reads Secret ${ref.name}, neither the example Secret nor CloudNativePG's`)
      else if (!known.has(ref.key)) problem(`${variable.name} reads key ${ref.key}, which Secret ${ref.name} has not`)
      else env[variable.name] = sampleSecretValue(ref.name ?? "", ref.key)
    } else problem(`${variable.name}: only values and secretKeyRefs are expected`)
  }
  for (const [name, where] of setByManifests)
    if (!configVariables.has(name)) problem(`${name} (${where}) is not a configuration variable of the gateway`)
  for (const key of exampleSecretKeys)
    if (!configVariables.has(key)) problem(`the example Secret's ${key} is not a configuration variable of the gateway`)

  const parsed = parseConfig(env)
  if (Exit.isFailure(parsed)) return [...problems, `the gateway would refuse this configuration: ${parsed.cause}`]
  const config = parsed.value

  // The port: the Dockerfile's, the configuration's, the container's, the probes' and the Services'.
  const port = container.ports?.find((p) => p.containerPort === config.server.port)
  if (port === undefined) problem(`no container port is the gateway's PORT (${config.server.port})`)
  if (config.server.port !== dockerfile.expose)
    problem(`PORT ${config.server.port} is not the Dockerfile's EXPOSE ${dockerfile.expose}`)
  const isGatewayPort = (target: string | number | undefined) =>
    port !== undefined && (target === port.containerPort || (port.name !== undefined && target === port.name))
  const probe = (name: "readinessProbe" | "livenessProbe" | "startupProbe", path: string) => {
    const get = container[name]?.httpGet
    if (get?.path !== path || !isGatewayPort(get.port))
      problem(`${name} must GET ${path} on the gateway's port, not ${JSON.stringify(get)}`)
  }
  probe("readinessProbe", "/ready")
  probe("livenessProbe", "/health")
  if (container.startupProbe !== undefined) probe("startupProbe", "/health")

  for (const service of ofKind<IService>(manifests, "Service")) {
    if (!matchesLabels(service.spec?.selector, podLabels))
      problem(`Service ${service.metadata?.name} selects no pod of the Deployment`)
    for (const servicePort of service.spec?.ports ?? [])
      if (!isGatewayPort(servicePort.targetPort ?? servicePort.port))
        problem(`Service ${service.metadata?.name} sends port ${servicePort.port} elsewhere than the gateway's port`)
    const mcp = service.metadata?.name?.endsWith("-mcp") === true
    if (mcp !== (service.spec?.sessionAffinity === "ClientIP"))
      problem(`Service ${service.metadata?.name}: affinity is for the MCP Service only`)
  }
  if (!ofKind<IService>(manifests, "Service").some((s) => s.metadata?.name?.endsWith("-mcp")))
    problem("no Service for /mcp with session affinity")

  const pdbs = ofKind<IPodDisruptionBudget>(manifests, "PodDisruptionBudget")
  if (pdbs.length !== 1) problem(`expected one PodDisruptionBudget, found ${pdbs.length}`)
  for (const pdb of pdbs)
    if (!sameLabels(pdb.spec?.selector?.matchLabels, spec.selector.matchLabels))
      problem(`PodDisruptionBudget ${pdb.metadata?.name} does not select the Deployment's pods`)

  const hpas = ofKind<IHorizontalPodAutoscaler>(manifests, "HorizontalPodAutoscaler")
  if (hpas.length !== 1) return [...problems, `expected one HorizontalPodAutoscaler, found ${hpas.length}`]
  const hpa = hpas[0]!
  const target = hpa.spec?.scaleTargetRef
  if (target?.apiVersion !== "apps/v1" || target.kind !== "Deployment" || target.name !== deployment.metadata?.name)
    problem(`the HorizontalPodAutoscaler scales ${JSON.stringify(target)}, not the Deployment`)
  const minReplicas = hpa.spec?.minReplicas ?? 1
  const maxReplicas = hpa.spec?.maxReplicas ?? 1
  // The autoscaler owns the count: a Deployment's own would be applied again by every `kubectl apply`,
  // scaling an autoscaled Deployment back down and cutting the streams of the pods it removes.
  if (spec.replicas !== undefined)
    problem(
      `the Deployment sets spec.replicas (${spec.replicas}) while the HorizontalPodAutoscaler scales it: every kubectl apply would reset the count`
    )
  if (config.rateLimits.replicas !== minReplicas)
    problem(`RATE_LIMIT_REPLICAS (${config.rateLimits.replicas}) is not the autoscaler's minReplicas (${minReplicas})`)
  if (!hpa.spec?.metrics?.some((m) => m.resource?.name === "cpu"))
    problem("the autoscaler must scale on CPU, which its requests are sized for")

  // Shutdown: the preStop sleep, then SIGTERM: the drain, the worker's grace and main.ts's margin.
  const preStop = container.lifecycle?.preStop?.exec?.command
  const sleepSeconds = preStop?.[0] === "sleep" ? Number(preStop[1]) : Number.NaN
  if (!(sleepSeconds > 0)) problem(`preStop must be a sleep, not ${JSON.stringify(preStop)}`)
  const grace = pod.terminationGracePeriodSeconds ?? 30
  if (shutdownMarginMs === undefined) problem("SHUTDOWN_MARGIN_MS not found in src")
  const drain = config.server.shutdownDrainMs / 1000
  const worst = sleepSeconds + drain + config.extraction.shutdownGraceMs / 1000 + (shutdownMarginMs ?? 0) / 1000
  if (!(sleepSeconds + drain < grace)) problem(`preStop (${sleepSeconds} s) + drain (${drain} s) ≥ grace (${grace} s)`)
  if (!(worst <= grace))
    problem(`the worst shutdown (${worst} s: preStop, drain, worker grace, margin) exceeds the grace (${grace} s)`)

  // Resources, from the benchmarks' figures.
  const { requests, limits } = container.resources ?? {}
  if (!(memoryMiB(requests?.["memory"]) >= warmRssMiB))
    problem(`the memory request ${requests?.["memory"]} is below README's M1 figure (${warmRssMiB} MiB after warm-up)`)
  if (!(memoryMiB(limits?.["memory"]) > memoryMiB(requests?.["memory"])))
    problem("the memory limit must be above the request")
  if (!(cpuCores(requests?.["cpu"]) > 0 && cpuCores(limits?.["cpu"]) >= cpuCores(requests?.["cpu"])))
    problem("cpu requests and limits must be set, the limit at least the request")

  // Non-root, read-only root filesystem: every path the gateway writes is a volume.
  const podSecurity = pod.securityContext
  const security = container.securityContext
  if (dockerfile.user !== "node") problem(`the Dockerfile's USER is ${dockerfile.user}, not node (uid ${NODE_UID})`)
  if (podSecurity?.runAsNonRoot !== true || podSecurity.runAsUser !== NODE_UID)
    problem(`the pod must run as non-root with the image's numeric uid ${NODE_UID}`)
  if (security?.readOnlyRootFilesystem !== true || security.allowPrivilegeEscalation !== false)
    problem("the container must have a read-only root filesystem and no privilege escalation")
  const mounted = (path: string) =>
    (container.volumeMounts ?? []).some((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
  if (!mounted("/tmp")) problem("/tmp is not a volume")
  const volumeNames = new Set((pod.volumes ?? []).map((v) => v.name))
  for (const mount of container.volumeMounts ?? [])
    if (!volumeNames.has(mount.name)) problem(`volumeMount ${mount.name} has no volume`)

  if (Option.isNone(config.database.url))
    problem("DATABASE_URL is not set: the gateway would start its embedded PostgreSQL")
  if (options.singleReplica) {
    if (minReplicas !== 1 || maxReplicas !== 1) problem("a single-replica rendering must keep one replica")
  } else if (minReplicas < 2) problem(`run two replicas at least: the autoscaler's minReplicas is ${minReplicas}`)

  // X-Forwarded-For is believed from TRUSTED_PROXIES only: a range wider than the ingress controller's
  // pods would let any pod in it name any client address, and get around the per-client limits.
  for (const network of config.server.trustedProxies) {
    const narrowest = IpNetwork.isIpv4Network(network) ? MAX_TRUSTED_PREFIX.ipv4 : MAX_TRUSTED_PREFIX.ipv6
    if (network.prefixLength < narrowest)
      problem(
        `TRUSTED_PROXIES trusts ${IpNetwork.format(network)}, wider than an ingress controller's pods (/${narrowest} at most)`
      )
  }
  if (spec.strategy?.rollingUpdate?.maxUnavailable !== 0)
    problem("a rollout must keep every replica until its replacement is ready (maxUnavailable 0)")

  // PostgreSQL's connections: every replica's pool at the autoscaler's maximum, during a rollout.
  for (const cluster of manifests.filter((m) => `${m["apiVersion"]}/${m["kind"]}` === CNPG_CLUSTER)) {
    const parameters = ((cluster["spec"] as Manifest)["postgresql"] as Manifest | undefined)?.["parameters"] as
      | Record<string, string>
      | undefined
    const maxConnections = Number(parameters?.["max_connections"] ?? 100)
    const surge = Number(spec.strategy?.rollingUpdate?.maxSurge ?? 1)
    const needed = (maxReplicas + surge) * config.database.poolMax
    // superuser_reserved_connections (3) and the operator's own connections.
    if (needed > maxConnections - 3 - 10)
      problem(`(maxReplicas + maxSurge) × DATABASE_POOL_MAX = ${needed} exceeds max_connections ${maxConnections}`)
  }
  return problems
}

// --- The tests ----------------------------------------------------------------------------------------

const overlays = readdirSync(join(KUBE, "overlays")).map((name) => `overlays/${name}`)
/** What an operator can apply: the base (as a reference) and every overlay. */
const deployable = ["base", ...overlays]
const rendered = new Map(
  kustomizations(KUBE).map((dir) => [relative(KUBE, dir), render(dir)] as [string, Array<Manifest>])
)

describe("deploy/kubernetes", () => {
  it("has a base, the CloudNativePG cluster and two overlays, each rendered with what this test supports", () => {
    expect([...rendered.keys()].sort()).toEqual(
      ["base", "postgres", "overlays/production", "overlays/single-replica-dev"].sort()
    )
    expect(rendered.get("overlays/production")!.map(label)).toContain("Cluster/profile-memory-db")
    for (const overlay of overlays)
      for (const m of rendered.get(overlay)!) expect((m["metadata"] as Manifest)["namespace"]).toBeTruthy()
  })

  it.runIf(existsSync("/usr/bin/kubectl") || existsSync("/usr/local/bin/kubectl"))(
    "renders each kustomization as kubectl kustomize does",
    () => {
      const key = (m: Manifest) => `${label(m)}@${String((m["metadata"] as Manifest)["namespace"])}`
      for (const [name, manifests] of rendered) {
        const output = execFileSync("kubectl", ["kustomize", join(KUBE, name)], { encoding: "utf8" })
        const theirs = parseAllDocuments(output).map((doc) => doc.toJS() as Manifest)
        expect(new Map(manifests.map((m) => [key(m), m])), name).toEqual(new Map(theirs.map((m) => [key(m), m])))
      }
    }
  )

  it.each([...rendered.keys()])("%s: every manifest is valid against the Kubernetes schemas", (name) => {
    expect(schemaProblems(rendered.get(name)!)).toEqual([])
  })

  it("the example Secret is valid, holds placeholders only, and is never applied", () => {
    const secret = loadYaml(join(KUBE, "secret.example.yaml"))
    expect(schemaProblems(secret)).toEqual([])
    expect(exampleSecret.data).toBeUndefined()
    for (const [key, value] of Object.entries(exampleSecret.stringData ?? {}))
      expect(value, key).toMatch(/^REPLACE_[A-Z0-9_]+$/)
    for (const manifests of rendered.values()) expect(manifests.map(label)).not.toContain(label(secret[0]!))
    for (const key of ["SERVICE_API_KEY", "ADMIN_API_KEY", "KEY_ENCRYPTION_KEY"])
      expect(exampleSecretKeys).toContain(key)
  })

  it("the example Ingresses are valid and send / and /mcp to the gateway's two Services", () => {
    const ingresses = loadYaml(join(KUBE, "ingress.example.yaml"))
    expect(schemaProblems(ingresses)).toEqual([])
    const services = ofKind<IService>(rendered.get("base")!, "Service")
    const routes = (ingresses as unknown as Array<IIngress>).flatMap((ingress) =>
      (ingress.spec?.rules ?? []).flatMap((rule) =>
        (rule.http?.paths ?? []).map((path) => {
          const backend = path.backend.service!
          const service = services.find((s) => s.metadata?.name === backend.name)
          expect(
            service?.spec?.ports?.map((p) => p.name),
            backend.name
          ).toContain(backend.port?.name)
          return `${path.path} → ${backend.name}`
        })
      )
    )
    expect(routes).toEqual(["/ → profile-memory-gateway", "/mcp → profile-memory-gateway-mcp"])
  })

  it.each(deployable)("%s: selectors, probes, drain, secrets and configuration agree", (name) => {
    expect(crossReferenceProblems(rendered.get(name)!, { singleReplica: name.includes("single-replica") })).toEqual([])
  })

  it.each(deployable)("%s: the HorizontalPodAutoscaler alone sets the replicas", (name) => {
    const manifests = rendered.get(name)!
    const deployment = ofKind<IDeployment>(manifests, "Deployment")[0]!
    const hpa = ofKind<IHorizontalPodAutoscaler>(manifests, "HorizontalPodAutoscaler")[0]!
    expect(hpa.spec?.scaleTargetRef.name).toBe(deployment.metadata?.name)
    expect(deployment.spec).not.toHaveProperty("replicas")
    const configMap = ofKind<IConfigMap>(manifests, "ConfigMap")[0]!
    expect(Number(configMap.data?.["RATE_LIMIT_REPLICAS"])).toBe(hpa.spec?.minReplicas)
    if (name === "overlays/production") expect(hpa.spec?.minReplicas).toBeGreaterThanOrEqual(2)
  })

  it("TRUSTED_PROXIES: unset in the base and the dev overlay; in production, a placeholder that trusts nobody", () => {
    expect(trustedProxies(rendered.get("base")!)).toBeUndefined()
    expect(trustedProxies(rendered.get("overlays/single-replica-dev")!)).toBeUndefined()
    // Until it is replaced with the ingress controller's pod addresses, no real peer is trusted: the
    // gateway keys the limits on the peer (the ingress pod), as without the variable.
    const production = trustedProxies(rendered.get("overlays/production")!)
    expect(production?.length).toBeGreaterThan(0)
    for (const network of production ?? [])
      expect(
        DOCUMENTATION_NETWORKS.some((documentation) => IpNetwork.containsNetwork(documentation, network)),
        IpNetwork.format(network)
      ).toBe(true)
  })

  it.each(overlays)(
    "%s: the gateway's DATABASE_URL is the CloudNativePG cluster's, with the extensions it needs",
    (name) => {
      const manifests = rendered.get(name)!
      const env = ofKind<IDeployment>(manifests, "Deployment")[0]!.spec!.template.spec!.containers[0]!.env
      const cluster = manifests.find((m) => `${m["apiVersion"]}/${m["kind"]}` === CNPG_CLUSTER)!
      expect(env?.find((e) => e.name === "DATABASE_URL")?.valueFrom?.secretKeyRef).toEqual({
        name: `${String((cluster["metadata"] as Manifest)["name"])}-app`,
        key: "uri"
      })
      // The extensions the migrations create, created by the operator too.
      const migrationsDir = join(ROOT, "src/db/migrations")
      const migrations = readdirSync(migrationsDir)
        .sort()
        .map((file) => readFileSync(join(migrationsDir, file), "utf8"))
        .join("\n")
      const extensions = [...migrations.matchAll(/CREATE EXTENSION IF NOT EXISTS (\w+)/g)].map((m) => m[1])
      expect(extensions).toEqual(["pg_trgm"])
      const initdb = ((cluster["spec"] as Manifest)["bootstrap"] as Manifest)["initdb"] as Manifest
      expect(initdb["postInitApplicationSQL"]).toEqual(extensions.map((e) => `CREATE EXTENSION IF NOT EXISTS ${e}`))
    }
  )

  describe("the checks catch what would break", () => {
    const production = () => clone(rendered.get("overlays/production")!)
    const edit = (manifests: Array<Manifest>, kind: string, change: (m: Manifest) => void) => {
      change(manifests.find((m) => m["kind"] === kind)!)
      return manifests
    }
    const pod = (m: Manifest) => ((m["spec"] as Manifest)["template"] as Manifest)["spec"] as Manifest
    const container = (m: Manifest) => (pod(m)["containers"] as Array<Manifest>)[0]!

    it("a misspelt field, a wrong type, a missing required field (schemas)", () => {
      const misspelt = edit(production(), "Deployment", (m) => {
        container(m)["readinesProbe"] = container(m)["readinessProbe"]
      })
      expect(schemaProblems(misspelt).join("\n")).toContain("'\"readinesProbe\"' does not exist in type 'IContainer'")
      const wrongType = edit(production(), "Deployment", (m) => {
        ;(m["spec"] as Manifest)["replicas"] = "two"
      })
      expect(schemaProblems(wrongType).join("\n")).toContain("spec/replicas must be integer")
      const noPort = edit(production(), "Service", (m) => {
        delete (((m["spec"] as Manifest)["ports"] as Array<Manifest>)[0] as Manifest)["port"]
      })
      expect(schemaProblems(noPort).join("\n")).toContain("spec/ports/0 must have required property port")
      const cluster = edit(production(), "Cluster", (m) => {
        ;(m["spec"] as Manifest)["instances"] = 0
        ;(m["spec"] as Manifest)["storge"] = { size: "1Gi" }
      })
      expect(schemaProblems(cluster)).toEqual([
        "Cluster/profile-memory-db.spec.instances: below the minimum 1",
        "Cluster/profile-memory-db.spec: unknown field storge"
      ])
    })

    it("broken cross-references", () => {
      const cases: Array<[string, (m: Array<Manifest>) => void]> = [
        [
          "Service profile-memory-gateway selects no pod",
          (m) =>
            edit(m, "Service", (s) => {
              ;(s["spec"] as Manifest)["selector"] = { app: "gateway" }
            })
        ],
        [
          "readinessProbe must GET /ready",
          (m) =>
            edit(m, "Deployment", (d) => {
              ;((container(d)["readinessProbe"] as Manifest)["httpGet"] as Manifest)["path"] = "/health"
            })
        ],
        [
          "livenessProbe must GET /health on the gateway's port",
          (m) =>
            edit(m, "Deployment", (d) => {
              ;((container(d)["livenessProbe"] as Manifest)["httpGet"] as Manifest)["port"] = 8080
            })
        ],
        [
          "exceeds the grace",
          (m) =>
            edit(m, "Deployment", (d) => {
              pod(d)["terminationGracePeriodSeconds"] = 30
            })
        ],
        [
          "SHUTDOWN_DRAN_MS (ConfigMap profile-memory-gateway) is not a configuration variable",
          (m) =>
            edit(m, "ConfigMap", (c) => {
              ;(c["data"] as Manifest)["SHUTDOWN_DRAN_MS"] = "15000"
            })
        ],
        [
          "the gateway would refuse this configuration",
          (m) =>
            edit(m, "ConfigMap", (c) => {
              ;(c["data"] as Manifest)["SHUTDOWN_DRAIN_MS"] = "15s"
            })
        ],
        [
          "reads key API_KEY, which Secret profile-memory-gateway has not",
          (m) =>
            edit(m, "Deployment", (d) => {
              const env = container(d)["env"] as Array<{ valueFrom?: { secretKeyRef?: { key: string } } }>
              env.find((e) => e.valueFrom?.secretKeyRef?.key === "SERVICE_API_KEY")!.valueFrom!.secretKeyRef!.key =
                "API_KEY"
            })
        ],
        [
          "PodDisruptionBudget profile-memory-gateway does not select",
          (m) =>
            edit(m, "PodDisruptionBudget", (p) => {
              ;(((p["spec"] as Manifest)["selector"] as Manifest)["matchLabels"] as Manifest)["app"] = "other"
            })
        ],
        [
          "not the Deployment",
          (m) =>
            edit(m, "HorizontalPodAutoscaler", (h) => {
              ;((h["spec"] as Manifest)["scaleTargetRef"] as Manifest)["name"] = "gateway"
            })
        ],
        [
          "RATE_LIMIT_REPLICAS (3) is not the autoscaler's minReplicas (2)",
          (m) =>
            edit(m, "HorizontalPodAutoscaler", (h) => {
              ;(h["spec"] as Manifest)["minReplicas"] = 2
            })
        ],
        [
          "sets spec.replicas (3) while the HorizontalPodAutoscaler scales it",
          (m) =>
            edit(m, "Deployment", (d) => {
              ;(d["spec"] as Manifest)["replicas"] = 3
            })
        ],
        [
          "run two replicas at least: the autoscaler's minReplicas is 1",
          (m) => {
            edit(m, "HorizontalPodAutoscaler", (h) => {
              ;(h["spec"] as Manifest)["minReplicas"] = 1
            })
            edit(m, "ConfigMap", (c) => {
              ;(c["data"] as Manifest)["RATE_LIMIT_REPLICAS"] = "1"
            })
          }
        ],
        [
          "TRUSTED_PROXIES trusts 10.0.0.0/8, wider than an ingress controller's pods (/24 at most)",
          (m) =>
            edit(m, "ConfigMap", (c) => {
              ;(c["data"] as Manifest)["TRUSTED_PROXIES"] = "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16"
            })
        ],
        [
          "TRUSTED_PROXIES trusts fd00::/8, wider than an ingress controller's pods (/64 at most)",
          (m) =>
            edit(m, "ConfigMap", (c) => {
              ;(c["data"] as Manifest)["TRUSTED_PROXIES"] = "10.244.7.0/26,fd00::/8"
            })
        ],
        [
          "the gateway would refuse this configuration",
          (m) =>
            edit(m, "ConfigMap", (c) => {
              ;(c["data"] as Manifest)["TRUSTED_PROXIES"] = "REPLACE_WITH_INGRESS_POD_CIDR"
            })
        ],
        [
          "exceeds max_connections 100",
          (m) =>
            edit(m, "Cluster", (c) => {
              ;(((c["spec"] as Manifest)["postgresql"] as Manifest)["parameters"] as Manifest)["max_connections"] =
                "100"
            })
        ],
        [
          "read-only root filesystem",
          (m) =>
            edit(m, "Deployment", (d) => {
              ;(container(d)["securityContext"] as Manifest)["readOnlyRootFilesystem"] = false
            })
        ],
        [
          "below README's M1 figure",
          (m) =>
            edit(m, "Deployment", (d) => {
              ;((container(d)["resources"] as Manifest)["requests"] as Manifest)["memory"] = "256Mi"
            })
        ]
      ]
      expect(crossReferenceProblems(production())).toEqual([])
      for (const [expected, breakIt] of cases) {
        const manifests = production()
        breakIt(manifests)
        expect(crossReferenceProblems(manifests).join("\n"), expected).toContain(expected)
      }
    })

    it("an overlay whose patch no longer fits", () => {
      expect(() =>
        applyJsonPatch({ spec: { env: [{ name: "LOG_LEVEL" }] } }, [
          { op: "test", path: "/spec/env/0/name", value: "DATABASE_URL" }
        ])
      ).toThrow("test failed")
      expect(() => applyJsonPatch({ spec: {} }, [{ op: "replace", path: "/spec/replicas", value: 1 }])).toThrow(
        "no such member"
      )
    })
  })
})

// The test renders every file the overlays name; nothing in deploy/kubernetes should be left unused.
it("every manifest file in deploy/kubernetes is rendered or is an example", () => {
  const files = (dir: string): Array<string> =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)]
    )
  const listed = new Set<string>()
  for (const dir of kustomizations(KUBE)) {
    listed.add(join(dir, "kustomization.yaml"))
    const kustomization = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as { resources: Array<string> }
    for (const entry of kustomization.resources) listed.add(resolve(dir, entry))
  }
  const yamlFiles = files(KUBE).filter((f) => f.endsWith(".yaml"))
  expect(yamlFiles.filter((f) => !listed.has(f) && !f.endsWith(".example.yaml"))).toEqual([])
})
