import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        // Pure logic and stages with test layers: no database, no server (`npm run test:unit`). The
        // files share one module evaluation per worker: nothing here keeps state between files.
        test: { name: "unit", include: ["test/unit/**/*.test.ts"], isolate: false }
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts", "plugins/**/*.test.ts"],
          // The console in a browser runs apart (`npm run test:browser`): it needs Chromium installed.
          exclude: ["test/unit/**", "test/browser/**", "**/node_modules/**"],
          // One embedded PostgreSQL for the whole run; each test file gets its own database.
          globalSetup: ["test/support/globalSetup.ts"],
          // Files share one module evaluation per worker (the gateway's module graph is loaded once,
          // not 80 times): each file builds its own gateways, databases and metric registries.
          isolate: false
        }
      }
    ]
  }
})
