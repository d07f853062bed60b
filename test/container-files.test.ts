import { readFile } from "node:fs/promises"
import { describe, expect, it } from "vitest"

// No Docker engine runs the tests: the container files are checked for what they promise.
const read = (file: string) => readFile(new URL(`../${file}`, import.meta.url), "utf8")

describe("docker-compose.yml", () => {
  it("refuses to start without SERVICE_API_KEY and publishes on loopback unless told otherwise", async () => {
    const compose = await read("docker-compose.yml")
    expect(compose).toMatch(/SERVICE_API_KEY: \$\{SERVICE_API_KEY:\?/)
    expect(compose).toContain(`"\${GATEWAY_BIND:-127.0.0.1}:`)
  })

  it("passes every variable of .env to the gateway", async () => {
    expect(await read("docker-compose.yml")).toMatch(/env_file:\n\s+- path: \.env\n\s+required: false/)
  })

  it("checks readiness, and waits longer than the gateway's shutdown limit before killing it", async () => {
    const compose = await read("docker-compose.yml")
    expect(compose).toContain("http://127.0.0.1:3100/ready")
    const grace = Number(/stop_grace_period: (\d+)s/.exec(compose)?.[1])
    // SHUTDOWN_DRAIN_MS + EXTRACTION_SHUTDOWN_GRACE_MS + the margin in src/main.ts, at their defaults.
    expect(grace).toBeGreaterThanOrEqual(15 + 10 + 15)
  })
})

describe("Dockerfile", () => {
  it("health-checks /ready", async () => {
    expect(await read("Dockerfile")).toMatch(/HEALTHCHECK[^\n]*\\\n[^\n]*\/ready/)
  })

  it("builds the console in a stage of its own and puts its files where the gateway serves them from", async () => {
    const dockerfile = await read("Dockerfile")
    expect(dockerfile).toContain("RUN npm run build:console")
    expect(dockerfile).toContain("COPY --from=console /build/console/dist ./console/dist")
    // The gateway runs from /app/src: its console directory is /app/console/dist.
    expect(await read("src/app/ConsoleRoutes.ts")).toContain(`new URL("../../console/dist/", import.meta.url)`)
  })

  it("runs the command line: start by default, the other commands in the same image (pmg on the PATH)", async () => {
    const dockerfile = await read("Dockerfile")
    expect(dockerfile).toContain('ENTRYPOINT ["node", "src/cli/main.ts"]')
    expect(dockerfile).toContain('CMD ["start"]')
    expect(dockerfile).toContain("COPY bin ./bin")
    expect(dockerfile).toContain("ln -s /app/bin/profile-memory-gateway.js /usr/local/bin/pmg")
    // The executable finds the sources the image ships (src/, not a build).
    expect(await read("bin/profile-memory-gateway.js")).toContain('new URL("../src/cli/main.ts", import.meta.url)')
  })
})
