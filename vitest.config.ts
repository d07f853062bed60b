import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "plugins/**/*.test.ts"],
    // The console in a browser runs apart (`npm run test:browser`): it needs Chromium installed.
    exclude: ["test/browser/**", "**/node_modules/**"],
    // One embedded PostgreSQL for the whole run; each test file gets its own database.
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000
  }
})
