import { chmod, mkdtemp, readdir, readFile, rename, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  answerNamingQuestion,
  chunkFrames,
  eventually,
  type FakeUpstream,
  startFakeUpstream
} from "./support/fakeUpstream.ts"
import { freePort, type ServiceProcess, spawnService, waitUntilHealthy } from "./support/serviceProcess.ts"

let up: FakeUpstream
let dataRoot: string
const services: Array<{ service: ServiceProcess; dataDir: string }> = []

beforeAll(async () => {
  up = await startFakeUpstream()
  up.handler = answerNamingQuestion
  dataRoot = await mkdtemp(join(tmpdir(), "gateway-outage-"))
  await chmod(dataRoot, 0o755)
})

afterAll(async () => {
  for (const { service, dataDir } of services) {
    await signalCluster(dataDir, "SIGCONT")
    service.child.kill("SIGKILL")
    await service.exited
    await signalCluster(dataDir, "SIGKILL")
  }
  // Backends frozen with their postmaster, which shutdown then killed: they are nobody's children now.
  for (const pid of signalled) {
    for (const signal of ["SIGCONT", "SIGKILL"] as const) {
      try {
        process.kill(pid, signal)
      } catch {
        // Already gone.
      }
    }
  }
  await up.close()
  await rm(dataRoot, { recursive: true, force: true })
})

/** A gateway process on its own embedded PostgreSQL. */
const start = async (name: string, env: Record<string, string> = {}) => {
  const dataDir = join(dataRoot, name)
  const service = spawnService({
    PORT: String(await freePort()),
    DATA_DIR: dataDir,
    UPSTREAM_BASE_URL: up.url,
    UPSTREAM_API_KEY: "sk-test",
    EXTRACTION_CONCURRENCY: "0",
    EMBEDDINGS: "off",
    ...env
  })
  services.push({ service, dataDir })
  await waitUntilHealthy(service, 120_000, "/ready")
  return { service, dataDir }
}

const postmasterPid = async (dataDir: string) =>
  Number((await readFile(join(dataDir, "postgres", "postmaster.pid"), "utf8")).split("\n")[0])

/** The postmaster and every process it started (the backends), by their parent pid. */
const clusterPids = async (dataDir: string) => {
  const root = await postmasterPid(dataDir).catch(() => undefined)
  if (root === undefined) return []
  const pids = [root]
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "")
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
    if (ppid === root) pids.push(Number(entry))
  }
  return pids
}

/** Every process ever signalled, so the end of the run can wake and end them even after their parent died. */
const signalled = new Set<number>()

const signalCluster = async (dataDir: string, signal: NodeJS.Signals) => {
  const pids = await clusterPids(dataDir)
  for (const pid of pids) signalled.add(pid)
  for (const pid of pids) {
    try {
      process.kill(pid, signal)
    } catch {
      // Already gone.
    }
  }
}

