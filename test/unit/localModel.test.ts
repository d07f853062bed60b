import { describe, expect, it } from "vitest"
import { loadLocalModel } from "../../src/embedding/localModel.ts"

describe("the shipped embedding model", () => {
  it("runs on ONNX Runtime with the vectors TensorFlow.js's own graph executor gives", async () => {
    const [fast, reference] = await Promise.all([loadLocalModel(), loadLocalModel("tensorflow.js")])
    expect(fast.runtime).toBe("onnxruntime")
    expect(reference.runtime).toBe("tensorflow.js")
    const texts = [
      "User's dog Rex is a border collie.",
      "What should I cook for dinner tonight?",
      "",
      "a",
      "Ünïcödé ✓ 日本語のテキスト",
      // Longer than the model's 128 tokens.
      "Caroline: I went to a LGBTQ support group yesterday and it was so powerful. ".repeat(12)
    ]
    const [a, b] = await Promise.all([fast.embed(texts), reference.embed(texts)])
    expect(a.length).toBe(texts.length * 512)
    let largest = 0
    for (let i = 0; i < a.length; i++) largest = Math.max(largest, Math.abs(a[i]! - b[i]!))
    expect(largest).toBeLessThan(1e-5)
    // Different texts, different vectors.
    expect(Math.abs(a[0]! - a[512]!) + Math.abs(a[1]! - a[513]!)).toBeGreaterThan(0)
  }, 60_000)
})
