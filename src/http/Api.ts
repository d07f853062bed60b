import { Predicate } from "effect"
import { HttpApi, OpenApi } from "effect/http-api"
import { JobsGroup } from "../jobs/JobsApi.ts"
import { KeysGroup } from "../keys/KeysApi.ts"
import { MemoriesGroup } from "../memories/MemoriesApi.ts"
import { NamespacesGroup } from "../namespaces/NamespacesApi.ts"
import { PluginsGroup } from "../plugins/PluginsApi.ts"
import { ProfilesGroup } from "../profiles/ProfilesApi.ts"
import { ThreadsGroup } from "../threads/ThreadsApi.ts"
import { TraitsGroup } from "../traits/TraitsApi.ts"
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

/**
 * The management API: each group is declared beside its feature (`profiles/ProfilesApi.ts`, …) and
 * implemented there (`…Handlers.ts`); this file assembles them in the order the OpenAPI document lists
 * them, with the document's own annotations.
 */
export class GatewayApi extends HttpApi.make("gateway")
  .add(
    SystemGroup,
    ProfilesGroup,
    TraitsGroup,
    MemoriesGroup,
    ThreadsGroup,
    JobsGroup,
    NamespacesGroup,
    KeysGroup,
    WebhooksGroup,
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
      transform: bearerSecurity
    })
  ) {}