const chat = async (baseUrl: string, userId: string, content: string, stream = false, signal?: AbortSignal) => {
  const response = await fetch(`${baseUrl}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-service-id": userId },
    body: JSON.stringify({ model: "m", stream, messages: [{ role: "user", content }] }),
    ...(signal === undefined ? {} : { signal })
  })
  return {
    status: response.status,
    memory: response.headers.get("x-service-memory"),
    context: response.headers.get("x-service-context"),
    text: await response.text()
  }
}

const exportedMessages = async (baseUrl: string, userId: string) => {
  const response = await fetch(`${baseUrl}/api/profiles/${userId}/export`)
  if (response.status !== 200) return []
  return ((await response.json()) as { messages: Array<{ role: string; content: string }> }).messages
}

describe("the database frozen (SIGSTOP) under traffic", () => {
  it("answers without memory, says so, keeps the turns and writes them once the database is back", async () => {
    const { service, dataDir } = await start("frozen", { DATABASE_REQUEST_TIMEOUT_MS: "500" })
    // On a busy machine a first request may itself miss the deadline: wait for one with memory.
    await eventually(
      async () => (await chat(service.baseUrl, "frozen-known", "hello before")).memory === "available" || undefined,
      20_000
    )

    await signalCluster(dataDir, "SIGSTOP")
    // First, before anything has found the database frozen: a user whose profile is cached needs no
    // query before the answer, and its end waits for the turn's commit only within the deadline (not
    // for the writer's own 10 s), while the database stays frozen.
    const known = await chat(
      service.baseUrl,
      "frozen-known",
      "hello from a cached user",
      true,
      AbortSignal.timeout(5000)
    )
    expect(known.status).toBe(200)
    expect(known.text).toContain("data: [DONE]")
    const fresh = await chat(service.baseUrl, "frozen-new", "hello while frozen")
    expect(fresh.status).toBe(200)
    expect(fresh.memory).toBe("unavailable")
    expect(JSON.parse(fresh.context!)).toEqual({
      profileId: null,
      memory: "unavailable",
      upstream: { target: "openai", attempts: 1 }
    })
    expect(fresh.text).toContain("answer to hello while frozen")
    const streamed = await chat(service.baseUrl, "frozen-new-stream", "streamed while frozen", true)
    expect(streamed.status).toBe(200)
    expect(streamed.memory).toBe("unavailable")
    expect(streamed.text).toContain("data: [DONE]")
    // The upstream got the request as sent, without a context block.
    const forwarded = up.requests.findLast((request) => JSON.stringify(request.body).includes("hello while frozen"))
    expect(JSON.stringify(forwarded?.body)).not.toContain("user_profile")
    // Within its deadline, not after the freeze (or a whole connect timeout).
    const ready = await fetch(`${service.baseUrl}/ready`, { signal: AbortSignal.timeout(5000) })
    expect(ready.status).toBe(503)

    await signalCluster(dataDir, "SIGCONT")
    await eventually(async () => ((await fetch(`${service.baseUrl}/ready`)).status === 200 ? true : undefined), 20_000)
    const landed = await eventually(async () => {
      const messages = await exportedMessages(service.baseUrl, "frozen-new")
      return messages.length === 2 ? messages : undefined
    }, 20_000)
    expect(landed.map((m) => m.content)).toEqual(["hello while frozen", "answer to hello while frozen"])
    // Each user's turns are written on their own once that user's profile is found: wait for this one's too.
    const streamedLanded = await eventually(async () => {
      const messages = await exportedMessages(service.baseUrl, "frozen-new-stream")
      return messages.length === 2 ? messages : undefined
    }, 20_000)
    expect(streamedLanded.map((m) => m.content)).toEqual(["streamed while frozen", "answer to streamed while frozen"])
    await eventually(async () => {
      const messages = await exportedMessages(service.baseUrl, "frozen-known")
      return messages.some((m) => m.content === "hello from a cached user") ? true : undefined
    }, 20_000)
    await eventually(
      async () => (await chat(service.baseUrl, "frozen-new", "hello after")).memory === "available" || undefined,
      20_000
    )

    service.child.kill("SIGTERM")
    expect(await service.exited).toBe(0)
  }, 90_000)
})

describe("the embedded database killed under traffic", () => {
  it("is restarted, completions keep succeeding, and the answered turns are all stored", async () => {
    const { service, dataDir } = await start("killed")
    const firstPid = await postmasterPid(dataDir)
    await signalCluster(dataDir, "SIGKILL")
    const answered: Array<string> = []
    // Traffic through the outage until the database is back under a new postmaster.
    for (let i = 0; ; i++) {
      const reply = await chat(service.baseUrl, `killed-${i % 3}`, `turn ${i}`, i % 2 === 0)
      expect(reply.status).toBe(200)
      answered.push(`turn ${i}`)
      const ready = (await fetch(`${service.baseUrl}/ready`)).status === 200
      const pid = await postmasterPid(dataDir).catch(() => firstPid)
      if (ready && pid !== firstPid) break
    }
    expect(service.output()).toContain("restarting it")
    const stored = await eventually(async () => {
      const all = (
        await Promise.all([0, 1, 2].map((user) => exportedMessages(service.baseUrl, `killed-${user}`)))
      ).flat()
      const questions = all.filter((m) => m.role === "user").map((m) => m.content)
      return answered.every((question) => questions.includes(question)) ? questions : undefined
    }, 20_000)
    expect(stored.length).toBe(answered.length)
    service.child.kill("SIGTERM")
    expect(await service.exited).toBe(0)
  }, 90_000)
})

describe("FAIL_OPEN=false", () => {
  it("answers 503 memory_unavailable while the database is frozen, and shutdown still completes", async () => {
    const { service, dataDir } = await start("strict", { FAIL_OPEN: "false", DATABASE_REQUEST_TIMEOUT_MS: "300" })
    await signalCluster(dataDir, "SIGSTOP")
    const reply = await chat(service.baseUrl, "strict-user", "strict hello")
    expect(reply.status).toBe(503)
    expect(JSON.parse(reply.text)).toMatchObject({ error: { code: "memory_unavailable", type: "server_error" } })
    expect(up.requests.some((request) => JSON.stringify(request.body).includes("strict hello"))).toBe(false)
    service.child.kill("SIGTERM")
    expect(await service.exited).toBe(0)
  }, 90_000)
})

describe("the embedded database that cannot come back", () => {
  it("makes the process exit non-zero, so an orchestrator restarts it", async () => {
    const { service, dataDir } = await start("lost")
    await signalCluster(dataDir, "SIGKILL")
    // Its data directory gone, PostgreSQL cannot start again.
    await rename(join(dataDir, "postgres"), join(dataDir, "postgres-moved"))
    expect(await service.exited).not.toBe(0)
    expect(service.output()).toContain("embedded PostgreSQL did not restart")
  }, 90_000)
})

describe("a stream still running when shutdown's drain ends", () => {
  it("ends with an SSE error event, and the process exits 0", async () => {
    const { service } = await start("draining", { SHUTDOWN_DRAIN_MS: "2000", UPSTREAM_IDLE_TIMEOUT_MS: "60000" })
    up.enqueue({ kind: "sse", frames: chunkFrames(["still ", "talking"]).slice(0, 2), then: "stall" })
    const response = await fetch(`${service.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-id": "drained" },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "tell me a long story" }] })
    })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = decoder.decode((await reader.read()).value)
    service.child.kill("SIGTERM")
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += decoder.decode(chunk.value)
    expect(text).toContain("still ")
    expect(text).toMatch(/event: error\ndata: .*"code":"server_shutting_down"/)
    expect(text).not.toContain("[DONE]")
    expect(await service.exited).toBe(0)
  }, 90_000)
})
