import { Predicate } from "effect"
import { HttpApi, OpenApi } from "effect/http-api"
import { API_ID } from "../http/sliceApi.ts"
import { JobsGroup } from "../jobs/JobsApi.ts"
import { KeysGroup } from "../keys/KeysApi.ts"
import { MemoriesGroup } from "../memories/MemoriesApi.ts"
import { SharedMemoriesGroup } from "../memories/SharedMemoriesApi.ts"
import { NamespacesGroup } from "../namespaces/NamespacesApi.ts"
import { PluginsGroup } from "../plugins/PluginsApi.ts"
import { ProfilesGroup } from "../profileApi/ProfilesApi.ts"
import { RoutesGroup } from "../routing/RoutesApi.ts"
import { ThreadsGroup } from "../threads/ThreadsApi.ts"
import { TraitDefinitionsGroup, TraitsGroup } from "../traits/TraitsApi.ts"
import { UsageGroup } from "../usage/UsageApi.ts"
import { WebhooksGroup } from "../webhooks/WebhooksApi.ts"
import { SystemGroup } from "./SystemApi.ts"

const objectOr = (value: unknown): Record<string, unknown> => (Predicate.isObject(value) ? { ...value } : {})

/** The document names the bearer scheme the service key uses, for every operation. */
const bearerSecurity = (spec: Record<string, unknown>): Record<string, unknown> => {
  const components = objectOr(spec["components"])
  return {
    ...spec,
    components: {
      ...components,
      securitySchemes: {
        ...objectOr(components["securitySchemes"]),
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "Required on /api and /v1 when the service runs with SERVICE_API_KEY"
        }
      }
    },
    security: [{ bearer: [] }]
  }
}

/** How a number travels in a query string: the pattern the document gives a query parameter decoded as a number. */
const NUMBER_IN_QUERY = "^[+-]?(?:\\d+(?:\\.\\d+)?|\\.\\d+)(?:[Ee][+-]?\\d+)?$"

/** A query parameter's schema as a client generator should type it (every numeric one of this API is a count). */
const queryParameterSchema = (schema: Record<string, unknown>): Record<string, unknown> => {
  if (schema["type"] === "string" && schema["pattern"] === NUMBER_IN_QUERY) return { type: "integer" }
  const values = schema["enum"]
  if (Array.isArray(values) && values.length === 2 && values.includes("true") && values.includes("false"))
    return { type: "boolean" }
  return schema
}

/**
 * Query parameters are decoded from text, so the document would type a count as a string with a
 * number's pattern and a flag as "true" | "false": generated clients get them as integers and booleans.
 */
const typedQueryParameters = (spec: Record<string, unknown>): Record<string, unknown> => ({
  ...spec,
  paths: Object.fromEntries(
    Object.entries(objectOr(spec["paths"])).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(objectOr(item)).map(([method, operation]) => {
          const fields = objectOr(operation)
          const parameters = fields["parameters"]
          if (!Array.isArray(parameters)) return [method, operation]
          return [
            method,
            {
              ...fields,
              parameters: parameters.map((parameter) => {
                const entry = objectOr(parameter)
                return entry["in"] === "query"
                  ? { ...entry, schema: queryParameterSchema(objectOr(entry["schema"])) }
                  : parameter
              })
            }
          ]
        })
      )
    ])
  )
})

/**
 * The management API: each group is declared beside its feature (`profiles/ProfilesApi.ts`, …) and
 * implemented there (`…Handlers.ts`); this file assembles them in the order the OpenAPI document lists
 * them, with the document's own annotations.
 */
export class GatewayApi extends HttpApi.make(API_ID)
  .add(
    SystemGroup,
    ProfilesGroup,
    TraitsGroup,
    TraitDefinitionsGroup,
    MemoriesGroup,
    ThreadsGroup,
    JobsGroup,
    NamespacesGroup,
    SharedMemoriesGroup,
    KeysGroup,
    WebhooksGroup,
    UsageGroup,
    RoutesGroup,
    PluginsGroup
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "Profile-memory gateway",
      version: "0.1.0",
      description:
        "The proxy's memory routes (OpenAI Chat Completions and Responses, Anthropic Messages) and the " +
        "management API for the profiles, traits and memories the gateway keeps per user. Every other /v1 call is " +
        'passed through to the provider. Errors have the OpenAI shape {"error": {"message", "type", "code", "param"}}.',
      license: { name: "MIT", url: "https://opensource.org/licenses/MIT" },
      // Relative: the gateway that serves this document, wherever it runs.
      servers: [{ url: "/", description: "This gateway" }],
      transform: (spec) => typedQueryParameters(bearerSecurity(spec))
    })
  ) {}
