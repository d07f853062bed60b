import { defineConfig } from "vitest/config"

/** The console in a real browser (`npm run test:browser`): Debian's Chromium driven by Playwright. */
export default defineConfig({
  test: {
    include: ["test/browser/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000
  }
})
