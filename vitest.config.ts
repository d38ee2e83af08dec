import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "apps/*/test/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["test/bench/**", "**/node_modules/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites share one PostgreSQL and Redis; each suite uses its own schema / key prefix.
    fileParallelism: true,
    pool: "forks"
  }
})
