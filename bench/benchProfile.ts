/** The profile the request-path benchmarks load on every request: a summary, five traits, fifty memories. */
export const BENCH_USER = "bench-user"

/** The message the request-path benchmarks send (the same every time). */
/** The benchmarks' chat completion; `skipInjection`: the same request without memory (`service.skipInjection`). */
export const chatBody = (stream: boolean, options: { readonly skipInjection?: boolean } = {}) =>
  JSON.stringify({
    model: "bench-model",
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    ...(options.skipInjection === true ? { service: { skipInjection: true } } : {}),
    messages: [
      { role: "system", content: "You are a helpful cooking assistant." },
      { role: "user", content: "What should I cook tonight? Something quick with vegetables." }
    ]
  })

export const seedBenchProfile = async (baseUrl: string) => {
  const api = (path: string, method: string, body: unknown) =>
    fetch(`${baseUrl}${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  await api("/api/profiles", "POST", { externalId: BENCH_USER })
  await api(`/api/profiles/${BENCH_USER}`, "PATCH", {
    summary: "A data engineer from Lyon who cooks for two and prefers quick vegetarian meals."
  })
  for (const [key, value] of [
    ["name", "Camille"],
    ["expertise_level", "intermediate"],
    ["timezone", "Europe/Paris"],
    ["preferred_language", "English"],
    ["interests", ["cooking", "cycling", "jazz"]]
  ] as const) {
    await api(`/api/profiles/${BENCH_USER}/traits/${key}`, "PUT", { value })
  }
  for (let i = 0; i < 50; i++) {
    await api(`/api/profiles/${BENCH_USER}/memories`, "POST", {
      content: `Memory ${i}: the user mentioned ${["a trip to Kyoto", "a vegetable garden", "a new bike", "a jazz concert", "a cooking class"][i % 5]} and ${i % 3 === 0 ? "liked" : "disliked"} it`,
      type: (["fact", "preference", "event", "context"] as const)[i % 4],
      importance: (i % 10) / 10
    })
  }
}
